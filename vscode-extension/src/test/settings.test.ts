import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  DEFAULTS,
  classifyChange,
  normalizeCodes,
  normalizeSeverity,
  readSettings,
  serverCommand,
  toInitializationOptions,
  toServerSettings,
} from '../settings';

const get = (values: Record<string, unknown>) => (key: string) => values[key];

test('defaults when nothing is set', () => {
  const s = readSettings(get({}));
  assert.deepEqual(s, {
    enable: true,
    interpreter: '',
    args: [],
    select: null,
    ignore: [],
    severity: {},
    runTimeout: 60,
    runMemoryLimitMb: 4096,
    runOnSave: false,
    codeLens: true,
    diagnosticMode: 'auto',
    baselinedFindings: 'hint',
    trace: 'off',
  });
  assert.equal(s.runTimeout, DEFAULTS.runTimeout);
});

test('VS Code settings → initializationOptions (the server contract)', () => {
  const s = readSettings(
    get({
      enable: true,
      interpreter: '/venv/bin/python',
      args: ['--log-level', 'debug'],
      select: ['GL001', 'gl004'],
      ignore: ['GL003'],
      severity: { GL001: 'warning', gl002: 'Hint', GL005: 'info' },
      'run.timeout': 12,
      'run.memoryLimit': 2048,
      'run.onSave': true,
      'codeLens.enable': false,
      diagnosticMode: 'workspace',
      baselinedFindings: 'hide',
      'trace.server': 'verbose',
    }),
  );
  const init = toInitializationOptions(s, '/venv/bin/python', true);
  assert.deepEqual(init, {
    settings: {
      select: ['GL001', 'GL004'],
      ignore: ['GL003'],
      severity: { GL001: 'warning', GL002: 'hint', GL005: 'information' },
      runTimeout: 12,
      runMemoryLimitMb: 2048,
      runOnSave: true,
      codeLens: false,
      diagnosticMode: 'workspace',
      baselinedFindings: 'hide',
      interpreter: '/venv/bin/python',
    },
    workspaceTrusted: true,
  });
  // JSON-serialisable, exactly these keys
  assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(init.settings))).sort(), [
    'baselinedFindings', 'codeLens', 'diagnosticMode', 'ignore', 'interpreter', 'runMemoryLimitMb', 'runOnSave',
    'runTimeout', 'select', 'severity',
  ]);
  assert.equal(readSettings(get({ baselinedFindings: 'sometimes' })).baselinedFindings, 'hint');
  assert.equal(toInitializationOptions(s, '/usr/bin/python3', false).workspaceTrusted, false);
});

test('select: null when unset, [] stays an explicit empty list', () => {
  assert.equal(readSettings(get({ select: null })).select, null);
  assert.equal(readSettings(get({ select: 'GL001' })).select, null);
  assert.deepEqual(readSettings(get({ select: [] })).select, []);
  assert.deepEqual(toServerSettings(readSettings(get({})), '').select, null);
});

test('invalid values fall back to defaults or are dropped', () => {
  const s = readSettings(
    get({
      enable: 'yes',
      args: ['ok', 3, '', '  x '],
      ignore: ['GL001', 'nonsense', 'GL001', 7],
      severity: { GL001: 'fatal', GL002: 3, bogus: 'error', GL003: 'ERROR' },
      'run.timeout': -1,
      'run.memoryLimit': 'lots',
      'trace.server': 'loud',
    }),
  );
  assert.equal(s.enable, true);
  assert.deepEqual(s.args, ['ok', 'x']);
  assert.deepEqual(s.ignore, ['GL001']);
  assert.deepEqual(s.severity, { GL003: 'error' });
  assert.equal(s.runTimeout, 60);
  assert.equal(s.runMemoryLimitMb, 4096);
  assert.equal(s.trace, 'off');
  assert.equal(readSettings(get({ 'run.timeout': '7.5' })).runTimeout, 7.5);
});

test('prefixes are valid codes', () => {
  assert.deepEqual(normalizeCodes(['GL', 'gl0', 'GL00', 'GL0001', 'X1']), ['GL', 'GL0', 'GL00']);
  assert.deepEqual(normalizeSeverity(['GL001']), {});
  assert.deepEqual(normalizeSeverity(null), {});
});

test('server command line: interpreter -m gradlint lsp ...args', () => {
  const s = readSettings(get({ args: ['--verbose'] }));
  assert.deepEqual(serverCommand('/p/python', s), { command: '/p/python', args: ['-m', 'gradlint', 'lsp', '--verbose'] });
});

test('setting changes: restart for the process, re-pull for the rest', () => {
  const only = (k: string) => (key: string) => key === k;
  assert.equal(classifyChange(only('interpreter')), 'restart');
  assert.equal(classifyChange(only('args')), 'restart');
  assert.equal(classifyChange(only('enable')), 'restart');
  assert.equal(classifyChange(only('select')), 'notify');
  assert.equal(classifyChange(only('run.timeout')), 'notify');
  assert.equal(classifyChange(only('severity')), 'notify');
  assert.equal(classifyChange(() => false), 'none');
});
