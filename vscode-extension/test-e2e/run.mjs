#!/usr/bin/env node
// End-to-end tests of the gradlint extension in a real VS Code: code-server 4.100.3 (VS Code
// 1.100.3) driven through headless Debian Chromium by playwright-core. Install the prerequisites
// first with test-e2e/install.sh.
//
//   npm run test:e2e [-- SCENARIO ...] [--update-screenshot] [--keep] [--headed]
//
// Each scenario gets a fresh user-data-dir, a fresh browser profile and a throwaway copy of
// test-e2e/workspace/; the packaged .vsix is installed once per run into a fresh extensions dir.
// Scenarios that need the language server are skipped (and listed as such) when
// `python -m gradlint lsp` does not advertise what they need; set GRADLINT_E2E_REQUIRE_SERVER=1 to
// make that a failure instead (CI).
//
// Environment:
//   GRADLINT_E2E_CACHE     where install.sh put code-server (default ~/.cache/gradlint-e2e)
//   GRADLINT_E2E_PYTHON    interpreter with gradlint (+ torch) installed (default <repo>/.venv/bin/python)
//   GRADLINT_E2E_ARTIFACTS screenshots and logs (default test-e2e/artifacts)
//   CHROMIUM               browser binary (default /usr/bin/chromium)
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXT_DIR = path.resolve(HERE, '..');
const REPO = path.resolve(EXT_DIR, '..');
const require = createRequire(import.meta.url);
const pkg = JSON.parse(fs.readFileSync(path.join(EXT_DIR, 'package.json'), 'utf8'));

