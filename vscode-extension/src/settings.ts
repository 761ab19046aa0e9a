/**
 * VS Code settings (`gradlint.*`) → what the language server receives, both as
 * `initializationOptions` and as the answer to `workspace/configuration` (section `gradlint`).
 * Pure: no `vscode` import.
 */

export type Severity = 'error' | 'warning' | 'information' | 'hint';
export type TraceLevel = 'off' | 'messages' | 'verbose';
export type DiagnosticMode = 'auto' | 'workspace' | 'openFilesOnly';
/** Findings held by the project's baseline (gradlint-baseline.json): shown as hints, or not at all. */
export type BaselinedFindings = 'hint' | 'hide';
export const BASELINED_FINDINGS: readonly BaselinedFindings[] = ['hint', 'hide'];

export const DIAGNOSTIC_MODES: readonly DiagnosticMode[] = ['auto', 'workspace', 'openFilesOnly'];

export const SEVERITIES: readonly Severity[] = ['error', 'warning', 'information', 'hint'];

export const DEFAULTS = {
  enable: true,
  interpreter: '',
  args: [] as string[],
  select: null as string[] | null,
  ignore: [] as string[],
  severity: {} as Record<string, Severity>,
  runTimeout: 60,
  runMemoryLimitMb: 4096,
  runOnSave: false,
  codeLens: true,
  diagnosticMode: 'auto' as DiagnosticMode,
  baselinedFindings: 'hint' as BaselinedFindings,
  trace: 'off' as TraceLevel,
};

/** The `gradlint.*` settings of one scope, validated. */
export interface GradlintSettings {
  enable: boolean;
  interpreter: string;
  args: string[];
  select: string[] | null;
  ignore: string[];
  severity: Record<string, Severity>;
  runTimeout: number;
  runMemoryLimitMb: number;
  runOnSave: boolean;
  codeLens: boolean;
  diagnosticMode: DiagnosticMode;
  baselinedFindings: BaselinedFindings;
  trace: TraceLevel;
}

/** The `settings` object of the server contract. */
export interface ServerSettings {
  select: string[] | null;
  ignore: string[];
  severity: Record<string, Severity>;
  runTimeout: number;
  runMemoryLimitMb: number;
  runOnSave: boolean;
  codeLens: boolean;
  diagnosticMode: DiagnosticMode;
  baselinedFindings: BaselinedFindings;
  interpreter: string;
}

export interface InitializationOptions {
  settings: ServerSettings;
  workspaceTrusted: boolean;
}

/** Reads one setting by its key below `gradlint.` (e.g. `run.timeout`); undefined when unset. */
export type SettingGetter = (key: string) => unknown;

/** Setting keys (below `gradlint.`) whose change needs a new server process. */
export const RESTART_KEYS: readonly string[] = ['enable', 'interpreter', 'args'];
/** Every setting key below `gradlint.` that the extension contributes. */
export const ALL_KEYS: readonly string[] = [
  'enable',
  'interpreter',
  'args',
  'select',
  'ignore',
  'severity',
  'run.timeout',
  'run.memoryLimit',
  'run.onSave',
  'codeLens.enable',
  'diagnosticMode',
  'baselinedFindings',
  'trace.server',
];

const CODE_RE = /^GL\d{0,3}$/;

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function positive(value: unknown, fallback: number): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : fallback;
}

function stringList(value: unknown): string[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.filter((v): v is string => typeof v === 'string').map((v) => v.trim()).filter((v) => v !== '');
}

/** Rule codes or prefixes, upper-cased, de-duplicated, invalid entries dropped ("gl1" → "GL1"). */
export function normalizeCodes(value: unknown): string[] {
  const out: string[] = [];
  for (const v of stringList(value)) {
    const code = v.toUpperCase();
    if (CODE_RE.test(code) && !out.includes(code)) {
      out.push(code);
    }
  }
  return out;
}

export function normalizeSeverity(value: unknown): Record<string, Severity> {
  const out: Record<string, Severity> = {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return out;
  }
  for (const [key, raw] of Object.entries(value as Record<string, unknown>)) {
    const code = key.trim().toUpperCase();
    if (!CODE_RE.test(code) || typeof raw !== 'string') {
      continue;
    }
    let sev = raw.trim().toLowerCase();
    if (sev === 'info') {
      sev = 'information';
    }
    if ((SEVERITIES as readonly string[]).includes(sev)) {
      out[code] = sev as Severity;
    }
  }
  return out;
}

