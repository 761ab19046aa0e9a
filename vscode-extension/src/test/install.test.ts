import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  PUBLISHED_ON_PYPI,
  DISTRIBUTION,
  PROBE_SCRIPT,
  Probe,
  RemedyContext,
  assess,
  bundledWheelName,
  compatible,
  ignoredWorkspaceInterpreter,
  parseProbe,
  remedy,
  serverFailed,
  shellLine,
} from '../install';
import { parseJsonc, settingInJsonc } from '../settings';

const VERSION = '0.1.0';
const PY = '/home/u/venv/bin/python';

function probe(over: Partial<Probe> = {}): Probe {
  return {
    python: '3.11.2',
    executable: PY,
    inVenv: true,
    externallyManaged: false,
    pip: true,
    version: null,
    providers: [],
    moduleFile: null,
    moduleVersion: null,
    importError: "ModuleNotFoundError: No module named 'gradlint'",
    ...over,
  };
}

const OURS = probe({
  version: VERSION,
  providers: ['torch-gradlint'],
  moduleFile: '/home/u/venv/lib/python3.11/site-packages/gradlint/__init__.py',
  moduleVersion: VERSION,
  importError: null,
});

function ctx(over: Partial<RemedyContext> = {}): RemedyContext {
  return {
    interpreter: PY,
    source: { version: VERSION, wheel: `/ext/server/${bundledWheelName(VERSION)}` },
    venvDir: '/home/u/.config/Code/User/globalStorage/gradlint.gradlint/venv',
    platform: 'linux',
    ...over,
  };
}

test('our distribution, our version: ok', () => {
  assert.deepEqual(assess(OURS, VERSION), { kind: 'ok', version: VERSION });
  assert.equal(remedy(assess(OURS, VERSION), ctx({ probe: OURS })), undefined);
});

test('nothing installed: install the bundled wheel', () => {
  const state = assess(probe(), VERSION);
  assert.deepEqual(state, { kind: 'not-installed' });
  const fix = remedy(state, ctx({ probe: probe() }))!;
  assert.equal(fix.status, 'not installed');
  assert.match(fix.message, /torch-gradlint \(the gradlint language server\) is not installed in \/home\/u\/venv\/bin\/python/);
  assert.deepEqual(fix.action, {
    label: 'Install torch-gradlint',
    steps: [[PY, '-m', 'pip', 'install', '/ext/server/torch_gradlint-0.1.0-py3-none-any.whl']],
  });
});

