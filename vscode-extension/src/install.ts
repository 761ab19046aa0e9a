/**
 * Is *our* language server installed in an interpreter, and if not, what exactly to do.
 * Pure: no `vscode` import, so it is unit-tested.
 *
 * The server is the Python distribution `torch-gradlint` (import package and command:
 * `gradlint`). The PyPI name `gradlint` belongs to an unrelated project that also has a
 * top-level `gradlint` module, so `import gradlint` proves nothing: the check asks
 * importlib.metadata for `torch-gradlint`, which distributions provide the `gradlint`
 * module, and whether the module imports and has the same version as that metadata. The
 * extension then starts `python -m gradlint lsp`; answering `initialize` is the last check.
 *
 * The extension ships the wheel of its own version inside the .vsix (`server/`), so client
 * and server always match; without it, it installs the release of its own version from its git
 * tag (`torch-gradlint @ git+https://github.com/gradlint/gradlint@v<version>`), or from PyPI
 * once torch-gradlint is published there (PUBLISHED_ON_PYPI; docs/releasing.md).
 */
import * as path from 'path';

export const DISTRIBUTION = 'torch-gradlint';
export const REPOSITORY = 'https://github.com/gradlint/gradlint';
/** torch-gradlint is not on PyPI yet: until it is, a release is installed from its git tag. */
export const PUBLISHED_ON_PYPI = false;

/** What pip installs for a release of torch-gradlint (no wheel at hand). */
export function releaseRequirement(version: string): string {
  return PUBLISHED_ON_PYPI ? `${DISTRIBUTION}==${version}` : `${DISTRIBUTION} @ git+${REPOSITORY}@v${version}`;
}

/** The same, as a user types it in a shell. */
export function installCommand(python: string, version: string): string {
  return `${python} -m pip install "${releaseRequirement(version)}"`;
}
export const MIN_PYTHON: readonly [number, number] = [3, 10];

/** Runs in the interpreter (`python -c`); prints one JSON object. Python 2.7-safe syntax. */
export const PROBE_SCRIPT = `
import json, os, sys
r = {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "executable": sys.executable,
     "in_venv": sys.prefix != getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix)),
     "externally_managed": False, "pip": False, "version": None, "providers": [],
     "module_file": None, "module_version": None, "import_error": None}
try:
    import sysconfig
    r["externally_managed"] = os.path.isfile(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
except Exception:
    pass
try:
    import importlib.util
    r["pip"] = importlib.util.find_spec("pip") is not None
except Exception:
    pass
try:
    from importlib import metadata
    try:
        r["version"] = metadata.version("${DISTRIBUTION}")
    except metadata.PackageNotFoundError:
        pass
    try:
        r["providers"] = sorted(set(metadata.packages_distributions().get("gradlint", [])))
    except Exception:
        pass
except Exception:
    pass
try:
    import gradlint
    r["module_file"] = getattr(gradlint, "__file__", None)
    r["module_version"] = getattr(gradlint, "__version__", None)
except Exception as e:
    r["import_error"] = "%s: %s" % (type(e).__name__, e)
sys.stdout.write(json.dumps(r))
`;

/** What PROBE_SCRIPT reports. */
export interface Probe {
  python: string;
  executable: string;
  inVenv: boolean;
  externallyManaged: boolean;
  pip: boolean;
  /** torch-gradlint's version (importlib.metadata), null when it is not installed. */
  version: string | null;
  /** Distributions that provide the top-level `gradlint` module. */
  providers: string[];
  moduleFile: string | null;
  moduleVersion: string | null;
  importError: string | null;
}

export function parseProbe(stdout: string): Probe | undefined {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(stdout.trim().split('\n').pop() ?? '');
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null || typeof raw.python !== 'string') {
    return undefined;
  }
  const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    python: raw.python,
    executable: str(raw.executable) ?? '',
    inVenv: raw.in_venv === true,
    externallyManaged: raw.externally_managed === true,
    pip: raw.pip === true,
    version: str(raw.version),
    providers: Array.isArray(raw.providers) ? raw.providers.filter((p): p is string => typeof p === 'string') : [],
    moduleFile: str(raw.module_file),
    moduleVersion: str(raw.module_version),
    importError: str(raw.import_error),
  };
}

export type InstallState =
  | { kind: 'ok'; version: string }
  | { kind: 'python-too-old'; python: string }
  | { kind: 'not-installed' }
  /** `gradlint` comes from another distribution (or from no distribution at all: a stray folder). */
  | { kind: 'foreign'; others: string[]; moduleFile: string | null }
  | { kind: 'incompatible'; version: string }
  | { kind: 'broken'; version: string | null; detail: string };

function release(version: string): number[] {
  const m = /^\s*v?(\d+(?:\.\d+)*)/.exec(version);
  return m ? m[1].split('.').map(Number) : [];
}

