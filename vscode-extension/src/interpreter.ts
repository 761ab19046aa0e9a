/**
 * Which Python runs the gradlint server (and, through it, the gradcheck workers).
 * Pure logic with injected effects (no `vscode` import), so the order can be unit-tested:
 *
 *   1. the `gradlint.interpreter` setting;
 *   2. the active environment of the Python extension (ms-python.python), when it is installed;
 *   3. `python3` on PATH.
 *
 * In an untrusted workspace the caller passes only the user-level setting (VS Code also drops
 * workspace values of the restricted `gradlint.interpreter`), the Python extension is not asked
 * (its active environment is typically the workspace's own `.venv`, i.e. code from the workspace),
 * and settings that point into the workspace (`${workspaceFolder}`, relative paths) are refused.
 */
import * as path from 'path';

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

export interface InterpreterInputs {
  /** Value of `gradlint.interpreter` ('' or undefined: not set). */
  setting?: string;
  /** First workspace folder (fs path), for `${workspaceFolder}` and relative settings. */
  workspaceFolder?: string;
  workspaceTrusted: boolean;
  /** Environment variables for `${env:X}` and PATH lookups. */
  env: Record<string, string | undefined>;
  homeDir: string;
  /** The Python extension's active interpreter; undefined when the extension is not installed. */
  pythonExtension?: () => Promise<string | undefined>;
  /** Finds an executable on PATH. */
  which: (command: string, env: Record<string, string | undefined>) => Promise<string | undefined>;
  /** Default command looked up on PATH. */
  fallbackCommand?: string;
}

export interface ResolvedInterpreter {
  /** Absolute path or command; undefined when nothing was found. */
  path: string | undefined;
  source: InterpreterSource;
  /** Human-readable notes on how it was chosen (skipped candidates). */
  notes: string[];
}

const WORKSPACE_VARS = /\$\{(workspaceFolder|workspaceRoot|workspaceFolderBasename|fileDirname|cwd)[^}]*\}/;

/** Expands `~`, `${userHome}`, `${env:NAME}`, `${workspaceFolder}` (when a folder is given). */
export function expandVariables(value: string, inputs: Pick<InterpreterInputs, 'workspaceFolder' | 'env' | 'homeDir'>): string {
  let out = value.trim();
  if (out === '~' || out.startsWith('~/')) {
    out = inputs.homeDir + out.slice(1);
  }
  out = out.replace(/\$\{userHome\}/g, inputs.homeDir);
  out = out.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => inputs.env[name] ?? '');
  if (inputs.workspaceFolder !== undefined) {
    out = out.replace(/\$\{workspace(?:Folder|Root)\}/g, inputs.workspaceFolder);
  }
  return out;
}

/** A bare command name ("python3.11") rather than a path. */
export function isBareCommand(value: string): boolean {
  return value !== '' && !value.includes('/') && !value.includes('\\');
}

export async function resolveInterpreter(inputs: InterpreterInputs): Promise<ResolvedInterpreter> {
  const notes: string[] = [];
  const raw = (inputs.setting ?? '').trim();

  // 1. the setting
  if (raw !== '') {
    if (!inputs.workspaceTrusted && WORKSPACE_VARS.test(raw)) {
      notes.push(`gradlint.interpreter "${raw}" points into the untrusted workspace; ignored`);
    } else {
      const expanded = expandVariables(raw, inputs);
      if (isBareCommand(expanded)) {
        const found = await inputs.which(expanded, inputs.env);
        return { path: found ?? expanded, source: 'setting', notes };
      }
      if (path.isAbsolute(expanded)) {
        return { path: path.normalize(expanded), source: 'setting', notes };
      }
      if (!inputs.workspaceTrusted) {
        notes.push(`gradlint.interpreter "${raw}" is relative to the untrusted workspace; ignored`);
      } else if (inputs.workspaceFolder !== undefined) {
        return { path: path.resolve(inputs.workspaceFolder, expanded), source: 'setting', notes };
      } else {
        return { path: path.resolve(expanded), source: 'setting', notes };
      }
    }
  }

  // 2. the Python extension's active environment
  if (inputs.pythonExtension !== undefined) {
    if (!inputs.workspaceTrusted) {
      notes.push('untrusted workspace: the Python extension\'s environment is not used');
    } else {
      try {
        const found = await inputs.pythonExtension();
        if (found) {
          return { path: found, source: 'python-extension', notes };
        }
        notes.push('the Python extension has no active environment');
      } catch (err) {
        notes.push(`the Python extension did not answer: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  // 3. python3 on PATH
  const command = inputs.fallbackCommand ?? 'python3';
  const found = await inputs.which(command, inputs.env);
  if (found === undefined) {
    notes.push(`${command} is not on PATH`);
  }
  return { path: found, source: 'path', notes };
}

/** PATH lookup; `isExecutable` is injected for tests. */
export async function which(
  command: string,
  env: Record<string, string | undefined>,
  isExecutable: (file: string) => Promise<boolean>,
  platform: NodeJS.Platform = process.platform,
): Promise<string | undefined> {
  if (!isBareCommand(command)) {
    return (await isExecutable(command)) ? command : undefined;
  }
  const sep = platform === 'win32' ? ';' : ':';
  const exts = platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').concat(['']) : [''];
  for (const dir of (env.PATH ?? env.Path ?? '').split(sep)) {
    if (dir === '') {
      continue;
    }
    for (const ext of exts) {
      const candidate = path.join(dir, command + ext);
      if (await isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}
