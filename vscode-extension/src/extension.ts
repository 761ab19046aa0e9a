import * as vscode from 'vscode';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { execFile } from 'child_process';
import {
  CloseAction,
  CloseHandlerResult,
  DidChangeConfigurationNotification,
  ErrorAction,
  ErrorHandlerResult,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  Message,
  ResponseError,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  LSPErrorCodes,
  ErrorCodes,
} from 'vscode-languageclient/node';
import {
  CLIENT_COMMANDS,
  CMD_RUN_GRADCHECK,
  CMD_RUN_GRADCHECK_FILE,
  NOTIFY_SET_WORKSPACE_TRUST,
  REQUEST_LAST_REPORT,
  SERVER_RUN_COMMANDS,
  isLastReport,
  runGradcheckArguments,
  runGradcheckFileArguments,
  LastReport,
} from './protocol';
import {
  GradlintSettings,
  classifyChange,
  parseJsonc,
  readSettings,
  settingInJsonc,
  serverCommand,
  toInitializationOptions,
  toServerSettings,
} from './settings';
import { ResolvedInterpreter, resolveInterpreter, which } from './interpreter';
import { activeInterpreter, onDidChangeInterpreter, pythonExtensionInstalled } from './pythonExtension';
import { notificationKind, summarizeRun } from './results';
import { StatusBar } from './status';
import { ReportDocuments } from './reports';
import {
  Action,
  DISTRIBUTION,
  InstallSource,
  PROBE_SCRIPT,
  Probe,
  Remedy,
  RemedyContext,
  assess,
  bundledWheelName,
  ignoredWorkspaceInterpreter,
  parseProbe,
  remedy,
  serverFailed,
  shellLine,
} from './install';

const RESTRICTED_KEYS = new Set(['interpreter', 'args']);
/** How long `gradlint lsp` may take to answer initialize (it imports libcst and pygls). */
const INITIALIZE_TIMEOUT_S = 60;

interface LaunchPlan {
  settings: GradlintSettings;
  resolved: ResolvedInterpreter;
  trusted: boolean;
  cwd: string;
  /** What the running server was started with; a restart with the same key is skipped. */
  key: string;
  /** Restricted Mode: the workspace's gradlint.interpreter, which is being ignored. */
  ignoredInterpreter?: string;
}

type ProbeResult =
  | { ok: true; probe: Probe }
  | { ok: false; kind: 'missing-interpreter' | 'failed'; detail: string };

/** A LanguageClient whose own error notifications are logged only: the controller shows its own. */
class GradlintLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
    super.error(message, data, false);
  }
}

function isExecutable(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    fs.stat(file, (err, stat) => {
      if (err || !stat.isFile()) {
        resolve(false);
        return;
      }
      fs.access(file, fs.constants.X_OK, (err2) => resolve(!err2));
    });
  });
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  return String(error);
}

