// package.json (the extension manifest) agrees with the code and the brief.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_KEYS, DEFAULTS } from '../settings';
import { CLIENT_COMMANDS } from '../protocol';

const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));

test('every setting is contributed, described, with the documented default', () => {
  const props = manifest.contributes.configuration.properties;
  assert.deepEqual(Object.keys(props).sort(), ALL_KEYS.map((k) => `gradlint.${k}`).sort());
  for (const [key, value] of Object.entries<any>(props)) {
    assert.ok(value.description || value.markdownDescription, `${key} has a description`);
  }
  assert.equal(props['gradlint.enable'].default, DEFAULTS.enable);
  assert.equal(props['gradlint.interpreter'].default, '');
  assert.equal(props['gradlint.run.timeout'].default, null); // derived, as `gradlint run` and the server do
  assert.equal(props['gradlint.run.compile'].default, DEFAULTS.runCompile);
  assert.deepEqual(props['gradlint.run.compile'].enum, ['project', 'off', 'all', 'aot_eager', 'inductor']);
  assert.equal(props['gradlint.run.dtype'].default, DEFAULTS.runDtype);
  assert.deepEqual(props['gradlint.run.dtype'].enum, ['project', 'none', 'bfloat16', 'float16', 'float32']);
  assert.equal(props['gradlint.run.precisionFactor'].default, null);
  assert.equal(props['gradlint.run.memoryLimit'].default, 4096);
  assert.equal(props['gradlint.run.onSave'].default, false);
  assert.equal(props['gradlint.codeLens.enable'].default, true);
  assert.deepEqual(props['gradlint.trace.server'].enum, ['off', 'messages', 'verbose']);
  assert.deepEqual(props['gradlint.severity'].patternProperties['^GL[0-9]+$'].enum, ['error', 'warning', 'information', 'hint']);
});

test('commands and titles', () => {
  const cmds = Object.fromEntries(manifest.contributes.commands.map((c: any) => [c.command, `${c.category}: ${c.title}`]));
  assert.deepEqual(cmds, {
    [CLIENT_COMMANDS.runAtCursor]: 'gradlint: Run gradcheck at Cursor',
    [CLIENT_COMMANDS.runInFile]: 'gradlint: Run gradcheck on All Targets in File',
    [CLIENT_COMMANDS.showOutput]: 'gradlint: Show Output',
    [CLIENT_COMMANDS.showLastReport]: 'gradlint: Show Last gradcheck Report',
    [CLIENT_COMMANDS.restartServer]: 'gradlint: Restart Server',
  });
});

test('activation, engine, workspace trust, no hard dependency on the Python extension', () => {
  assert.equal(manifest.publisher, 'gradlint');
  assert.equal(manifest.name, 'gradlint');
  assert.equal(manifest.engines.vscode, '^1.82.0');
  assert.deepEqual(manifest.activationEvents, [
    'onLanguage:python', 'onNotebook:jupyter-notebook', 'workspaceContains:**/*.py', 'workspaceContains:**/*.ipynb',
  ]);
  assert.equal(manifest.main, './dist/extension.js');
  assert.equal(manifest.extensionDependencies, undefined);
  const trust = manifest.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, 'limited');
  assert.deepEqual(trust.restrictedConfigurations, ['gradlint.interpreter', 'gradlint.args']);
  assert.ok(trust.description.length > 20);
  assert.match(manifest.dependencies['vscode-languageclient'], /^9\./);
});