/** Client and server versions work together when MAJOR.MINOR agree (the .vsix ships its own). */
export function compatible(server: string, client: string): boolean {
  const [a, b] = [release(server), release(client)];
  return a.length >= 2 && b.length >= 2 && a[0] === b[0] && a[1] === b[1];
}

export function compatibleRange(client: string): string {
  const [major, minor] = release(client);
  return `${major}.${minor}.x`;
}

function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

export function assess(probe: Probe, extensionVersion: string): InstallState {
  const [major, minor] = release(probe.python);
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    return { kind: 'python-too-old', python: probe.python };
  }
  const others = probe.providers.filter((d) => normalize(d) !== DISTRIBUTION);
  if (others.length) {
    return { kind: 'foreign', others, moduleFile: probe.moduleFile };
  }
  if (probe.version === null) {
    return probe.moduleFile !== null ? { kind: 'foreign', others: [], moduleFile: probe.moduleFile } : { kind: 'not-installed' };
  }
  if (probe.importError !== null) {
    return { kind: 'broken', version: probe.version, detail: `import gradlint fails: ${probe.importError}` };
  }
  if (probe.moduleVersion !== probe.version) {
    return {
      kind: 'broken',
      version: probe.version,
      detail: `its files are version ${probe.moduleVersion ?? 'unknown'}, its metadata ${probe.version}`,
    };
  }
  if (!compatible(probe.version, extensionVersion)) {
    return { kind: 'incompatible', version: probe.version };
  }
  return { kind: 'ok', version: probe.version };
}

/** Where the server comes from: the wheel in the .vsix, else PyPI at the extension's version. */
export interface InstallSource {
  version: string;
  /** Absolute path of the bundled wheel, when the .vsix has one. */
  wheel?: string;
}

export function bundledWheelName(version: string): string {
  return `torch_gradlint-${version}-py3-none-any.whl`;
}

export function requirement(source: InstallSource): string {
  return source.wheel ?? releaseRequirement(source.version);
}

/** A program and its arguments; the steps of an action run one after the other. */
export type Step = string[];

export interface Action {
  /** The button. */
  label: string;
  steps: Step[];
  /** Set when the steps create this interpreter: the extension points gradlint.interpreter at it. */
  newInterpreter?: string;
}

export interface Remedy {
  /** Status bar detail. */
  status: string;
  /** One notification: what is wrong and what to do. */
  message: string;
  action?: Action;
}

export interface RemedyContext {
  interpreter: string;
  probe?: Probe;
  source: InstallSource;
  /** Where "Install in a new venv" creates one (the extension's global storage). */
  venvDir: string;
  platform?: NodeJS.Platform;
}

export function venvPython(dir: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? path.win32.join(dir, 'Scripts', 'python.exe') : path.posix.join(dir, 'bin', 'python');
}

function pip(python: string, ...args: string[]): Step {
  return [python, '-m', 'pip', ...args];
}

