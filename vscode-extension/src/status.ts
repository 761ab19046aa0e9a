import * as vscode from 'vscode';
import { CLIENT_COMMANDS } from './protocol';

export type ServerState = 'starting' | 'ready' | 'error' | 'stopped' | 'disabled';

const ICONS: Record<ServerState, string> = {
  starting: '$(loading~spin)',
  ready: '$(pulse)',
  error: '$(error)',
  stopped: '$(circle-slash)',
  disabled: '$(circle-slash)',
};

/** The "gradlint" status bar item: server state and running gradcheck count; click → output. */
export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private state: ServerState = 'stopped';
  private detail = '';
  private running = 0;
  private interpreter = '';

  constructor() {
    this.item = vscode.window.createStatusBarItem('gradlint.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'gradlint';
    this.item.command = CLIENT_COMMANDS.showOutput;
    this.render();
    this.item.show();
  }

  get current(): ServerState {
    return this.state;
  }

  setState(state: ServerState, detail = ''): void {
    this.state = state;
    this.detail = detail;
    this.render();
  }

  setInterpreter(interpreter: string): void {
    this.interpreter = interpreter;
    this.render();
  }

  refresh(): void {
    this.render();
  }

  setRunning(count: number): void {
    this.running = Math.max(0, count);
    this.render();
  }

  private render(): void {
    const label: Record<ServerState, string> = {
      starting: 'gradlint: starting',
      ready: 'gradlint',
      error: `gradlint: ${this.detail || 'error'}`,
      stopped: 'gradlint: stopped',
      disabled: 'gradlint: disabled',
    };
    let text = `${ICONS[this.state]} ${label[this.state]}`;
    if (this.running > 0) {
      text = `$(sync~spin) gradlint: ${this.running} gradcheck${this.running === 1 ? '' : 's'} running`;
    }
    this.item.text = text;
    const lines = [`gradlint language server: ${this.state}${this.detail ? ` (${this.detail})` : ''}`];
    if (this.interpreter) {
      lines.push(`Interpreter: ${this.interpreter}`);
    }
    if (this.running > 0) {
      lines.push(`Running gradcheck: ${this.running}`);
    }
    if (!vscode.workspace.isTrusted) {
      lines.push('Restricted Mode: linting only, gradcheck runs are disabled');
    }
    lines.push('Click to show the output');
    this.item.tooltip = lines.join('\n');
    this.item.accessibilityInformation = { label: text.replace(/\$\([^)]*\)\s*/g, ''), role: 'button' };
    this.item.backgroundColor =
      this.state === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
