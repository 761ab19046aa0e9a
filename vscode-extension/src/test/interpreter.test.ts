import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { expandVariables, resolveInterpreter, which, InterpreterInputs } from '../interpreter';

const HOME = '/home/u';
const WS = '/ws/project';

function inputs(over: Partial<InterpreterInputs> = {}): InterpreterInputs & { calls: string[] } {
  const calls: string[] = [];
  return {
    setting: '',
    workspaceFolder: WS,
    workspaceTrusted: true,
    env: { PATH: '/usr/local/bin:/usr/bin', VENV: '/opt/venv' },
    homeDir: HOME,
    which: async (cmd) => {
      calls.push(`which:${cmd}`);
      return cmd === 'python3' ? '/usr/bin/python3' : cmd === 'python3.12' ? '/usr/local/bin/python3.12' : undefined;
    },
    ...over,
    calls,
  };
}

test('1. the gradlint.interpreter setting wins over the Python extension and PATH', async () => {
  let asked = false;
  const inp = inputs({
    setting: '/opt/py/bin/python',
    pythonExtension: async () => {
      asked = true;
      return '/ext/python';
    },
  });
  const r = await resolveInterpreter(inp);
  assert.deepEqual([r.path, r.source], ['/opt/py/bin/python', 'setting']);
  assert.equal(asked, false, 'the Python extension is not asked when the setting is set');
  assert.deepEqual(inp.calls, []);
});

test('2. without the setting, the Python extension\'s active environment is used', async () => {
  const r = await resolveInterpreter(inputs({ pythonExtension: async () => '/ws/project/.venv/bin/python' }));
  assert.deepEqual([r.path, r.source], ['/ws/project/.venv/bin/python', 'python-extension']);
});

test('3. without the setting and the Python extension: python3 on PATH', async () => {
  const r = await resolveInterpreter(inputs({ pythonExtension: undefined }));
  assert.deepEqual([r.path, r.source], ['/usr/bin/python3', 'path']);
});

test('the Python extension without an environment, or failing, falls back to PATH', async () => {
  let r = await resolveInterpreter(inputs({ pythonExtension: async () => undefined }));
  assert.deepEqual([r.path, r.source], ['/usr/bin/python3', 'path']);
  assert.match(r.notes.join(), /no active environment/);
  r = await resolveInterpreter(
    inputs({
      pythonExtension: async () => {
        throw new Error('boom');
      },
    }),
  );
  assert.deepEqual([r.path, r.source], ['/usr/bin/python3', 'path']);
  assert.match(r.notes.join(), /boom/);
});

test('nothing found: path undefined, with a note', async () => {
  const r = await resolveInterpreter(inputs({ which: async () => undefined }));
  assert.equal(r.path, undefined);
  assert.equal(r.source, 'path');
  assert.match(r.notes.join(), /python3 is not on PATH/);
});

test('an empty or blank setting counts as unset', async () => {
  const r = await resolveInterpreter(inputs({ setting: '   ', pythonExtension: async () => '/ext/python' }));
  assert.equal(r.source, 'python-extension');
});

test('setting: variables, ~, relative paths and bare commands', async () => {
  assert.equal((await resolveInterpreter(inputs({ setting: '${workspaceFolder}/.venv/bin/python' }))).path, `${WS}/.venv/bin/python`);
  assert.equal((await resolveInterpreter(inputs({ setting: '~/venvs/t/bin/python' }))).path, `${HOME}/venvs/t/bin/python`);
  assert.equal((await resolveInterpreter(inputs({ setting: '${env:VENV}/bin/python' }))).path, '/opt/venv/bin/python');
  assert.equal((await resolveInterpreter(inputs({ setting: '.venv/bin/python' }))).path, path.resolve(WS, '.venv/bin/python'));
  assert.equal((await resolveInterpreter(inputs({ setting: 'python3.12' }))).path, '/usr/local/bin/python3.12');
  // a bare command that is not on PATH is kept as is (the import check reports it)
  assert.equal((await resolveInterpreter(inputs({ setting: 'python9' }))).path, 'python9');
});

test('untrusted: settings pointing into the workspace and the Python extension are skipped', async () => {
  let asked = false;
  const ext = async () => {
    asked = true;
    return '/ws/project/.venv/bin/python';
  };
  let r = await resolveInterpreter(inputs({ workspaceTrusted: false, setting: '${workspaceFolder}/.venv/bin/python', pythonExtension: ext }));
  assert.deepEqual([r.path, r.source], ['/usr/bin/python3', 'path']);
  assert.equal(asked, false, 'the Python extension is not asked in an untrusted workspace');
  assert.match(r.notes.join('\n'), /untrusted/);
  r = await resolveInterpreter(inputs({ workspaceTrusted: false, setting: '.venv/bin/python' }));
  assert.deepEqual([r.path, r.source], ['/usr/bin/python3', 'path']);
  // an absolute path from the user's own settings is fine
  r = await resolveInterpreter(inputs({ workspaceTrusted: false, setting: '/opt/py/bin/python', pythonExtension: ext }));
  assert.deepEqual([r.path, r.source], ['/opt/py/bin/python', 'setting']);
});

test('expandVariables leaves unknown variables and handles missing env', () => {
  const v = expandVariables('${env:NOPE}/x/${userHome}', { env: {}, homeDir: HOME, workspaceFolder: undefined });
  assert.equal(v, `/x/${HOME}`);
  assert.equal(expandVariables('${workspaceFolder}/p', { env: {}, homeDir: HOME }), '${workspaceFolder}/p');
});

test('which scans PATH in order and skips empty entries', async () => {
  const exe = new Set(['/b/python3', '/c/python3']);
  const found = await which('python3', { PATH: '::/a:/b:/c' }, async (f) => exe.has(f), 'linux');
  assert.equal(found, '/b/python3');
  assert.equal(await which('python3', { PATH: '/a' }, async (f) => exe.has(f), 'linux'), undefined);
  assert.equal(await which('/c/python3', {}, async (f) => exe.has(f), 'linux'), '/c/python3');
  const win = await which('python', { PATH: 'C:\\Py;D:\\x', PATHEXT: '.EXE' }, async (f) => f === path.join('C:\\Py', 'python.EXE'), 'win32');
  assert.equal(win, path.join('C:\\Py', 'python.EXE'));
});