test('no bundled wheel: the release of the extension\'s version, from its git tag until it is on PyPI', () => {
  const fix = remedy({ kind: 'not-installed' }, ctx({ source: { version: VERSION } }))!;
  assert.equal(PUBLISHED_ON_PYPI, false);
  assert.deepEqual(fix.action!.steps, [[PY, '-m', 'pip', 'install', 'torch-gradlint @ git+https://github.com/gradlint/gradlint@v0.1.0']]);
  // the message gives a command that works as typed (quoted: the requirement has spaces)
  assert.match(fix.message, /`\/home\/u\/venv\/bin\/python -m pip install "torch-gradlint @ git\+https:\/\/github.com\/gradlint\/gradlint@v0\.1\.0"`/);
  assert.ok(!/pip install torch-gradlint[`\s]/.test(fix.message));
});

test('the unrelated PyPI "gradlint" is not us: uninstall it, then install ours', () => {
  const foreign = probe({
    providers: ['gradlint'],
    moduleFile: '/home/u/venv/lib/python3.11/site-packages/gradlint/__init__.py',
    moduleVersion: '1.1.7',
    importError: null,
  });
  const state = assess(foreign, VERSION);
  assert.deepEqual(state, { kind: 'foreign', others: ['gradlint'], moduleFile: foreign.moduleFile });
  const fix = remedy(state, ctx({ probe: foreign }))!;
  assert.equal(fix.status, 'wrong gradlint');
  assert.match(fix.message, /another project \(distribution "gradlint"\)/);
  assert.match(fix.message, /pip uninstall gradlint`/);
  assert.deepEqual(fix.action!.steps, [
    [PY, '-m', 'pip', 'uninstall', '-y', 'gradlint'],
    [PY, '-m', 'pip', 'install', '/ext/server/torch_gradlint-0.1.0-py3-none-any.whl'],
  ]);
  // both installed (their files overwrite each other): remove both, reinstall ours
  const both = { ...foreign, version: VERSION, providers: ['gradlint', 'torch-gradlint'] };
  assert.deepEqual(remedy(assess(both, VERSION), ctx({ probe: both }))!.action!.steps[0],
    [PY, '-m', 'pip', 'uninstall', '-y', 'gradlint', 'torch-gradlint']);
});

test('a gradlint module from no distribution (a stray folder on the path) is not us', () => {
  const stray = probe({ moduleFile: '/ws/gradlint/__init__.py', moduleVersion: VERSION, importError: null });
  const state = assess(stray, VERSION);
  assert.deepEqual(state, { kind: 'foreign', others: [], moduleFile: '/ws/gradlint/__init__.py' });
  assert.match(remedy(state, ctx({ probe: stray }))!.message, /imports `gradlint` from \/ws\/gradlint\/__init__.py, which is not the torch-gradlint package/);
});

test('an old torch-gradlint: install the extension\'s version', () => {
  const old = { ...OURS, version: '0.0.9', moduleVersion: '0.0.9' };
  const state = assess(old, VERSION);
  assert.deepEqual(state, { kind: 'incompatible', version: '0.0.9' });
  const fix = remedy(state, ctx({ probe: old }))!;
  assert.equal(fix.status, 'torch-gradlint 0.0.9');
  assert.match(fix.message, /has torch-gradlint 0\.0\.9; this extension \(0\.1\.0\) needs torch-gradlint 0\.1\.x/);
  assert.equal(fix.action!.label, 'Install torch-gradlint 0.1.0');
});

test('compatible versions share MAJOR.MINOR', () => {
  assert.ok(compatible('0.1.0', '0.1.0'));
  assert.ok(compatible('0.1.3', '0.1.0'));
  assert.ok(compatible('0.1.0.dev1', '0.1.0'));
  assert.ok(!compatible('0.2.0', '0.1.0'));
  assert.ok(!compatible('1.1.0', '0.1.0'));
  assert.ok(!compatible('unknown', '0.1.0'));
});

test('a broken install: reinstall (files, then dependencies)', () => {
  const missingDep = { ...OURS, importError: "ModuleNotFoundError: No module named 'pygls'" };
  const state = assess(missingDep, VERSION);
  assert.equal(state.kind, 'broken');
  const fix = remedy(state, ctx({ probe: missingDep }))!;
  assert.equal(fix.status, 'broken install');
  assert.match(fix.message, /No module named 'pygls'/);
  assert.deepEqual(fix.action!.steps, [
    [PY, '-m', 'pip', 'install', '--force-reinstall', '--no-deps', '/ext/server/torch_gradlint-0.1.0-py3-none-any.whl'],
    [PY, '-m', 'pip', 'install', '/ext/server/torch_gradlint-0.1.0-py3-none-any.whl'],
  ]);
  const stale = { ...OURS, moduleVersion: '0.0.9' };
  assert.match(remedy(assess(stale, VERSION), ctx({ probe: stale }))!.message, /files are version 0\.0\.9, its metadata 0\.1\.0/);
  const noAnswer = serverFailed(ctx({ probe: OURS }), VERSION, 'Pending response rejected since connection got disposed');
  assert.match(noAnswer.message, /`\/home\/u\/venv\/bin\/python -m gradlint lsp` did not answer initialize/);
  assert.equal(noAnswer.action!.label, 'Reinstall torch-gradlint');
});

test('a system Python (PEP 668) or one without pip: install into a new venv', () => {
  const system = probe({ executable: '/usr/bin/python3', inVenv: false, externallyManaged: true });
  const c = ctx({ interpreter: '/usr/bin/python3', probe: system });
  const fix = remedy(assess(system, VERSION), c)!;
  assert.equal(fix.status, 'not installed');
  assert.match(fix.message, /not installed in \/usr\/bin\/python3, a Python managed by your system/);
  assert.deepEqual(fix.action, {
    label: 'Install in a new venv',
    steps: [
      ['/usr/bin/python3', '-m', 'venv', c.venvDir],
      [`${c.venvDir}/bin/python`, '-m', 'pip', 'install', '/ext/server/torch_gradlint-0.1.0-py3-none-any.whl'],
    ],
    newInterpreter: `${c.venvDir}/bin/python`,
  });
  const noPip = probe({ inVenv: false, pip: false });
  assert.equal(remedy(assess(noPip, VERSION), ctx({ probe: noPip }))!.action!.label, 'Install in a new venv');
  // a venv whose base is a system Python is fine
  const venv = probe({ inVenv: true, externallyManaged: true });
  assert.equal(remedy(assess(venv, VERSION), ctx({ probe: venv }))!.action!.label, 'Install torch-gradlint');
});

test('Python older than 3.10: no install, choose another interpreter', () => {
  const old = probe({ python: '3.8.10' });
  const fix = remedy(assess(old, VERSION), ctx({ probe: old }))!;
  assert.equal(fix.action, undefined);
  assert.match(fix.message, /is Python 3\.8\.10; the gradlint language server needs Python 3\.10 or newer/);
});

test('Restricted Mode: the workspace interpreter is ignored, and the message says how to set one', () => {
  const text = ignoredWorkspaceInterpreter('${workspaceFolder}/.venv/bin/python', '/usr/bin/python3');
  assert.match(text, /sets gradlint.interpreter to "\$\{workspaceFolder\}\/.venv\/bin\/python", which is ignored until you trust the workspace/);
  assert.match(text, /set gradlint.interpreter in your User settings/);
  assert.doesNotMatch(text, /not installed/);
});

test('shell lines quote paths and stop at the first failing step', () => {
  const steps = [['/a b/python', '-m', 'pip', 'uninstall', '-y', 'gradlint'], ['/a b/python', '-m', 'pip', 'install', "/x/it's.whl"]];
  assert.equal(shellLine(steps, 'linux'),
    `'/a b/python' -m pip uninstall -y gradlint && '/a b/python' -m pip install '/x/it'\\''s.whl' && exit`);
  assert.equal(shellLine(steps, 'win32'),
    `& '/a b/python' -m pip uninstall -y gradlint; if ($?) { & '/a b/python' -m pip install '/x/it''s.whl'; if ($?) { exit } }`);
});

test('settings.json with comments and trailing commas', () => {
  const text = '{\n  // the venv\n  "gradlint.interpreter": "/p/python", /* c */\n  "x": "a//b,}",\n}\n';
  assert.deepEqual(parseJsonc(text), { 'gradlint.interpreter': '/p/python', x: 'a//b,}' });
  assert.equal(settingInJsonc(text, 'interpreter'), '/p/python');
  assert.equal(settingInJsonc('{"gradlint": {"interpreter": "py"}}', 'interpreter'), 'py');
  assert.equal(settingInJsonc('not json', 'interpreter'), undefined);
});

test('the probe script runs in a real Python and reports what it finds', () => {
  let out: string;
  try {
    out = execFileSync('python3', ['-c', PROBE_SCRIPT], { encoding: 'utf8', cwd: '/' });
  } catch {
    return; // no python3 here: nothing to run it with
  }
  const p = parseProbe(out);
  assert.ok(p, out);
  assert.match(p.python, /^3\.\d+\.\d+$/);
  assert.equal(typeof p.pip, 'boolean');
  assert.ok(Array.isArray(p.providers));
});

test('the extension and the Python package have one version and one distribution name', () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const init = readFileSync(join(__dirname, '..', '..', '..', 'gradlint', '__init__.py'), 'utf8');
  const pyproject = readFileSync(join(__dirname, '..', '..', '..', 'pyproject.toml'), 'utf8');
  assert.equal(/__version__ = "([^"]+)"/.exec(init)?.[1], manifest.version);
  assert.equal(/^name = "([^"]+)"/m.exec(pyproject)?.[1], DISTRIBUTION);
});
