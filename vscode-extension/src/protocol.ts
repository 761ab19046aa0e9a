/**
 * The client/server contract of the gradlint language server (`python -m gradlint lsp`).
 * Pure: no `vscode` import, so unit tests can load it.
 */

/** Server-side commands (workspace/executeCommand). */
export const CMD_RUN_GRADCHECK = 'gradlint.runGradcheck';
export const CMD_RUN_GRADCHECK_FILE = 'gradlint.runGradcheckFile';
export const SERVER_RUN_COMMANDS: ReadonlySet<string> = new Set([CMD_RUN_GRADCHECK, CMD_RUN_GRADCHECK_FILE]);

/** Client-side commands (contributes.commands). */
export const CLIENT_COMMANDS = {
  runAtCursor: 'gradlint.runGradcheckAtCursor',
  runInFile: 'gradlint.runGradcheckInFile',
  showOutput: 'gradlint.showOutput',
  showLastReport: 'gradlint.showLastReport',
  restartServer: 'gradlint.restartServer',
} as const;

/** Notification client → server: `{trusted: boolean}`. */
export const NOTIFY_SET_WORKSPACE_TRUST = 'gradlint/setWorkspaceTrust';
/** Request client → server: `{uri: string | null}` → `LastReport | null`. */
export const REQUEST_LAST_REPORT = 'gradlint/lastReport';

export interface Position {
  line: number;
  character: number;
}

export interface RunGradcheckArgs {
  uri: string;
  position: Position;
}

export interface RunGradcheckFileArgs {
  uri: string;
}

export interface LastReport {
  title: string;
  markdown: string;
}

export function runGradcheckArguments(uri: string, position: Position): [RunGradcheckArgs] {
  return [{ uri, position: { line: position.line, character: position.character } }];
}

export function runGradcheckFileArguments(uri: string): [RunGradcheckFileArgs] {
  return [{ uri }];
}

export function isLastReport(value: unknown): value is LastReport {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as LastReport).title === 'string' &&
    typeof (value as LastReport).markdown === 'string'
  );
}