export class Gradlint implements vscode.Disposable {
  private client: GradlintLanguageClient | undefined;
  private plan: LaunchPlan | undefined;
  private queue: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  private notifyTimer: NodeJS.Timeout | undefined;
  private pendingForce = false;
  private running = 0;
  private readonly shownErrors = new Set<string>();
  private crashes: number[] = [];
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
    private readonly status: StatusBar,
    private readonly reports: ReportDocuments,
  ) {}

  // ---- logging -------------------------------------------------------------------------
  log(message: string): void {
    this.output.appendLine(`[${new Date().toISOString().slice(11, 23)}] ${message}`);
  }

  // ---- lifecycle -----------------------------------------------------------------------
  /** Debounced restart; `force` restarts even if nothing in the launch plan changed. */
  scheduleRestart(reason: string, delayMs = 400, force = false): void {
    this.pendingForce = this.pendingForce || force;
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      const forced = this.pendingForce;
      this.pendingForce = false;
      void this.enqueue(() => this.restart(reason, forced));
    }, delayMs);
  }

  enqueue(task: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(task).catch((err) => this.log(`internal error: ${errorMessage(err)}`));
    return this.queue;
  }

  private resource(): vscode.Uri | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri;
  }

  /** `gradlint.*` for a scope; in an untrusted workspace the restricted settings keep only user values. */
  readEffectiveSettings(resource: vscode.Uri | undefined): GradlintSettings {
    const cfg = vscode.workspace.getConfiguration('gradlint', resource);
    const trusted = vscode.workspace.isTrusted;
    return readSettings((key) => (!trusted && RESTRICTED_KEYS.has(key) ? cfg.inspect(key)?.globalValue : cfg.get(key)));
  }

  private async makePlan(): Promise<LaunchPlan> {
    const resource = this.resource();
    const trusted = vscode.workspace.isTrusted;
    const settings = this.readEffectiveSettings(resource);
    const folder = resource?.scheme === 'file' ? resource.fsPath : undefined;
    const resolved = await resolveInterpreter({
      setting: settings.interpreter,
      workspaceFolder: folder,
      workspaceTrusted: trusted,
      env: process.env,
      homeDir: os.homedir(),
      pythonExtension: pythonExtensionInstalled() ? () => activeInterpreter(resource) : undefined,
      which: (command, env) => which(command, env, isExecutable),
    });
    // `python -m gradlint` puts its working directory first on sys.path: in an untrusted
    // workspace it must not be the workspace (a `gradlint/` folder there would be executed).
    let cwd = folder ?? os.homedir();
    if (!trusted || folder === undefined) {
      cwd = this.context.globalStorageUri.fsPath;
      await fs.promises.mkdir(cwd, { recursive: true }).catch(() => undefined);
    }
    // cwd is not part of the key: granting trust changes it, but needs no new process.
    const key = JSON.stringify([resolved.path, settings.args, settings.enable]);
    const ignoredInterpreter = trusted ? undefined : await this.workspaceInterpreter(resource);
    return { settings, resolved, trusted, cwd, key, ignoredInterpreter };
  }

  /**
   * The gradlint.interpreter the workspace itself sets (Restricted Mode ignores it). VS Code may
   * hide restricted workspace values from the API in Restricted Mode, so the workspace's
   * settings files are read too (reading is safe; nothing from them is run).
   */
  private async workspaceInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
    const inspected = vscode.workspace.getConfiguration('gradlint', resource).inspect<string>('interpreter');
    const fromApi = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
    if (typeof fromApi === 'string' && fromApi.trim() !== '') {
      this.log('Restricted Mode: the workspace\'s gradlint.interpreter comes from the configuration API');
      return fromApi.trim();
    }
    const files = (vscode.workspace.workspaceFolders ?? [])
      .filter((f) => f.uri.scheme === 'file')
      .map((f) => path.join(f.uri.fsPath, '.vscode', 'settings.json'));
    const workspaceFile = vscode.workspace.workspaceFile;
    for (const file of workspaceFile?.scheme === 'file' ? [workspaceFile.fsPath, ...files] : files) {
      const text = await fs.promises.readFile(file, 'utf8').catch(() => undefined);
      const raw = text === undefined ? undefined : file.endsWith('settings.json')
        ? settingInJsonc(text, 'interpreter')
        : (parseJsonc(text) as { settings?: Record<string, unknown> } | undefined)?.settings?.['gradlint.interpreter'];
      if (typeof raw === 'string' && raw.trim() !== '') {
        this.log(`Restricted Mode: the workspace's gradlint.interpreter is set in ${file}`);
        return raw.trim();
      }
    }
    return undefined;
  }

  async restart(reason: string, force: boolean): Promise<void> {
    const plan = await this.makePlan();
    if (!force && this.client && this.plan && this.plan.key === plan.key && this.client.state !== State.Stopped) {
      this.log(`${reason}: server command unchanged, not restarting`);
      this.sendConfigurationChanged();
      return;
    }
    this.log(`${reason}: ${this.client ? 'restarting' : 'starting'} the language server`);
    await this.stop();
    await this.start(plan);
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.plan = undefined;
    if (client) {
      try {
        await client.stop(4000);
      } catch (err) {
        this.log(`stopping the server: ${errorMessage(err)}`);
      }
      try {
        await client.dispose(2000);
      } catch {
        // already stopped
      }
    }
    this.status.setState('stopped');
  }

  private async start(plan: LaunchPlan): Promise<void> {
    const { settings, resolved } = plan;
    if (!settings.enable) {
      this.status.setState('disabled');
      this.log('gradlint.enable is false: the language server is not started');
      return;
    }
    this.status.setState('starting');
    for (const note of resolved.notes) {
      this.log(`interpreter: ${note}`);
    }
    if (!resolved.path) {
      this.log('no Python interpreter found');
      if (plan.ignoredInterpreter !== undefined) {
        this.showIgnoredInterpreter(plan.ignoredInterpreter, undefined);
        return;
      }
      this.status.setState('error', 'no Python');
      void this.showErrorOnce(
        'no-python',
        `gradlint: no Python interpreter found (python3 is not on PATH). Set "gradlint.interpreter" to a Python that has ${DISTRIBUTION} installed.`,
        ['Open Settings', 'Open docs'],
      );
      return;
    }
    const interpreter = resolved.path;
    this.status.setInterpreter(interpreter);
    this.log(`interpreter: ${interpreter} (from ${resolved.source})${plan.trusted ? '' : ' [untrusted workspace]'}`);
    if (plan.ignoredInterpreter !== undefined) {
      this.log(`Restricted Mode: the workspace's gradlint.interpreter "${plan.ignoredInterpreter}" is ignored`);
    }

    const checked = await this.probe(interpreter, plan.cwd);
    const context = this.remedyContext(interpreter, checked.ok ? checked.probe : undefined);
    if (!checked.ok) {
      this.log(`\`${interpreter}\` could not run the install check: ${checked.detail}`);
      if (plan.ignoredInterpreter !== undefined) {
        this.showIgnoredInterpreter(plan.ignoredInterpreter, interpreter);
      } else if (checked.kind === 'missing-interpreter') {
        this.status.setState('error', 'interpreter not found');
        void this.showErrorOnce(
          `missing:${interpreter}`,
          `gradlint: the Python interpreter "${interpreter}" does not exist or cannot be run. Set "gradlint.interpreter" to a Python that has ${DISTRIBUTION} installed.`,
          ['Open Settings', 'Open docs'],
        );
      } else {
        this.status.setState('error', 'check failed');
        void this.showErrorOnce(
          `check-failed:${interpreter}`,
          `gradlint: ${interpreter} could not run gradlint's install check (${checked.detail}). Set "gradlint.interpreter" to a Python 3.10+ environment with ${DISTRIBUTION}.`,
          ['Show Output', 'Open Settings'],
        );
      }
      return;
    }
    const probe = checked.probe;
    const state = assess(probe, context.source.version);
    const fix = remedy(state, context);
    this.log(`install check in ${interpreter}: Python ${probe.python}, ${DISTRIBUTION} ${probe.version ?? 'not installed'}` +
      `, \`gradlint\` from ${probe.providers.length ? probe.providers.join(', ') : probe.moduleFile ?? 'nowhere'} → ${state.kind}`);
    if (state.kind !== 'ok') {
      if (plan.ignoredInterpreter !== undefined) {
        this.showIgnoredInterpreter(plan.ignoredInterpreter, interpreter);
      } else if (fix) {
        this.showRemedy(interpreter, fix);
      }
      return;
    }
    this.log(`${DISTRIBUTION} ${state.version} found in ${interpreter}`);

    const { command, args } = serverCommand(interpreter, settings);
    const serverOptions: ServerOptions = {
      command,
      args,
      options: { cwd: plan.cwd, env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        // Python cells of Jupyter notebooks (synced as notebook documents: the server lints
        // a notebook's cells as one module)
        { notebook: { notebookType: 'jupyter-notebook' }, language: 'python' },
      ],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: toInitializationOptions(settings, interpreter, plan.trusted),
      initializationFailedHandler: (error) => {
        this.log(`initialize failed: ${errorMessage(error)}`);
        initializeError = error ?? new Error('initialize failed');
        return false;
      },
      errorHandler: {
        error: (_error: Error, _message: Message | undefined, count: number | undefined): ErrorHandlerResult => ({
          action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        // a server that never answered initialize is not restarted: start() reports it
        closed: (): CloseHandlerResult =>
          this.client === client && running
            ? this.onServerClosed(interpreter)
            : { action: CloseAction.DoNotRestart, handled: true },
      },
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) {
              return result;
            }
            return params.items.map((item, i) =>
              item.section === 'gradlint' ? this.serverConfiguration(item.scopeUri) : result[i],
            );
          },
        },
        executeCommand: async (command, commandArgs, next) => {
          if (SERVER_RUN_COMMANDS.has(command)) {
            return this.runOnServer(command, commandArgs);
          }
          return next(command, commandArgs);
        },
      },
    };
    // (the handlers above refer to these: the client they belong to, and whether it ever ran)
    let running = false;
    // set when initialize fails: a server that exits before answering can make start() resolve
    // (the pending request is rejected as the connection is disposed), which is no start
    let initializeError: unknown;
    const client: GradlintLanguageClient = new GradlintLanguageClient('gradlint', 'gradlint', serverOptions, clientOptions);
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Running) {
        this.status.setState('ready');
      } else if (e.newState === State.Starting) {
        this.status.setState('starting');
      } else if (e.newState === State.Stopped && this.status.current !== 'error') {
        this.status.setState('stopped');
      }
    });
    this.client = client;
    this.plan = plan;
    this.log(`starting: ${[command, ...args].join(' ')} (cwd ${plan.cwd})`);
    let timer: NodeJS.Timeout | undefined;
    try {
      // the last install check: `gradlint lsp` answers initialize (a hung server would leave
      // the status at "starting" forever)
      await Promise.race([
        client.start(),
        new Promise((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${INITIALIZE_TIMEOUT_S} s`)), INITIALIZE_TIMEOUT_S * 1000);
        }),
      ]);
      if (initializeError !== undefined) {
        throw initializeError instanceof Error ? initializeError : new Error(errorMessage(initializeError));
      }
      running = true;
      this.log('language server ready');
    } catch (err) {
      if (this.client !== client) {
        return;
      }
      this.log(`the language server could not start: ${errorMessage(err)}`);
      this.client = undefined;
      this.plan = undefined;
      void client.stop(2000).catch(() => undefined);
      this.showRemedy(interpreter, serverFailed(context, state.version, errorMessage(err)), 'Show Output');
    } finally {
      clearTimeout(timer);
    }
  }

  private onServerClosed(interpreter: string): CloseHandlerResult {
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < 3 * 60_000);
    this.crashes.push(now);
    if (this.crashes.length <= 3) {
      this.log(`the language server stopped unexpectedly; restarting (${this.crashes.length}/3)`);
      return { action: CloseAction.Restart, handled: true };
    }
    this.status.setState('error', 'server crashed');
    void this.showErrorOnce(
      `crashed:${interpreter}`,
      'gradlint: the language server stopped unexpectedly 4 times in 3 minutes and will not be restarted. See the output for details.',
      ['Show Output', 'Restart Server'],
    );
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  /** Runs the install check (PROBE_SCRIPT) in the interpreter, from the server's working directory. */
  private probe(interpreter: string, cwd: string): Promise<ProbeResult> {
    return new Promise((resolve) => {
      execFile(
        interpreter,
        ['-c', PROBE_SCRIPT],
        { cwd, timeout: 30_000, env: { ...process.env, PYTHONIOENCODING: 'utf-8' }, windowsHide: true },
        (error, stdout, stderr) => {
          const code = (error as NodeJS.ErrnoException | null)?.code;
          if (code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR') {
            resolve({ ok: false, kind: 'missing-interpreter', detail: `${code}: ${error?.message}` });
            return;
          }
          const probe = error ? undefined : parseProbe(String(stdout));
          if (probe) {
            resolve({ ok: true, probe });
            return;
          }
          const lastLine = String(stderr).trim().split('\n').pop() || error?.message || 'no answer';
          resolve({ ok: false, kind: 'failed', detail: lastLine });
        },
      );
    });
  }

  /** What "install" means for this extension: its bundled wheel, else PyPI at its version. */
  private installSource(): InstallSource {
    const version = String(this.context.extension.packageJSON.version);
    const wheel = path.join(this.context.extensionUri.fsPath, 'server', bundledWheelName(version));
    return fs.existsSync(wheel) ? { version, wheel } : { version };
  }

  private remedyContext(interpreter: string, probe: Probe | undefined): RemedyContext {
    return {
      interpreter,
      probe,
      source: this.installSource(),
      venvDir: path.join(this.context.globalStorageUri.fsPath, 'venv'),
    };
  }

  private showRemedy(interpreter: string, fix: Remedy, ...extra: string[]): void {
    this.status.setState('error', fix.status);
    this.log(fix.message);
    const buttons = [...(fix.action ? [fix.action.label] : ['Open Settings']), ...extra, 'Open docs'];
    void this.showErrorOnce(`${fix.status}:${interpreter}`, fix.message, buttons, fix.action);
  }

  private showIgnoredInterpreter(workspaceValue: string, used: string | undefined): void {
    this.status.setState('error', 'workspace interpreter ignored');
    const message = ignoredWorkspaceInterpreter(workspaceValue, used);
    this.log(message);
    void this.showErrorOnce(`ignored:${workspaceValue}`, message, ['Manage Workspace Trust', 'Open User Settings']);
  }

  // ---- settings → server ---------------------------------------------------------------
  /** The answer to `workspace/configuration` for section `gradlint`. */
  serverConfiguration(scopeUri: string | undefined): Record<string, unknown> {
    let resource: vscode.Uri | undefined = this.resource();
    if (scopeUri) {
      try {
        resource = vscode.Uri.parse(scopeUri);
      } catch {
        // keep the first folder
      }
    }
    const settings = this.readEffectiveSettings(resource);
    const interpreter = this.plan?.resolved.path ?? '';
    // (no workspaceTrusted here: trust travels only in initializationOptions and the
    // gradlint/setWorkspaceTrust notification; the server ignores it in settings)
    return { ...toServerSettings(settings, interpreter) };
  }

  onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    const kind = classifyChange((key) => event.affectsConfiguration(`gradlint.${key}`));
    if (kind === 'restart') {
      this.scheduleRestart('settings changed');
    } else if (kind === 'notify') {
      if (this.notifyTimer) {
        clearTimeout(this.notifyTimer);
      }
      this.notifyTimer = setTimeout(() => this.sendConfigurationChanged(), 200);
    }
  }

  /** Tells the server to re-pull `workspace/configuration` (it also gets the new values inline). */
  sendConfigurationChanged(): void {
    const client = this.client;
    if (!client || !client.isRunning()) {
      return;
    }
    void client
      .sendNotification(DidChangeConfigurationNotification.type, {
        settings: { gradlint: this.serverConfiguration(undefined) },
      })
      .catch((err) => this.log(`didChangeConfiguration: ${errorMessage(err)}`));
  }

  onTrustGranted(): void {
    this.log('workspace trusted: gradcheck runs are now allowed');
    const client = this.client;
    if (client && client.isRunning()) {
      void client
        .sendNotification(NOTIFY_SET_WORKSPACE_TRUST, { trusted: true })
        .catch((err) => this.log(`${NOTIFY_SET_WORKSPACE_TRUST}: ${errorMessage(err)}`));
    }
    this.status.refresh();
    // The workspace's own gradlint.interpreter / gradlint.args now apply: restart only if
    // they change the server command; otherwise the server just re-pulls the settings.
    this.scheduleRestart('workspace trusted', 100);
  }

  // ---- gradcheck runs ------------------------------------------------------------------
  private async refuseUntrusted(): Promise<void> {
    const choice = await vscode.window.showWarningMessage(
      'gradlint: running gradcheck executes code from this workspace, so it is disabled in Restricted Mode. ' +
        'Trust the workspace to run it (diagnostics and quick fixes work without trust).',
      'Manage Workspace Trust',
    );
    if (choice === 'Manage Workspace Trust') {
      await vscode.commands.executeCommand('workbench.trust.manage');
    }
  }

  private setRunning(delta: number): void {
    this.running = Math.max(0, this.running + delta);
    this.status.setRunning(this.running);
  }

  /** Sends a run command to the server (every path: code lens, palette, context menu). */
  async runOnServer(command: string, args: unknown[]): Promise<unknown> {
    if (!vscode.workspace.isTrusted) {
      this.log(`${command} refused: the workspace is not trusted`);
      void this.refuseUntrusted();
      return undefined;
    }
    const client = this.client;
    if (!client || !client.isRunning()) {
      void vscode.window
        .showWarningMessage('gradlint: the language server is not running.', 'Show Output', 'Restart Server')
        .then((choice) => this.handleChoice(choice));
      return undefined;
    }
    // The worker imports the file from disk: save it first so the run sees what is on screen.
    const uri = (args[0] as { uri?: unknown } | undefined)?.uri;
    if (typeof uri === 'string') {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
      if (doc?.isDirty) {
        await doc.save();
      }
    }
    this.setRunning(+1);
    try {
      const result = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
      this.showRunResult(result, typeof uri === 'string' ? uri : null);
      return result;
    } catch (err) {
      if (
        err instanceof ResponseError &&
        (err.code === LSPErrorCodes.RequestCancelled || err.code === ErrorCodes.PendingResponseRejected)
      ) {
        this.log(`${command} cancelled`);
        return undefined;
      }
      this.log(`${command} failed: ${errorMessage(err)}`);
      if (err instanceof ResponseError && err.code === LSPErrorCodes.RequestFailed) {
        // The server refused the run and says why (no target at the cursor, file not saved, ...).
        void vscode.window.showWarningMessage(`gradlint: ${err.message}`);
      } else {
        void vscode.window
          .showErrorMessage(`gradlint: gradcheck did not run: ${errorMessage(err)}`, 'Show Output')
          .then((choice) => this.handleChoice(choice));
      }
      return undefined;
    } finally {
      this.setRunning(-1);
    }
  }

  private showRunResult(result: unknown, uri: string | null): void {
    const summary = summarizeRun(result);
    if (!summary) {
      return;
    }
    this.log(`gradcheck: ${summary.message}`);
    if (summary.outcome === 'pass') {
      vscode.window.setStatusBarMessage(`$(check) ${summary.message}`, 10_000);
      return;
    }
    const kind = notificationKind(summary.outcome);
    const show =
      kind === 'error'
        ? vscode.window.showErrorMessage
        : kind === 'warning'
          ? vscode.window.showWarningMessage
          : vscode.window.showInformationMessage;
    void show(`gradlint: ${summary.message}`, 'Show Report').then((choice) => {
      if (choice === 'Show Report') {
        void this.showLastReport(uri);
      }
    });
  }

  async runAtCursor(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'python') {
      void vscode.window.showInformationMessage('gradlint: open a Python file and put the cursor on an autograd Function or a gradcheck call.');
      return;
    }
    await this.runOnServer(CMD_RUN_GRADCHECK, runGradcheckArguments(editor.document.uri.toString(), editor.selection.active));
  }

  async runInFile(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'python') {
      void vscode.window.showInformationMessage('gradlint: open a Python file to run gradcheck on its targets.');
      return;
    }
    await this.runOnServer(CMD_RUN_GRADCHECK_FILE, runGradcheckFileArguments(editor.document.uri.toString()));
  }

  async showLastReport(uri?: string | null): Promise<void> {
    const client = this.client;
    if (!client || !client.isRunning()) {
      void vscode.window.showInformationMessage('gradlint: the language server is not running.');
      return;
    }
    if (uri === undefined) {
      const editor = vscode.window.activeTextEditor;
      uri = editor && editor.document.languageId === 'python' ? editor.document.uri.toString() : null;
    }
    let report: unknown;
    try {
      report = await client.sendRequest(REQUEST_LAST_REPORT, { uri });
      if (!isLastReport(report) && uri !== null) {
        report = await client.sendRequest(REQUEST_LAST_REPORT, { uri: null });
      }
    } catch (err) {
      this.log(`${REQUEST_LAST_REPORT} failed: ${errorMessage(err)}`);
      void vscode.window.showErrorMessage(`gradlint: could not get the last report: ${errorMessage(err)}`);
      return;
    }
    if (!isLastReport(report)) {
      void vscode.window.showInformationMessage(
        'gradlint: no gradcheck report yet. Run gradcheck first (the "▶ gradcheck" code lens or "gradlint: Run gradcheck at Cursor").',
      );
      return;
    }
    await this.reports.show(report as LastReport);
  }

  // ---- messages ------------------------------------------------------------------------
  /** Shows an error once per key and session (an explicit restart shows it again). */
  private async showErrorOnce(key: string, message: string, buttons: string[], action?: Action): Promise<void> {
    if (this.shownErrors.has(key)) {
      return;
    }
    this.shownErrors.add(key);
    const choice = await vscode.window.showErrorMessage(message, ...buttons);
    await this.handleChoice(choice, action);
  }

  private async handleChoice(choice: string | undefined, action?: Action): Promise<void> {
    if (action && choice === action.label) {
      this.runAction(action);
      return;
    }
    switch (choice) {
      case 'Manage Workspace Trust':
        await vscode.commands.executeCommand('workbench.trust.manage');
        break;
      case 'Open User Settings':
        await vscode.commands.executeCommand('workbench.action.openGlobalSettings', { query: 'gradlint.interpreter' });
        break;
      case 'Open docs':
        // the extension's own README (requirements, settings, trust), shipped in the .vsix
        await vscode.commands.executeCommand(
          'markdown.showPreview', vscode.Uri.joinPath(this.context.extensionUri, 'README.md'));
        break;
      case 'Open Settings':
        await vscode.commands.executeCommand('workbench.action.openSettings', 'gradlint.interpreter');
        break;
      case 'Show Output':
        this.output.show(true);
        break;
      case 'Restart Server':
        await vscode.commands.executeCommand(CLIENT_COMMANDS.restartServer);
        break;
      default:
        break;
    }
  }

  /** Runs an install action's steps in a terminal (the user sees pip); restarts when it closes. */
  private runAction(action: Action): void {
    const terminal = vscode.window.createTerminal({ name: 'gradlint: install', cwd: os.homedir() });
    terminal.show();
    const line = shellLine(action.steps);
    this.log(`${action.label}: ${line}`);
    terminal.sendText(line);
    const sub = vscode.window.onDidCloseTerminal(async (closed) => {
      if (closed !== terminal) {
        return;
      }
      sub.dispose();
      this.log(`install terminal closed (exit status ${closed.exitStatus?.code ?? 'unknown'})`);
      this.shownErrors.clear();
      if (action.newInterpreter && fs.existsSync(action.newInterpreter)) {
        // the venv made for gradlint becomes the user's interpreter (the change restarts the server)
        await vscode.workspace
          .getConfiguration('gradlint')
          .update('interpreter', action.newInterpreter, vscode.ConfigurationTarget.Global);
        this.log(`gradlint.interpreter (User) set to ${action.newInterpreter}`);
      }
      this.scheduleRestart('install terminal closed', 0, true);
    });
    this.disposables.push(sub);
  }

  resetShownErrors(): void {
    this.shownErrors.clear();
    this.crashes = [];
  }

  dispose(): void {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    if (this.notifyTimer) {
      clearTimeout(this.notifyTimer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

let controller: Gradlint | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('gradlint');
  const status = new StatusBar();
  const reports = new ReportDocuments();
  const gradlint = new Gradlint(context, output, status, reports);
  controller = gradlint;
  context.subscriptions.push(output, status, reports, gradlint);
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(ReportDocuments.scheme, reports),
    vscode.commands.registerCommand(CLIENT_COMMANDS.runAtCursor, () => gradlint.runAtCursor()),
    vscode.commands.registerCommand(CLIENT_COMMANDS.runInFile, () => gradlint.runInFile()),
    vscode.commands.registerCommand(CLIENT_COMMANDS.showOutput, () => output.show(true)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.showLastReport, () => gradlint.showLastReport()),
    vscode.commands.registerCommand(CLIENT_COMMANDS.restartServer, () => {
      gradlint.resetShownErrors();
      gradlint.scheduleRestart('restart command', 0, true);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => gradlint.onConfigurationChanged(e)),
    vscode.workspace.onDidGrantWorkspaceTrust(() => gradlint.onTrustGranted()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => gradlint.scheduleRestart('workspace folders changed')),
  );
  const subscribePython = async (): Promise<boolean> => {
    const sub = await onDidChangeInterpreter(() => gradlint.scheduleRestart('Python interpreter changed'));
    if (sub) {
      context.subscriptions.push(sub);
      return true;
    }
    return false;
  };
  if (!(await subscribePython())) {
    // The Python extension may be installed later.
    const sub = vscode.extensions.onDidChange(async () => {
      if (pythonExtensionInstalled() && (await subscribePython())) {
        sub.dispose();
        gradlint.scheduleRestart('Python extension installed');
      }
    });
    context.subscriptions.push(sub);
  }
  gradlint.log(
    `gradlint extension ${context.extension.packageJSON.version} activated; workspace ${vscode.workspace.isTrusted ? 'trusted' : 'not trusted (Restricted Mode)'}`,
  );
  void gradlint.enqueue(() => gradlint.restart('activation', true));
}

export async function deactivate(): Promise<void> {
  if (controller) {
    await controller.stop();
    controller = undefined;
  }
}