export function readSettings(get: SettingGetter): GradlintSettings {
  const select = get('select');
  const trace = get('trace.server');
  const mode = get('diagnosticMode');
  const baselined = get('baselinedFindings');
  return {
    enable: bool(get('enable'), DEFAULTS.enable),
    interpreter: typeof get('interpreter') === 'string' ? (get('interpreter') as string).trim() : '',
    args: stringList(get('args')),
    // null/undefined: "not configured here" (the server then uses the project's config or all rules).
    select: Array.isArray(select) ? normalizeCodes(select) : null,
    ignore: normalizeCodes(get('ignore')),
    severity: normalizeSeverity(get('severity')),
    runTimeout: positive(get('run.timeout'), DEFAULTS.runTimeout),
    runMemoryLimitMb: positive(get('run.memoryLimit'), DEFAULTS.runMemoryLimitMb),
    runOnSave: bool(get('run.onSave'), DEFAULTS.runOnSave),
    codeLens: bool(get('codeLens.enable'), DEFAULTS.codeLens),
    diagnosticMode: (DIAGNOSTIC_MODES as readonly unknown[]).includes(mode) ? (mode as DiagnosticMode) : DEFAULTS.diagnosticMode,
    baselinedFindings: (BASELINED_FINDINGS as readonly unknown[]).includes(baselined)
      ? (baselined as BaselinedFindings)
      : DEFAULTS.baselinedFindings,
    trace: trace === 'messages' || trace === 'verbose' ? trace : 'off',
  };
}

/** `interpreter`: the Python that runs the gradcheck workers (the resolved one, not the raw setting). */
export function toServerSettings(settings: GradlintSettings, interpreter: string): ServerSettings {
  return {
    select: settings.select === null ? null : [...settings.select],
    ignore: [...settings.ignore],
    severity: { ...settings.severity },
    runTimeout: settings.runTimeout,
    runMemoryLimitMb: settings.runMemoryLimitMb,
    runOnSave: settings.runOnSave,
    codeLens: settings.codeLens,
    diagnosticMode: settings.diagnosticMode,
    baselinedFindings: settings.baselinedFindings,
    interpreter,
  };
}

export function toInitializationOptions(
  settings: GradlintSettings,
  interpreter: string,
  workspaceTrusted: boolean,
): InitializationOptions {
  return { settings: toServerSettings(settings, interpreter), workspaceTrusted };
}

/** The server command line: `[interpreter, "-m", "gradlint", "lsp", ...args]`. */
export function serverCommand(interpreter: string, settings: GradlintSettings): { command: string; args: string[] } {
  return { command: interpreter, args: ['-m', 'gradlint', 'lsp', ...settings.args] };
}

/**
 * What a configuration change requires: `restart` (a new server process), `notify`
 * (send workspace/didChangeConfiguration so the server re-pulls), or `none`.
 * `affects(key)` answers ConfigurationChangeEvent.affectsConfiguration(`gradlint.${key}`).
 */
export function classifyChange(affects: (key: string) => boolean): 'restart' | 'notify' | 'none' {
  if (RESTART_KEYS.some((k) => affects(k))) {
    return 'restart';
  }
  if (ALL_KEYS.some((k) => affects(k))) {
    return 'notify';
  }
  return 'none';
}

/** JSON with comments and trailing commas (VS Code's settings.json) → a value, or undefined. */
export function parseJsonc(text: string): unknown {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') {
        out += text[++i] ?? '';
      } else if (c === '"') {
        inString = false;
      }
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else {
      out += c;
    }
  }
  // trailing commas (outside strings)
  let json = '';
  inString = false;
  for (let i = 0; i < out.length; i++) {
    const c = out[i];
    if (inString) {
      json += c;
      if (c === '\\') {
        json += out[++i] ?? '';
      } else if (c === '"') {
        inString = false;
      }
      continue;
    }
    if (c === '"') {
      inString = true;
    } else if (c === ',' && /^\s*[}\]]/.test(out.slice(i + 1))) {
      continue;
    }
    json += c;
  }
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

/** `gradlint.<key>` as written in a settings.json text (flat `"gradlint.key"` or nested). */
export function settingInJsonc(text: string, key: string): unknown {
  const value = parseJsonc(text);
  if (typeof value !== 'object' || value === null) {
    return undefined;
  }
  const obj = value as Record<string, unknown>;
  if (`gradlint.${key}` in obj) {
    return obj[`gradlint.${key}`];
  }
  const section = obj.gradlint;
  return typeof section === 'object' && section !== null ? (section as Record<string, unknown>)[key] : undefined;
}