const CODE_SERVER_VERSION = '4.100.3';
const CACHE = process.env.GRADLINT_E2E_CACHE || path.join(os.homedir(), '.cache', 'gradlint-e2e');
const CODE_SERVER = process.env.CODE_SERVER || path.join(CACHE, `code-server-${CODE_SERVER_VERSION}`, 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const PYTHON = process.env.GRADLINT_E2E_PYTHON || path.join(REPO, '.venv', 'bin', 'python');
const ARTIFACTS = path.resolve(process.env.GRADLINT_E2E_ARTIFACTS || path.join(HERE, 'artifacts'));
const REQUIRE_SERVER = process.env.GRADLINT_E2E_REQUIRE_SERVER === '1';
const VSIX = path.join(EXT_DIR, `gradlint-${pkg.version}.vsix`);

const argv = process.argv.slice(2);
const flags = new Set(argv.filter((a) => a.startsWith('--')));
const only = argv.filter((a) => !a.startsWith('--'));
const KEEP = flags.has('--keep');
const HEADED = flags.has('--headed');
const UPDATE_SCREENSHOT = flags.has('--update-screenshot');

const log = (...a) => console.log(`[e2e ${new Date().toISOString().slice(11, 19)}]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- prerequisites ----------------------------------------------------------------------------
function fail(message) {
  console.error(`e2e: ${message}`);
  process.exit(2);
}
if (!fs.existsSync(CODE_SERVER)) fail(`code-server not found at ${CODE_SERVER}; run test-e2e/install.sh`);
if (!fs.existsSync(CHROMIUM)) fail(`chromium not found at ${CHROMIUM}; run test-e2e/install.sh`);
if (!fs.existsSync(PYTHON)) fail(`python not found at ${PYTHON}; set GRADLINT_E2E_PYTHON`);
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch {
  fail('playwright-core is missing; run `npm ci` in vscode-extension/');
}

function newestMtime(p) {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...fs.readdirSync(p).map((f) => newestMtime(path.join(p, f))));
}

const WHEEL = path.join(EXT_DIR, 'server', `torch_gradlint-${pkg.version}-py3-none-any.whl`);

/** The torch-gradlint wheel the .vsix bundles (`make wheel` builds it too). */
function ensureWheel() {
  const sources = [path.join(REPO, 'gradlint'), path.join(REPO, 'pyproject.toml')];
  if (fs.existsSync(WHEEL) && Math.max(...sources.map(newestMtime)) <= fs.statSync(WHEEL).mtimeMs) return;
  log(`building ${path.relative(REPO, WHEEL)}`);
  fs.rmSync(path.dirname(WHEEL), { recursive: true, force: true });
  const r = spawnSync(PYTHON, ['-m', 'pip', 'wheel', '--quiet', '--no-deps', '--no-build-isolation', '--wheel-dir', path.dirname(WHEEL), REPO],
    { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const leftover of ['build', 'torch_gradlint.egg-info']) fs.rmSync(path.join(REPO, leftover), { recursive: true, force: true });
  if (r.status !== 0 || !fs.existsSync(WHEEL)) fail(`could not build ${WHEEL}`);
}

function ensureVsix() {
  ensureWheel();
  const inputs = ['src', 'package.json', 'README.md', 'images', 'server'].map((p) => path.join(EXT_DIR, p));
  const stale = !fs.existsSync(VSIX) || Math.max(...inputs.map(newestMtime)) > fs.statSync(VSIX).mtimeMs;
  if (stale || flags.has('--package')) {
    log(`packaging ${path.basename(VSIX)} (npm run package)`);
    const r = spawnSync('npm', ['run', '--silent', 'package'], { cwd: EXT_DIR, stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) fail('npm run package failed');
  }
}

// ---- what the language server offers -----------------------------------------------------------
/** Starts `python -m gradlint lsp`, sends initialize, returns the capabilities (or an error). */
function probeServer() {
  return new Promise((resolve) => {
    const proc = spawn(PYTHON, ['-m', 'gradlint', 'lsp'], { cwd: os.tmpdir(), stdio: ['pipe', 'pipe', 'pipe'] });
    let buf = Buffer.alloc(0);
    let stderr = '';
    const done = (result) => {
      clearTimeout(timer);
      try {
        proc.kill('SIGKILL');
      } catch {}
      resolve(result);
    };
    // a safety net against a hang, not a measurement: on a loaded machine a cold start (a fresh
    // bytecode cache, libcst and pygls imported) can take well over 20 s
    const timer = setTimeout(() => done({ error: `no initialize response in 300 s. stderr: ${stderr.slice(-500)}` }), 300000);
    proc.on('error', (e) => done({ error: e.message }));
    proc.on('exit', (code) => done({ error: `exited with ${code}: ${stderr.slice(-500)}` }));
    proc.stderr.on('data', (d) => (stderr += d));
    proc.stdout.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const sep = buf.indexOf('\r\n\r\n');
        if (sep < 0) return;
        const m = /Content-Length: (\d+)/i.exec(buf.slice(0, sep).toString());
        const len = m ? Number(m[1]) : 0;
        if (buf.length < sep + 4 + len) return;
        const msg = JSON.parse(buf.slice(sep + 4, sep + 4 + len).toString());
        buf = buf.slice(sep + 4 + len);
        if (msg.id === 1) {
          done(msg.result ? { capabilities: msg.result.capabilities } : { error: JSON.stringify(msg.error) });
          return;
        }
      }
    });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        processId: process.pid,
        rootUri: null,
        capabilities: {
          workspace: { configuration: true },
          window: { workDoneProgress: true },
          notebookDocument: { synchronization: { dynamicRegistration: true } },
        },
        initializationOptions: { settings: {}, workspaceTrusted: false },
      },
    });
    proc.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
}

function serverFeatures(probe) {
  const caps = probe.capabilities;
  if (!caps) return new Set();
  const features = new Set(['server']);
  if (caps.codeActionProvider) features.add('codeActions');
  const commands = caps.executeCommandProvider?.commands ?? [];
  if (caps.codeLensProvider && commands.includes('gradlint.runGradcheck')) features.add('gradcheck');
  if (caps.notebookDocumentSync) features.add('notebooks');
  return features;
}

// ---- code-server + chromium -------------------------------------------------------------------
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

function copyDir(src, dst) {
  fs.cpSync(src, dst, { recursive: true });
}

function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

const BASE_USER_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'chat.disableAIFeatures': true,
  'workbench.colorTheme': 'Default Dark Modern',
  'editor.minimap.enabled': false,
  'editor.fontSize': 15,
  'window.commandCenter': false,
  'files.autoSave': 'off',
  'git.enabled': false,
  'security.workspace.trust.enabled': false,
};

let extensionsDir;

async function installExtension(runDir) {
  extensionsDir = path.join(runDir, 'extensions');
  const cfg = path.join(runDir, 'install-config.yaml');
  fs.writeFileSync(cfg, 'auth: none\ncert: false\n');
  const t0 = Date.now();
  const r = spawnSync(
    CODE_SERVER,
    ['--config', cfg, '--user-data-dir', path.join(runDir, 'install-user-data'), '--extensions-dir', extensionsDir, '--install-extension', VSIX],
    { encoding: 'utf8' },
  );
  if (r.status !== 0 || !/successfully installed/i.test(r.stdout + r.stderr)) {
    throw new Error(`--install-extension failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  const installed = fs.readdirSync(extensionsDir).filter((d) => d.startsWith('gradlint.gradlint-'));
  if (installed.length !== 1) throw new Error(`extension not in ${extensionsDir}: ${fs.readdirSync(extensionsDir)}`);
  log(`installed ${path.basename(VSIX)} → ${installed[0]} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

function findFiles(dir, pattern, out = []) {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) findFiles(p, pattern, out);
    else if (pattern.test(e.name)) out.push(p);
  }
  return out;
}

/** The "gradlint" output channel and the extension host log of a scenario, for failures. */
function collectLogs(userData) {
  const files = [
    ...findFiles(path.join(userData, 'logs'), /gradlint\.log$/),
    ...findFiles(path.join(userData, 'logs'), /^exthost\.log$/),
  ];
  return files.map((f) => `----- ${path.relative(userData, f)}\n${fs.readFileSync(f, 'utf8').slice(-6000)}`).join('\n');
}

async function withVSCode(name, options, body) {
  const dir = path.join(ARTIFACTS, 'runs', name);
  fs.rmSync(dir, { recursive: true, force: true });
  const userData = path.join(dir, 'user-data');
  const ws = path.join(dir, 'workspace');
  const profile = path.join(dir, 'browser-profile');
  copyDir(path.join(HERE, 'workspace'), ws);
  writeJson(path.join(ws, '.vscode', 'settings.json'), options.workspaceSettings ?? { 'gradlint.interpreter': PYTHON });
  writeJson(path.join(userData, 'User', 'settings.json'), { ...BASE_USER_SETTINGS, ...(options.userSettings ?? {}) });
  options.prepare?.(ws);
  const port = await freePort();
  const cfg = path.join(dir, 'config.yaml');
  fs.writeFileSync(cfg, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  const csLog = fs.openSync(path.join(dir, 'code-server.log'), 'w');
  const cs = spawn(
    CODE_SERVER,
    [
      '--config', cfg,
      '--user-data-dir', userData,
      '--extensions-dir', extensionsDir,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-getting-started-override',
      ws,
    ],
    { detached: true, stdio: ['ignore', csLog, csLog], env: { ...process.env, GRADLINT_E2E: '1', ...(options.env?.(dir) ?? {}) } },
  );
  let context;
  const killGroup = async () => {
    for (const sig of ['SIGTERM', 'SIGKILL']) {
      try {
        process.kill(-cs.pid, sig);
      } catch {
        return;
      }
      await sleep(sig === 'SIGTERM' ? 1000 : 0);
    }
  };
  const t0 = Date.now();
  try {
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      try {
        const r = await fetch(`${url}/healthz`);
        if (r.ok) break;
      } catch {}
      if (i > 300) throw new Error('code-server did not answer /healthz in 30 s');
      await sleep(100);
    }
    log(`  code-server up: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: !HEADED,
      viewport: { width: 1400, height: 860 },
      args: [
        '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
      ],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${url}/?folder=${encodeURIComponent(ws)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    log(`  workbench loaded: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const vs = new Workbench(page, dir, name, userData);
    await body(vs, { ws, userData });
    await vs.screenshot(name);
    // Any exception in the server (pygls logs it with a traceback to stderr → the output channel)
    // is a bug even when the scenario's visible behaviour was right.
    await sleep(500);
    const tb = /Traceback \(most recent call last\)[\s\S]*?\n(\w+(Error|Exception)[^\n]*)/.exec(vs.outputChannel());
    if (tb) throw new Error(`the language server logged an exception: ${tb[1]}`);
    const serverError = (await vs.notifications()).find((t) => /Error in server/.test(t));
    if (serverError) throw new Error(`the language server reported: ${serverError}`);
    return (Date.now() - t0) / 1000;
  } catch (err) {
    try {
      const pages = context?.pages() ?? [];
      if (pages[0]) await pages[0].screenshot({ path: path.join(ARTIFACTS, `FAILED-${name}.png`) });
    } catch {}
    err.logs = collectLogs(userData);
    throw err;
  } finally {
    await context?.close().catch(() => {});
    await killGroup();
    fs.closeSync(csLog);
    if (!KEEP) {
      fs.rmSync(profile, { recursive: true, force: true });
    }
  }
}

// ---- driving the workbench --------------------------------------------------------------------
class Workbench {
  constructor(page, dir, name, userData) {
    this.page = page;
    this.userData = userData;
    this.dir = dir;
    this.name = name;
  }

  async screenshot(name) {
    const file = path.join(ARTIFACTS, `${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  async waitFor(fn, what, timeout = 180000, interval = 250) {
    const end = Date.now() + timeout;
    let last;
    while (Date.now() < end) {
      try {
        last = await fn();
        if (last) return last;
      } catch (e) {
        last = e;
      }
      await sleep(interval);
    }
    throw new Error(`timed out after ${timeout / 1000} s waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
  }

  async focusWorkbench() {
    await this.page.locator('.monaco-workbench').first().click({ position: { x: 700, y: 5 } }).catch(() => {});
  }

  async quickInput(keys, text) {
    // A focused webview (e.g. the Markdown preview) swallows the workbench's shortcuts.
    if (await this.page.evaluate(() => document.activeElement?.tagName === 'IFRAME')) {
      await this.page.locator('.monaco-editor .view-lines >> visible=true').first().click();
    }
    await this.page.keyboard.press(keys);
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 10000 });
    await input.fill(text);
    return input;
  }

  async openFile(file) {
    const tab = this.page.locator(`.tabs-container .tab[aria-label^="${file}"]`).first();
    if (await tab.count()) {
      // (keyboard focus may be inside a webview, which swallows Ctrl+P)
      await tab.click();
      await this.page.locator('.monaco-editor .view-lines >> visible=true').first().waitFor();
      return;
    }
    await this.quickInput('Control+P', file);
    const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: file }).first();
    await row.waitFor({ timeout: 15000 });
    await this.page.keyboard.press('Enter');
    await this.page.locator(`.tabs-container .tab[aria-label^="${file}"]`).first().waitFor({ timeout: 15000 });
    await this.page.locator('.monaco-editor .view-lines >> visible=true').first().waitFor();
  }

  /** Runs a command from the palette by (part of) its title; returns the row texts seen. */
  async command(title, { expectMissing = false } = {}) {
    await this.quickInput('F1', `>${title}`);
    const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    if (expectMissing) return row;
    await row.waitFor({ timeout: 15000 });
    await this.page.keyboard.press('Enter');
  }

  async paletteEntries(prefix) {
    await this.quickInput('F1', `>${prefix}`);
    await this.page.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout: 15000 });
    await sleep(500);
    const rows = await this.page.locator('.quick-input-list .monaco-list-row .quick-input-list-label').allInnerTexts();
    await this.page.keyboard.press('Escape');
    return rows.map((r) => r.trim().split('\n')[0]);
  }

  async goTo(line, column) {
    await this.quickInput('Control+G', `:${line}:${column}`);
    await this.page.keyboard.press('Enter');
    await sleep(300);
  }

  async editorText() {
    // The model text, not the rendered lines (which may be virtualised).
    return this.page.evaluate(() => {
      const lines = [...document.querySelectorAll('.monaco-editor .view-lines .view-line')];
      return lines
        .map((l) => ({ top: parseFloat(l.style.top), text: l.textContent.replace(/\u00a0/g, ' ') }))
        .sort((a, b) => a.top - b.top)
        .map((l) => l.text)
        .join('\n');
    });
  }

  squiggles(kind = 'error') {
    return this.page.locator(`.monaco-editor .squiggly-${kind}`);
  }

  async notifications() {
    return this.page.locator('.notification-toast .notification-list-item-message').allInnerTexts();
  }

  async waitForNotification(re, timeout = 180000) {
    return this.waitFor(async () => (await this.notifications()).find((t) => re.test(t)), `a notification matching ${re}`, timeout);
  }

  async statusItem(re) {
    const texts = await this.page.locator('.statusbar-item').allInnerTexts();
    return texts.find((t) => re.test(t));
  }

  async problems() {
    const panelOpen = await this.page.locator('.markers-panel').isVisible().catch(() => false);
    if (!panelOpen) {
      await this.page.keyboard.press('Control+Shift+M');
      await this.page.locator('.markers-panel').waitFor({ timeout: 10000 });
    }
    return this.page.locator('.markers-panel .monaco-list-row').allInnerTexts();
  }

  /** Text inside a webview (the Markdown preview renders in nested iframes). */
  async waitForWebviewText(re, timeout = 180000) {
    return this.waitFor(async () => {
      for (const frame of this.page.frames().filter((f) => f !== this.page.mainFrame())) {
        const text = await frame.evaluate(() => document.body?.innerText ?? '').catch(() => '');
        if (re.test(text)) return text;
      }
      return undefined;
    }, `a webview showing ${re}`, timeout);
  }

  /** Manage Workspace Trust → Trust, then waits for Restricted Mode to end. */
  async grantTrust() {
    await this.command('Workspaces: Manage Workspace Trust');
    const trust = this.page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first();
    await trust.waitFor({ timeout: 15000 });
    await trust.click();
    await this.waitFor(async () => !(await this.statusItem(/Restricted Mode/)), 'Restricted Mode to end', 15000);
    await this.page.keyboard.press('Control+W'); // close the trust editor
  }

  /** The "gradlint" output channel as VS Code logged it (user-data/logs/.../N-gradlint.log). */
  outputChannel() {
    return findFiles(path.join(this.userData, 'logs'), /gradlint\.log$/)
      .map((f) => fs.readFileSync(f, 'utf8'))
      .join('\n');
  }

  async waitForOutput(re, timeout = 180000) {
    return this.waitFor(() => re.test(this.outputChannel()), `the gradlint output to match ${re}`, timeout);
  }

  async codeLenses() {
    const texts = await this.page.locator('.codelens-decoration a').allInnerTexts();
    return texts.map((t) => t.replace(/[\u00a0\s]+/g, ' ').trim());
  }
}

// ---- scenarios ----------------------------------------------------------------------------------
const scenarios = [];
const scenario = (name, needs, fn, options = {}) => scenarios.push({ name, needs, fn, options });

// 1. No server needed: the extension installs and activates, contributes its commands and
//    settings, and shows ONE actionable error (status bar: "not installed") when the interpreter
//    lacks gradlint.
scenario(
  'activation-missing-gradlint',
  [],
  async (vs) => {
    await vs.openFile('gl001_float32.py');
    // /usr/bin/python3 is Debian's (PEP 668: pip may not install into it): a venv is offered
    const msg = await vs.waitForNotification(/torch-gradlint \(the gradlint language server\) is not installed in \/usr\/bin\/python3, a Python managed by your system/, 180000);
    log(`  notification: ${msg}`);
    const toast = vs.page.locator('.notification-toast', { hasText: 'is not installed in' });
    const buttons = await toast.locator('.monaco-button').allInnerTexts();
    if (!buttons.includes('Install in a new venv') || !buttons.includes('Open docs')) {
      throw new Error(`buttons: ${JSON.stringify(buttons)}`);
    }
    const status = await vs.waitFor(() => vs.statusItem(/gradlint: not installed/), 'status bar "gradlint: not installed"', 10000);
    log(`  status bar: ${status.trim()}`);
    // exactly one such message, no stack trace
    const all = await vs.notifications();
    const ours = all.filter((t) => /gradlint/.test(t));
    if (ours.length !== 1 || /Error:|at .*\(/.test(ours[0])) throw new Error(`notifications: ${JSON.stringify(all)}`);
    await vs.screenshot('activation-missing-gradlint-notification');
    const entries = await vs.paletteEntries('gradlint:');
    const want = [
      'gradlint: Run gradcheck at Cursor',
      'gradlint: Run gradcheck on All Targets in File',
      'gradlint: Show Output',
      'gradlint: Show Last gradcheck Report',
      'gradlint: Restart Server',
    ];
    const missing = want.filter((w) => !entries.some((e) => e.includes(w)));
    if (missing.length) throw new Error(`commands missing from the palette: ${missing} (saw ${entries})`);
    log(`  palette: ${want.length} gradlint commands`);
    // settings contributed (Settings editor, search "gradlint")
    await vs.command('Preferences: Open Settings (UI)');
    const search = vs.page.locator('.settings-editor .suggest-input-container .monaco-editor textarea, .settings-editor .search-container textarea').first();
    await search.waitFor({ timeout: 15000 });
    await search.fill('@ext:gradlint.gradlint');
    const count = await vs.waitFor(async () => {
      const n = await vs.page.locator('.settings-editor .setting-item-contents .setting-item-title').count();
      const label = await vs.page.locator('.settings-editor .settings-count-widget').innerText().catch(() => '');
      const m = /(\d+) Settings? Found/i.exec(label);
      return m && Number(m[1]) >= 11 ? Number(m[1]) : n >= 11 ? n : 0;
    }, 'the gradlint settings in the Settings editor', 15000);
    log(`  settings editor: ${count} gradlint settings`);
  },
  { workspaceSettings: { 'gradlint.interpreter': '/usr/bin/python3' } },
);

// 2. Diagnostics and the quick fix.
scenario('diagnostics-quickfix', ['server', 'codeActions'], async (vs, { ws }) => {
  await vs.openFile('gl001_float32.py');
  await vs.waitFor(() => vs.squiggles('error').count(), 'an error squiggle', 180000);
  await vs.waitFor(() => vs.statusItem(/^\S*\s*gradlint$/m), 'status bar "gradlint" (ready)', 10000);
  const rows = await vs.waitFor(async () => {
    const r = await vs.problems();
    return r.some((t) => /GL001/.test(t)) && r;
  }, 'a GL001 row in the Problems panel', 15000);
  log(`  problems: ${rows.map((r) => r.replace(/\s+/g, ' ')).join(' | ')}`);
  await vs.page.locator('.monaco-editor .view-lines >> visible=true').first().click();
  await vs.goTo(13, 31);
  await vs.page.keyboard.press('Control+K');
  await vs.page.keyboard.press('Control+I');
  await vs.page.locator('.monaco-hover', { hasText: 'GL001' }).first().waitFor({ timeout: 10000 }).catch(() => {});
  await vs.screenshot('diagnostics-quickfix-before');
  await vs.page.keyboard.press('Escape');
  await vs.page.keyboard.press('Control+.');
  const actions = vs.page.locator('.action-widget .monaco-list-row');
  await actions.first().waitFor({ timeout: 15000 });
  const labels = await actions.allInnerTexts();
  log(`  code actions: ${labels.map((l) => l.trim()).join(' | ')}`);
  const index = labels.findIndex((l) => /float64/.test(l));
  if (index < 0) throw new Error(`no float64 fix among ${JSON.stringify(labels)}`);
  // Move the focus to the fix (rows that are headers are skipped by the arrow keys).
  for (let i = 0; i < 10; i++) {
    const focused = await vs.page.locator('.action-widget .monaco-list-row.focused').innerText().catch(() => '');
    if (/float64/.test(focused)) break;
    await vs.page.keyboard.press('ArrowDown');
    await sleep(100);
  }
  await vs.page.keyboard.press('Enter');
  await vs.waitFor(async () => (await vs.squiggles('error').count()) === 0, 'the error squiggle to disappear', 180000);
  await vs.waitFor(async () => /dtype=torch\.float64/.test(await vs.editorText()), 'the fixed text', 10000);
  // (closed files keep theirs: broken_function.py has a GL001 too, from workspace diagnostics)
  const after = await vs.waitFor(async () => {
    const r = await vs.problems();
    return !r.some((t) => /^gl001_float32\.py/.test(t)) && (r.length ? r : ['(none)']);
  }, 'the Problems panel without gl001_float32.py', 15000);
  log(`  problems after the fix: ${after.join(' | ')}`);
  const disk = fs.readFileSync(path.join(ws, 'gl001_float32.py'), 'utf8');
  log(`  on disk: ${/float64/.test(disk) ? 'fixed (VS Code saved the refactoring)' : 'unchanged (unsaved)'}`);
});

// 3. ▶ gradcheck code lens on a broken Function: the run fails and says so.
scenario('gradcheck-codelens', ['server', 'gradcheck'], async (vs) => {
  await vs.openFile('broken_function.py');
  const lenses = await vs.waitFor(async () => {
    const l = await vs.codeLenses();
    return l.some((t) => /gradcheck/.test(t)) && l;
  }, 'a "▶ gradcheck" code lens', 180000);
  log(`  lenses: ${lenses.join(' | ')}`);
  // the first lens is above ScaleWrong (line 7)
  await vs.page.locator('.codelens-decoration a', { hasText: 'gradcheck' }).first().click();
  const note = await vs.waitForNotification(/✗|mismatch|fail/i, 120000);
  log(`  notification: ${note}`);
  const lensAfter = await vs.waitFor(async () => {
    const l = await vs.codeLenses();
    return l.find((t) => /✗/.test(t));
  }, 'a "✗ ..." code lens', 180000);
  log(`  lens after the run: ${lensAfter}`);
  // The server also publishes the result as a diagnostic (at ScaleWrong.backward).
  const rows = await vs.waitFor(async () => {
    const r = await vs.problems();
    return r.some((t) => /gradcheck/i.test(t) && /ScaleWrong|mismatch/.test(t)) && r;
  }, 'a gradcheck result diagnostic in the Problems panel', 15000);
  log(`  problems: ${rows.map((r) => r.replace(/\s+/g, ' ')).join(' | ')}`);
  // Room for the README screenshot: no side bar, no panel; then the report beside the code.
  await vs.command('View: Close Primary Side Bar');
  if (await vs.page.locator('.part.panel').isVisible()) await vs.page.keyboard.press('Control+J');
  await vs.page.keyboard.press('Control+Home');
  await vs.command('gradlint: Show Last gradcheck Report');
  const text = await vs.waitForWebviewText(/Jacobian|mismatch|gradcheck/i, 180000);
  log(`  report: ${text.split('\n').filter(Boolean).slice(0, 2).join(' / ')}`);
  await sleep(1000);
  await vs.screenshot('gradcheck-codelens-result');
});

// 4. Untrusted workspace: diagnostics work, with the user's interpreter; the workspace's own
//    gradlint.interpreter / gradlint.args are ignored; running gradcheck is refused.
scenario(
  'untrusted-workspace',
  ['server'],
  async (vs, { ws }) => {
    await vs.waitFor(() => vs.statusItem(/Restricted Mode/), 'the Restricted Mode indicator', 180000);
    await vs.openFile('gl001_float32.py');
    await vs.waitFor(() => vs.squiggles('error').count(), 'an error squiggle in Restricted Mode', 180000);
    log('  diagnostics: shown in Restricted Mode');
    await vs.openFile('broken_function.py');
    await vs.page.locator('.monaco-editor .view-lines >> visible=true').first().click();
    await vs.goTo(8, 7);
    await vs.command('gradlint: Run gradcheck at Cursor');
    const msg = await vs.waitForNotification(/Restricted Mode/, 15000);
    log(`  refused: ${msg}`);
    const lens = vs.page.locator('.codelens-decoration a', { hasText: 'gradcheck' }).first();
    if (await lens.count()) {
      await lens.click();
      await sleep(1500);
      log('  code lens click: refused too');
    }
    await vs.screenshot('untrusted-workspace-refused');
    if (fs.existsSync(path.join(ws, 'PWNED'))) throw new Error('the workspace-configured interpreter was executed');
    log('  workspace gradlint.interpreter: not executed');
  },
  {
    userSettings: {
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.banner': 'never',
      'gradlint.interpreter': PYTHON,
    },
    workspaceSettings: { 'gradlint.interpreter': '${workspaceFolder}/evil-python', 'gradlint.args': ['--no-such-flag'] },
    prepare: (ws) => {
      const evil = path.join(ws, 'evil-python');
      fs.writeFileSync(evil, `#!/bin/sh\ntouch "${path.join(ws, 'PWNED')}"\nexec "${PYTHON}" "$@"\n`);
      fs.chmodSync(evil, 0o755);
    },
  },
);

// 5. Changing gradlint.interpreter restarts the server (no reload): from a Python without
//    gradlint (error state) to one with it (diagnostics). Changing gradlint.severity and
//    gradlint.ignore takes effect without a restart.
scenario(
  'settings-change',
  ['server'],
  async (vs, { ws }) => {
    await vs.openFile('gl001_float32.py');
    await vs.waitFor(() => vs.statusItem(/gradlint: not installed/), 'status bar "gradlint: not installed"', 180000);
    writeJson(path.join(ws, '.vscode', 'settings.json'), { 'gradlint.interpreter': PYTHON });
    log('  workspace settings: gradlint.interpreter → the venv');
    await vs.waitFor(() => vs.squiggles('error').count(), 'an error squiggle after the switch', 180000);
    await vs.waitFor(() => vs.statusItem(/^\S*\s*gradlint$/m), 'status bar "gradlint" (ready)', 10000);
    await vs.waitForOutput(/settings changed: (re)?starting the language server[\s\S]*language server ready/);
    log('  server restarted with the new interpreter; diagnostics shown');
    // Other settings are applied by the running server (it re-pulls workspace/configuration).
    const before = (vs.outputChannel().match(/language server ready/g) ?? []).length;
    writeJson(path.join(ws, '.vscode', 'settings.json'), { 'gradlint.interpreter': PYTHON, 'gradlint.severity': { GL001: 'warning' } });
    await vs.waitFor(async () => (await vs.squiggles('warning').count()) > 0 && (await vs.squiggles('error').count()) === 0,
      'GL001 as a warning after gradlint.severity changed', 180000);
    log('  gradlint.severity {GL001: warning}: the squiggle became a warning');
    writeJson(path.join(ws, '.vscode', 'settings.json'), { 'gradlint.interpreter': PYTHON, 'gradlint.ignore': ['GL001'] });
    await vs.waitFor(async () => (await vs.squiggles('warning').count()) + (await vs.squiggles('error').count()) === 0,
      'no squiggle after gradlint.ignore [GL001]', 180000);
    log('  gradlint.ignore [GL001]: the diagnostic disappeared');
    const after = (vs.outputChannel().match(/language server ready/g) ?? []).length;
    if (after !== before) throw new Error('the server was restarted for a setting it applies itself');
  },
  { workspaceSettings: { 'gradlint.interpreter': '/usr/bin/python3' }, userSettings: { 'gradlint.trace.server': 'verbose' } },
);

// 6. Granting trust while open: the client sends gradlint/setWorkspaceTrust {trusted: true}
//    (no reload) and gradcheck can run.
scenario(
  'trust-grant',
  ['server'],
  async (vs) => {
    await vs.waitFor(() => vs.statusItem(/Restricted Mode/), 'the Restricted Mode indicator', 180000);
    await vs.openFile('broken_function.py');
    await vs.waitForOutput(/language server ready/, 180000);
    await vs.grantTrust();
    await vs.waitForOutput(/workspace trusted: gradcheck runs are now allowed/);
    log('  client: trust granted, gradlint/setWorkspaceTrust sent');
    await sleep(2000);
    const serverError = (await vs.notifications()).find((t) => /Error in server/.test(t));
    if (serverError) throw new Error(`gradlint/setWorkspaceTrust: the server reported "${serverError}"`);
    if (!vs.features.has('gradcheck')) {
      log('  (the server has no gradcheck yet: run not tried)');
      return;
    }
    await vs.page.keyboard.press('Control+W');
    await vs.openFile('broken_function.py');
    await vs.page.locator('.monaco-editor .view-lines >> visible=true').first().click();
    await vs.goTo(8, 7);
    await vs.command('gradlint: Run gradcheck at Cursor');
    const note = await vs.waitForNotification(/✗|mismatch|fail/i, 120000);
    log(`  gradcheck after trust: ${note}`);
  },
  {
    userSettings: {
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.banner': 'never',
      'gradlint.interpreter': PYTHON,
    },
  },
);

// 7. A Jupyter notebook: its Python cells are synced as a notebook document and linted as one
//    module (the import in cell 1 makes cell 3's gradcheck call known); the diagnostic shows in
//    the cell and in the Problems panel; the quick fix, reached with Ctrl+. on the squiggle,
//    edits the cell and the diagnostic goes away. The notebook file is written by the test.
const NOTEBOOK = {
  cells: [
    { cell_type: 'code', execution_count: null, metadata: {}, outputs: [],
      source: ['%matplotlib inline\n', 'import torch\n', 'from torch.autograd import gradcheck'] },
    { cell_type: 'markdown', metadata: {}, source: ['Check `sin` with **gradcheck**.'] },
    { cell_type: 'code', execution_count: null, metadata: {}, outputs: [],
      source: ['x = torch.linspace(0, 1, 5, dtype=torch.float64, requires_grad=True)\n',
               'assert gradcheck(torch.sin, (torch.randn(3, requires_grad=True),))'] },
  ],
  metadata: {
    kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
    language_info: { name: 'python' },
  },
  nbformat: 4,
  nbformat_minor: 5,
};
scenario(
  'notebook-diagnostics',
  ['server', 'codeActions', 'notebooks'],
  async (vs, { ws }) => {
    await vs.quickInput('Control+P', 'prototype.ipynb');
    await vs.page.locator('.quick-input-list .monaco-list-row', { hasText: 'prototype.ipynb' }).first().waitFor({ timeout: 15000 });
    await vs.page.keyboard.press('Enter');
    await vs.page.locator('.cell-editor-container .monaco-editor >> visible=true').first().waitFor({ timeout: 30000 });
    log('  notebook editor open');
    await vs.waitFor(() => vs.page.locator('.notebook-editor .monaco-editor .squiggly-error').count(),
      'an error squiggle in a notebook cell', 180000);
    // (the other rows are the workspace's closed files: workspace diagnostics)
    const rows = await vs.waitFor(async () => {
      const r = await vs.problems();
      return r.some((t) => /^prototype\.ipynb/.test(t)) && r;
    }, 'a prototype.ipynb row in the Problems panel', 15000);
    log(`  problems: ${rows.map((r) => r.replace(/\s+/g, ' ')).join(' | ')}`);
    const cellRows = rows.filter((t) => /torch\.randn\(3, requires_grad/.test(t));
    if (cellRows.length !== 1 || !/GL001/.test(cellRows[0])) throw new Error(`expected one GL001 row for the cell: ${rows}`);
    const out = vs.outputChannel();
    if (/Error|Traceback/.test(out.split('language server ready').pop() ?? '')) throw new Error(`server errors:\n${out}`);
    await vs.screenshot('notebook-diagnostics-before');
    // the cursor goes on the squiggle, in its cell; Ctrl+. opens that cell's quick fixes
    const box = await vs.page.locator('.notebook-editor .monaco-editor .squiggly-error').first().boundingBox();
    if (!box) throw new Error('the squiggle in the cell has no box');
    await vs.page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await sleep(500);
    await vs.page.keyboard.press('Control+.');
    const items = vs.page.locator('.action-widget .monaco-list-row');
    await items.first().waitFor({ timeout: 15000 });
    const labels = await items.allInnerTexts();
    log(`  quick fixes: ${labels.map((l) => l.trim()).join(' | ')}`);
    if (!labels.some((l) => /float64/.test(l))) throw new Error(`no float64 fix among ${JSON.stringify(labels)}`);
    // move the focus to the fix (rows that are headers are skipped by the arrow keys)
    for (let i = 0; i < 10; i++) {
      const focused = await vs.page.locator('.action-widget .monaco-list-row.focused').innerText().catch(() => '');
      if (/float64/.test(focused)) break;
      await vs.page.keyboard.press('ArrowDown');
      await sleep(100);
    }
    await vs.page.keyboard.press('Enter');
    await vs.waitFor(async () => (await vs.page.locator('.notebook-editor .monaco-editor .squiggly-error').count()) === 0,
      'the squiggle in the cell to disappear', 180000);
    const after = await vs.waitFor(async () => {
      const r = await vs.problems();
      return !r.some((t) => /^prototype\.ipynb/.test(t)) && (r.length ? r : ['(none)']);
    }, 'the Problems panel without the notebook', 15000);
    log(`  problems after the fix: ${after.map((r) => r.replace(/\s+/g, ' ')).join(' | ')}`);
    const text = (await vs.page.locator('.cell-editor-container .view-lines').allInnerTexts()).join('\n');
    if (!/torch\.randn\(3,\s*dtype=torch\.float64,\s*requires_grad=True\)/.test(text.replace(/\u00a0/g, ' '))) {
      throw new Error(`the cell was not fixed: ${text}`);
    }
    log('  cell fixed: torch.randn(3, dtype=torch.float64, requires_grad=True)');
  },
  {
    prepare: (ws) => writeJson(path.join(ws, 'prototype.ipynb'), NOTEBOOK),
    userSettings: { 'gradlint.trace.server': 'messages' },
  },
);

// 8. The client side of the server contract, against a stand-in server
//    (test-e2e/fake-server/gradlint/__main__.py) that records what it receives: needs no real
//    server, so it also guards the client while the server changes.
const FAKE_KEYS = ['baselinedFindings', 'codeLens', 'diagnosticMode', 'ignore', 'interpreter', 'runCompile', 'runDtype',
  'runMemoryLimitMb', 'runOnSave', 'runPrecisionFactor', 'runTimeout', 'select', 'severity'];
scenario(
  'client-contract',
  [],
  async (vs, { ws }) => {
    const dir = path.dirname(ws);
    const fakeLog = path.join(dir, 'fake-server.jsonl');
    const records = (kind) =>
      (fs.existsSync(fakeLog) ? fs.readFileSync(fakeLog, 'utf8').trim().split('\n') : [])
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .filter((r) => r.kind === kind)
        .map((r) => r.value);
    const expect = (cond, what, value) => {
      if (!cond) throw new Error(`${what}: ${JSON.stringify(value)}`);
    };
    await vs.waitFor(() => vs.statusItem(/Restricted Mode/), 'the Restricted Mode indicator', 180000);
    await vs.openFile('broken_function.py');
    await vs.waitFor(async () => (await vs.codeLenses()).some((t) => /▶ gradcheck/.test(t)), `the fake "▶ gradcheck" lens`, 180000);
    const init = records('initializationOptions')[0];
    expect(init && init.workspaceTrusted === false, 'initializationOptions.workspaceTrusted (Restricted Mode)', init);
    // Restricted Mode: the lens is refused by the client, nothing reaches the server
    await vs.page.locator('.codelens-decoration a', { hasText: /▶\s*gradcheck/ }).first().click();
    await vs.waitForNotification(/disabled in Restricted Mode/, 10000);
    expect(records('runGradcheck').length === 0, 'no runGradcheck in Restricted Mode', records('runGradcheck'));
    await vs.grantTrust();
    await vs.waitFor(() => records('setWorkspaceTrust').length > 0, 'gradlint/setWorkspaceTrust', 10000);
    expect(JSON.stringify(records('setWorkspaceTrust')) === '[{"trusted":true}]', 'gradlint/setWorkspaceTrust params', records('setWorkspaceTrust'));
    log('  Restricted Mode: lens refused; trust granted → gradlint/setWorkspaceTrust {trusted: true}');
    await vs.command('Notifications: Clear All Notifications');
    expect(JSON.stringify(Object.keys(init.settings).sort()) === JSON.stringify(FAKE_KEYS), 'initializationOptions.settings keys', init.settings);
    expect(init.settings.interpreter === path.join(dir, 'fake-python'), 'initializationOptions.settings.interpreter', init.settings);
    // null: the server decides (the timeout from the run's checks; compile and dtype from the project's config)
    expect(init.settings.runTimeout === null && init.settings.runMemoryLimitMb === 4096 && init.settings.select === null &&
      init.settings.runCompile === null && init.settings.runDtype === null && init.settings.runPrecisionFactor === null,
      'defaults', init.settings);
    expect(JSON.stringify(init.settings.severity) === '{"GL003":"warning"}', 'severity from the workspace settings', init.settings);
    const conf = records('configuration')[0];
    expect(Array.isArray(conf) && conf.length === 2 && conf.every((c) => FAKE_KEYS.every((k) => k in c)), 'workspace/configuration answer', conf);
    log('  initializationOptions and workspace/configuration: as specified');
    // code lens → gradlint.runGradcheck, with the running count in the status bar
    await vs.page.locator('.codelens-decoration a', { hasText: /▶\s*gradcheck/ }).first().click();
    await vs.waitFor(() => vs.statusItem(/1 gradcheck running/), 'status bar "1 gradcheck running"', 10000);
    const note = await vs.waitForNotification(/ScaleWrong: ✗ Jacobian mismatch/, 180000);
    log(`  lens run → ${note}`);
    await vs.waitFor(async () => !(await vs.statusItem(/running/)), 'the running count to go away', 10000);
    const run = records('runGradcheck')[0];
    expect(Array.isArray(run) && run.length === 1 && /broken_function\.py$/.test(run[0].uri) && run[0].uri.startsWith('file://') &&
      run[0].position.line === 7 && typeof run[0].position.character === 'number', 'runGradcheck arguments (lens)', run);
    await vs.page.locator('.notification-toast', { hasText: 'ScaleWrong' }).locator('.monaco-button', { hasText: 'Show Report' }).click();
    await vs.waitFor(async () => (await vs.page.locator('.tabs-container .tab').allInnerTexts()).find((t) => /gradcheck ScaleWrong/.test(t)),
      'the report preview tab', 15000);
    await vs.waitForWebviewText(/Jacobian mismatch/, 180000);
    const report = records('lastReport')[0];
    expect(report && /broken_function\.py$/.test(report.uri), 'gradlint/lastReport params', report);
    log('  Show Report → gradlint/lastReport → Markdown preview');
    await vs.screenshot('client-contract-report');
    // command palette: at cursor, and the whole file
    await vs.openFile('broken_function.py');
    await vs.page.locator('.monaco-editor .view-lines >> visible=true').first().click();
    await vs.goTo(18, 7);
    await vs.command('gradlint: Run gradcheck at Cursor');
    await vs.waitFor(() => records('runGradcheck').length >= 2, 'a second runGradcheck', 15000);
    const atCursor = records('runGradcheck')[1][0];
    expect(atCursor.position.line === 17 && atCursor.position.character === 6, 'runGradcheck arguments (cursor)', atCursor);
    await vs.command('gradlint: Run gradcheck on All Targets in File');
    await vs.waitFor(() => vs.statusItem(/ScaleRight: ✓ gradcheck/), 'the ✓ status bar message', 15000);
    const file = records('runGradcheckFile')[0];
    expect(Array.isArray(file) && file.length === 1 && /broken_function\.py$/.test(file[0].uri) && Object.keys(file[0]).length === 1,
      'runGradcheckFile arguments', file);
    log('  palette commands: runGradcheck {uri, position}, runGradcheckFile {uri}');
    // a setting the server applies itself: didChangeConfiguration + re-pull, no restart
    writeJson(path.join(ws, '.vscode', 'settings.json'), {
      'gradlint.interpreter': path.join(dir, 'fake-python'),
      'gradlint.severity': { GL003: 'warning' },
      'gradlint.run.timeout': 7,
    });
    await vs.waitFor(() => records('didChangeConfiguration').some((c) => c?.gradlint?.runTimeout === 7), 'didChangeConfiguration with runTimeout 7', 15000);
    await vs.waitFor(() => records('configuration').at(-1)?.[0]?.runTimeout === 7, 'a re-pull of workspace/configuration', 15000);
    const change = records('didChangeConfiguration').at(-1);
    expect(change?.gradlint?.runTimeout === 7 && !('workspaceTrusted' in change.gradlint), 'didChangeConfiguration settings (trust never travels in settings)', change);
    expect(records('configuration').at(-1)[0].runTimeout === 7, 're-pulled configuration', records('configuration').at(-1));
    expect(records('initializationOptions').length === 1, 'no restart', records('initializationOptions').length);
    log('  gradlint.run.timeout → didChangeConfiguration + re-pull, no restart');
  },
  {
    workspaceSettings: {},
    userSettings: {
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.banner': 'never',
      'gradlint.interpreter': path.join(ARTIFACTS, 'runs', 'client-contract', 'fake-python'),
    },
    prepare: (ws) => {
      const dir = path.dirname(ws);
      const wrapper = path.join(dir, 'fake-python');
      // metadata of torch-gradlint at the extension's version, for the stand-in's `gradlint`
      const distInfo = path.join(dir, 'fake-site', `torch_gradlint-${pkg.version}.dist-info`);
      fs.mkdirSync(distInfo, { recursive: true });
      fs.writeFileSync(path.join(distInfo, 'METADATA'), `Metadata-Version: 2.1\nName: torch-gradlint\nVersion: ${pkg.version}\n`);
      fs.writeFileSync(path.join(distInfo, 'top_level.txt'), 'gradlint\n');
      fs.writeFileSync(
        wrapper,
        `#!/bin/sh\nexport PYTHONPATH="${path.join(HERE, 'fake-server')}:${path.dirname(distInfo)}"\nexport GRADLINT_FAKE_LOG="${path.join(dir, 'fake-server.jsonl')}"\n` +
          `export GRADLINT_FAKE_RUN_SECONDS=2 GRADLINT_FAKE_VERSION=${pkg.version}\nexec "${PYTHON}" "$@"\n`,
      );
      fs.chmodSync(wrapper, 0o755);
      writeJson(path.join(ws, '.vscode', 'settings.json'), { 'gradlint.interpreter': wrapper, 'gradlint.severity': { GL003: 'warning' } });
    },
  },
);

// 8. A Python environment without gradlint: "Install torch-gradlint" in the notification installs
//    the wheel bundled in the .vsix into it (pip, in a VS Code terminal), the server then starts and
//    diagnostics appear; the venv has torch-gradlint of the extension's version, from that wheel.
const FRESH_VENV = (ws) => path.join(path.dirname(ws), 'fresh-venv');
scenario(
  'install-button',
  [],
  async (vs, { ws }) => {
    const python = path.join(FRESH_VENV(ws), 'bin', 'python');
    await vs.openFile('gl001_float32.py');
    const msg = await vs.waitForNotification(/torch-gradlint \(the gradlint language server\) is not installed in .*fresh-venv/, 180000);
    log(`  notification: ${msg}`);
    await vs.waitFor(() => vs.statusItem(/gradlint: not installed/), 'status bar "gradlint: not installed"', 10000);
    const toast = vs.page.locator('.notification-toast', { hasText: 'is not installed in' });
    await toast.locator('.monaco-button', { hasText: 'Install torch-gradlint' }).click();
    await vs.waitForOutput(/Install torch-gradlint: \S+ -m pip install \S+\/server\/torch_gradlint-[\d.]+-py3-none-any\.whl && exit/, 15000);
    log('  "Install torch-gradlint": pip install <the bundled wheel>, in a terminal');
    const t0 = Date.now();
    await vs.waitForOutput(/install terminal closed/, 300000);
    log(`  the install finished and its terminal closed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    await vs.waitForOutput(/torch-gradlint [\d.]+ found in \S+fresh-venv/, 180000);
    await vs.waitFor(() => vs.squiggles('error').count(), 'an error squiggle from the installed server', 180000);
    await vs.waitFor(() => vs.statusItem(/^\S*\s*gradlint$/m), 'status bar "gradlint" (ready)', 180000);
    const r = spawnSync(python, ['-c', 'import json, importlib.metadata as m; d = m.distribution("torch-gradlint"); ' +
      'print(json.dumps([d.version, json.loads(d.read_text("direct_url.json") or "{}").get("url", "")]))'], { encoding: 'utf8' });
    const [version, url] = JSON.parse(r.stdout || '[null, ""]');
    const bundled = `/gradlint.gradlint-${pkg.version}/server/torch_gradlint-${pkg.version}-py3-none-any.whl`;
    if (version !== pkg.version || !url.endsWith(bundled)) {
      throw new Error(`torch-gradlint in the venv: ${version} from ${url} (${r.stderr}); expected ${pkg.version} from …${bundled}`);
    }
    log(`  the venv has torch-gradlint ${version} from ${url}; diagnostics shown`);
  },
  {
    workspaceSettings: {},
    prepare: (ws) => {
      const venv = FRESH_VENV(ws);
      const r = spawnSync('python3', ['-m', 'venv', venv], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`python3 -m venv: ${r.stderr}`);
      writeJson(path.join(ws, '.vscode', 'settings.json'), { 'gradlint.interpreter': path.join(venv, 'bin', 'python') });
    },
  },
);

// 8b. The system's Python (Debian's /usr/bin/python3, PEP 668: pip may not install into it) is
//     the one found: "Install in a new venv" creates a venv in the extension's storage, installs the
//     bundled wheel there, points the User setting gradlint.interpreter at it, and the server starts.
scenario(
  'install-in-new-venv',
  [],
  async (vs, { userData }) => {
    await vs.openFile('gl001_float32.py');
    const msg = await vs.waitForNotification(/not installed in \S*python3, a Python managed by your system/, 180000);
    log(`  notification: ${msg}`);
    const toast = vs.page.locator('.notification-toast', { hasText: 'managed by your system' });
    await toast.locator('.monaco-button', { hasText: 'Install in a new venv' }).click();
    const t0 = Date.now();
    await vs.waitForOutput(/gradlint.interpreter \(User\) set to \S+\/venv\/bin\/python/, 300000);
    log(`  venv created and torch-gradlint installed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    await vs.waitFor(() => vs.squiggles('error').count(), 'an error squiggle from the server in the new venv', 180000);
    await vs.waitFor(() => vs.statusItem(/^\S*\s*gradlint$/m), 'status bar "gradlint" (ready)', 180000);
    const user = JSON.parse(fs.readFileSync(path.join(userData, 'User', 'settings.json'), 'utf8'));
    const python = user['gradlint.interpreter'];
    if (!python || !python.startsWith(path.join(userData, 'User', 'globalStorage'))) {
      throw new Error(`User gradlint.interpreter: ${python}`);
    }
    const r = spawnSync(python, ['-c', 'import importlib.metadata as m; print(m.version("torch-gradlint"))'], { encoding: 'utf8' });
    if (r.stdout.trim() !== pkg.version) throw new Error(`torch-gradlint in ${python}: ${r.stdout}${r.stderr}`);
    log(`  User gradlint.interpreter = ${python} (torch-gradlint ${r.stdout.trim()}); diagnostics shown`);
  },
  {
    workspaceSettings: {},
    env: (dir) => {
      // python3 on PATH is the system's; VSCODE_CLI=1 keeps this PATH (no login-shell resolution)
      const bin = path.join(dir, 'path');
      fs.mkdirSync(bin, { recursive: true });
      fs.symlinkSync('/usr/bin/python3', path.join(bin, 'python3'));
      return { PATH: `${bin}${path.delimiter}${process.env.PATH}`, VSCODE_CLI: '1' };
    },
  },
);

// 8c. The install check passes but `gradlint lsp` does not answer initialize (here: an interpreter
//     wrapper that runs the check, then makes the server exit): a broken install, "Reinstall".
scenario(
  'server-does-not-start',
  [],
  async (vs) => {
    await vs.openFile('gl001_float32.py');
    const msg = await vs.waitForNotification(/did not answer initialize/, 180000);
    log(`  notification: ${msg}`);
    if (!/torch-gradlint [\d.]+ in \S+broken-python is broken/.test(msg)) throw new Error(`message: ${msg}`);
    const toast = vs.page.locator('.notification-toast', { hasText: 'did not answer initialize' });
    const buttons = await toast.locator('.monaco-button').allInnerTexts();
    if (!buttons.includes('Reinstall torch-gradlint') || !buttons.includes('Show Output')) {
      throw new Error(`buttons: ${JSON.stringify(buttons)}`);
    }
    await vs.waitFor(() => vs.statusItem(/gradlint: broken install/), 'status bar "gradlint: broken install"', 10000);
    log(`  buttons: ${buttons.join(', ')}; status bar: broken install`);
  },
  {
    workspaceSettings: {},
    prepare: (ws) => {
      const wrapper = path.join(path.dirname(ws), 'broken-python');
      fs.writeFileSync(wrapper, `#!/bin/sh\nif [ "$1" = "-m" ]; then echo "gradlint lsp: broken on purpose" >&2; exit 3; fi\nexec "${PYTHON}" "$@"\n`);
      fs.chmodSync(wrapper, 0o755);
      writeJson(path.join(ws, '.vscode', 'settings.json'), { 'gradlint.interpreter': wrapper });
    },
  },
);

// 9. Restricted Mode, the workspace sets gradlint.interpreter, the user does not: that setting is
//    ignored, and the message says so and how to set one (not "gradlint is not installed" about
//    the python3 used instead, here a venv without gradlint first on PATH).
scenario(
  'untrusted-workspace-interpreter',
  [],
  async (vs) => {
    await vs.waitFor(() => vs.statusItem(/Restricted Mode/), 'the Restricted Mode indicator', 180000);
    await vs.openFile('gl001_float32.py');
    const msg = await vs.waitForNotification(/ignored until you trust the workspace/, 180000);
    log(`  notification: ${msg}`);
    if (!msg.includes(`gradlint.interpreter to "${PYTHON}"`) || !/path\/python3 instead/.test(msg) || !/User settings/.test(msg) || /not installed/.test(msg)) {
      throw new Error(`message: ${msg}`);
    }
    const toast = vs.page.locator('.notification-toast', { hasText: 'ignored until you trust' });
    const buttons = await toast.locator('.monaco-button').allInnerTexts();
    if (!buttons.includes('Manage Workspace Trust') || !buttons.includes('Open User Settings')) {
      throw new Error(`buttons: ${JSON.stringify(buttons)}`);
    }
    await vs.waitFor(() => vs.statusItem(/workspace interpreter ignored/), 'status bar "workspace interpreter ignored"', 10000);
    log(`  buttons: ${buttons.join(', ')}; status bar: workspace interpreter ignored`);
    await vs.waitForOutput(/Restricted Mode: the workspace's gradlint.interpreter .* is ignored/);
    log(`  ${/Restricted Mode: the workspace's gradlint.interpreter (comes from|is set in) [^\n]*/.exec(vs.outputChannel())?.[0]}`);
  },
  {
    userSettings: {
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.banner': 'never',
    },
    workspaceSettings: { 'gradlint.interpreter': PYTHON },
    env: (dir) => {
      const venv = path.join(dir, 'no-gradlint');
      const r = spawnSync('python3', ['-m', 'venv', '--without-pip', venv], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`python3 -m venv: ${r.stderr}`);
      const bin = path.join(dir, 'path');
      fs.mkdirSync(bin, { recursive: true });
      fs.symlinkSync(path.join(venv, 'bin', 'python3'), path.join(bin, 'python3'));
      // VSCODE_CLI=1: the server keeps this environment (no login-shell resolution that rebuilds PATH)
      return { PATH: `${bin}${path.delimiter}${process.env.PATH}`, VSCODE_CLI: '1' };
    },
  },
);

// ---- main ---------------------------------------------------------------------------------------
async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  ensureVsix();
  const probe = await probeServer();
  const features = serverFeatures(probe);
  log(`language server: ${probe.error ? `unavailable (${probe.error.split('\n')[0]})` : [...features].join(', ')}`);
  const runDir = path.join(ARTIFACTS, 'runs');
  fs.rmSync(runDir, { recursive: true, force: true });
  fs.mkdirSync(runDir, { recursive: true });
  await installExtension(runDir);

  const results = [];
  for (const s of scenarios) {
    if (only.length && !only.includes(s.name)) continue;
    const missing = s.needs.filter((n) => !features.has(n));
    if (missing.length) {
      results.push({ name: s.name, status: REQUIRE_SERVER ? 'FAIL' : 'SKIP', detail: `server lacks: ${missing.join(', ')}` });
      log(`${s.name}: ${REQUIRE_SERVER ? 'FAIL' : 'SKIP'} (the language server lacks ${missing.join(', ')})`);
      continue;
    }
    log(`${s.name}: start`);
    for (const f of fs.readdirSync(ARTIFACTS)) {
      if (f.endsWith('.png') && (f.startsWith(`${s.name}`) || f.startsWith(`FAILED-${s.name}`))) fs.rmSync(path.join(ARTIFACTS, f));
    }
    try {
      const secs = await withVSCode(s.name, s.options, (vs, ctx) => {
        vs.features = features;
        return s.fn(vs, ctx);
      });
      results.push({ name: s.name, status: 'PASS', detail: `${secs.toFixed(1)} s` });
      log(`${s.name}: PASS (${secs.toFixed(1)} s)`);
    } catch (err) {
      results.push({ name: s.name, status: 'FAIL', detail: err.message.split('\n')[0] });
      log(`${s.name}: FAIL: ${err.stack || err}`);
      if (err.logs) console.log(err.logs);
    }
  }
  console.log('\nscenario                        result  detail');
  for (const r of results) console.log(`${r.name.padEnd(32)}${r.status.padEnd(8)}${r.detail}`);
  console.log(`\nscreenshots and logs: ${ARTIFACTS}`);
  if (UPDATE_SCREENSHOT) {
    const best = ['gradcheck-codelens-result', 'diagnostics-quickfix-before', 'activation-missing-gradlint-notification']
      .map((n) => path.join(ARTIFACTS, `${n}.png`))
      .find((f) => fs.existsSync(f) && results.some((r) => r.status === 'PASS' && f.includes(r.name)));
    if (best) {
      fs.copyFileSync(best, path.join(EXT_DIR, 'images', 'screenshot.png'));
      log(`images/screenshot.png ← ${path.basename(best)}`);
    }
  }
  process.exit(results.some((r) => r.status === 'FAIL') ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