export function remedy(state: InstallState, ctx: RemedyContext): Remedy | undefined {
  const { interpreter, probe, source } = ctx;
  const req = requirement(source);
  const origin = source.wheel
    ? `the wheel bundled with this extension (${DISTRIBUTION} ${source.version})`
    : PUBLISHED_ON_PYPI ? `${DISTRIBUTION}==${source.version} from PyPI` : `${DISTRIBUTION} ${source.version} from its release tag`;
  const install = (python: string): Step => pip(python, 'install', req);
  // pip cannot install into a Python managed by the system (PEP 668), nor into one without pip:
  // a venv of the extension's own is the way out.
  if (state.kind !== 'ok' && state.kind !== 'python-too-old' && probe && !probe.inVenv && (probe.externallyManaged || !probe.pip)) {
    const why = probe.externallyManaged ? 'a Python managed by your system (pip may not install into it)' : 'a Python without pip';
    const python = venvPython(ctx.venvDir, ctx.platform);
    return {
      status: state.kind === 'not-installed' ? 'not installed' : 'wrong gradlint',
      message:
        `gradlint: ${DISTRIBUTION} (the gradlint language server) is ${state.kind === 'not-installed' ? 'not installed' : 'not usable'} in ${interpreter}, ${why}. ` +
        `"Install in a new venv" creates ${ctx.venvDir} with ${origin} and sets gradlint.interpreter to it; ` +
        `or set gradlint.interpreter to a Python environment where you ran \`${installCommand('python', source.version)}\`.`,
      action: {
        label: 'Install in a new venv',
        steps: [[interpreter, '-m', 'venv', ctx.venvDir], install(python)],
        newInterpreter: python,
      },
    };
  }
  switch (state.kind) {
    case 'ok':
      return undefined;
    case 'python-too-old':
      return {
        status: `Python ${state.python}`,
        message:
          `gradlint: ${interpreter} is Python ${state.python}; the gradlint language server needs Python ` +
          `${MIN_PYTHON.join('.')} or newer. Set gradlint.interpreter to a newer Python.`,
      };
    case 'not-installed':
      return {
        status: 'not installed',
        message:
          `gradlint: ${DISTRIBUTION} (the gradlint language server) is not installed in ${interpreter}. ` +
          `Install it (\`${installCommand(interpreter, source.version)}\`) to see gradient diagnostics in this editor.`,
        action: { label: `Install ${DISTRIBUTION}`, steps: [install(interpreter)] },
      };
    case 'foreign': {
      if (state.others.length === 0) {
        return {
          status: 'wrong gradlint',
          message:
            `gradlint: ${interpreter} imports \`gradlint\` from ${state.moduleFile}, which is not the ${DISTRIBUTION} ` +
            `package (the gradlint language server). Install ${DISTRIBUTION}, and remove that folder from the path if it stays in the way.`,
          action: { label: `Install ${DISTRIBUTION}`, steps: [install(interpreter)] },
        };
      }
      const names = state.others.map((d) => `"${d}"`).join(', ');
      const remove = [...state.others, ...(probe?.version ? [DISTRIBUTION] : [])];
      return {
        status: 'wrong gradlint',
        message:
          `gradlint: the \`gradlint\` package in ${interpreter} is another project (distribution ${names}), not the ` +
          `gradlint language server (${DISTRIBUTION}). Both install a \`gradlint\` module, so they cannot share an ` +
          `environment: uninstall it and install ${DISTRIBUTION} (\`${interpreter} -m pip uninstall ${remove.join(' ')}\`, ` +
          `then \`${installCommand(interpreter, source.version)}\`), or set gradlint.interpreter to another Python.`,
        action: {
          label: `Replace with ${DISTRIBUTION}`,
          steps: [pip(interpreter, 'uninstall', '-y', ...remove), install(interpreter)],
        },
      };
    }
    case 'incompatible':
      return {
        status: `${DISTRIBUTION} ${state.version}`,
        message:
          `gradlint: ${interpreter} has ${DISTRIBUTION} ${state.version}; this extension (${source.version}) needs ` +
          `${DISTRIBUTION} ${compatibleRange(source.version)}. Install ${DISTRIBUTION} ${source.version} ` +
          `(\`${installCommand(interpreter, source.version)}\`).`,
        action: { label: `Install ${DISTRIBUTION} ${source.version}`, steps: [install(interpreter)] },
      };
    case 'broken':
      return {
        status: 'broken install',
        message:
          `gradlint: ${DISTRIBUTION}${state.version ? ` ${state.version}` : ''} in ${interpreter} is broken (${state.detail}). ` +
          `Reinstall it (\`${installCommand(interpreter, source.version).replace(' install ', ' install --force-reinstall ')}\`).`,
        action: {
          label: `Reinstall ${DISTRIBUTION}`,
          steps: [pip(interpreter, 'install', '--force-reinstall', '--no-deps', req), install(interpreter)],
        },
      };
  }
}

/** The language server did not answer `initialize` although the package looked right. */
export function serverFailed(ctx: RemedyContext, version: string, detail: string): Remedy {
  return remedy(
    { kind: 'broken', version, detail: `\`${ctx.interpreter} -m gradlint lsp\` did not answer initialize: ${detail}` },
    ctx,
  ) as Remedy;
}

/**
 * Restricted Mode ignores a gradlint.interpreter set by the workspace; when the interpreter used
 * instead does not work, say so first (not just "not installed").
 */
export function ignoredWorkspaceInterpreter(workspaceValue: string, used: string | undefined): string {
  return (
    `gradlint: this workspace sets gradlint.interpreter to "${workspaceValue}", which is ignored until you trust ` +
    `the workspace (Restricted Mode); ${used ? `gradlint used ${used} instead` : 'no other Python was found'}. ` +
    'Trust the workspace, or set gradlint.interpreter in your User settings (they apply in Restricted Mode too).'
  );
}

function quotePosix(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function quotePowerShell(arg: string): string {
  return /^[\w@%+=:,./\\-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "''")}'`;
}

/** One line for a terminal: the steps in order, stopping at the first failure; exits when all succeed. */
export function shellLine(steps: Step[], platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') {
    const cmd = (s: Step) => `& ${s.map(quotePowerShell).join(' ')}`;
    return steps.reduceRight((inner, s) => `${cmd(s)}; if ($?) { ${inner} }`, 'exit');
  }
  return [...steps.map((s) => s.map(quotePosix).join(' ')), 'exit'].join(' && ');
}
