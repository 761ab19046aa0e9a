/**
 * Turns what `gradlint.runGradcheck` / `gradlint.runGradcheckFile` return (gradlint.run-result
 * objects, see docs/run-result-schema.md) into one line for a notification. Pure.
 */

/**
 * `fail`: a gradient problem or a run that ended badly (✗: an error notification);
 * `warning`: first-order gradients match but something is off (⚠: a warning notification);
 * `other`: nothing proved (inconclusive, no inputs: an information notification).
 */
export type Outcome = 'pass' | 'fail' | 'warning' | 'other';

export interface RunSummary {
  outcome: Outcome;
  message: string;
}

interface ResultLike {
  status?: unknown;
  verdict?: unknown;
  summary?: unknown;
  message?: unknown;
  target?: { qualname?: unknown; function_class?: unknown } | null;
  /** The server's name for the target (`{target, result}` wrapper). */
  display?: string;
}

const FAILING = new Set(['fail', 'error', 'crash', 'timeout', 'memory', 'output_limit']);

/**
 * Accepts a run result, `{target: "Name", result: {...run result...}}` (what the server wraps it
 * in), `{results: [...]}`, or a list of any of these.
 */
function asResults(value: unknown): ResultLike[] {
  if (Array.isArray(value)) {
    return value.flatMap((v) => asResults(v));
  }
  if (typeof value === 'object' && value !== null) {
    const v = value as { results?: unknown; result?: unknown; status?: unknown; target?: unknown };
    if (Array.isArray(v.results)) {
      return asResults(v.results);
    }
    if (typeof v.status === 'string') {
      return [v as ResultLike];
    }
    if (typeof v.result === 'object' && v.result !== null && typeof (v.result as ResultLike).status === 'string') {
      const inner = v.result as ResultLike;
      return [typeof v.target === 'string' ? { ...inner, display: v.target } : inner];
    }
  }
  return [];
}

function label(r: ResultLike): string {
  if (typeof r.display === 'string' && r.display) {
    return `${r.display}: `;
  }
  const t = r.target;
  const name = t && (typeof t.qualname === 'string' ? t.qualname : typeof t.function_class === 'string' ? t.function_class : '');
  return name ? `${name}: ` : '';
}

/** The worker could not start (no torch, no interpreter): the server's advice says what to do. */
function advice(r: ResultLike): string {
  if (r.verdict !== 'worker_unavailable' || typeof r.message !== 'string' || !r.message.trim()) {
    return '';
  }
  return `. ${r.message.trim().split('\n').slice(0, 2).join(' ')}`;
}

export function summarizeRun(value: unknown): RunSummary | undefined {
  const results = asResults(value);
  if (results.length === 0) {
    return undefined;
  }
  const line = (r: ResultLike) =>
    label(r) + (typeof r.summary === 'string' && r.summary ? r.summary : `gradcheck ${String(r.status)}`) + advice(r);
  const failing = results.filter((r) => typeof r.status === 'string' && FAILING.has(r.status));
  if (results.length === 1) {
    const r = results[0];
    const outcome: Outcome =
      r.status === 'pass' ? 'pass' : failing.length ? 'fail' : r.status === 'warning' ? 'warning' : 'other';
    return { outcome, message: line(r) };
  }
  const passed = results.filter((r) => r.status === 'pass').length;
  if (failing.length) {
    const first = line(failing[0]);
    return {
      outcome: 'fail',
      message: `gradcheck: ${failing.length} of ${results.length} targets failed (${passed} passed). ${first}`,
    };
  }
  const warned = results.filter((r) => r.status === 'warning').length;
  return {
    outcome: passed === results.length ? 'pass' : warned ? 'warning' : 'other',
    message: `gradcheck: ${passed} of ${results.length} targets passed` + (warned ? ` (${warned} with a warning)` : ''),
  };
}

/** Which notification a run's outcome gets: its icon must say what happened. */
export function notificationKind(outcome: Outcome): 'error' | 'warning' | 'information' | null {
  return outcome === 'pass' ? null : outcome === 'fail' ? 'error' : outcome === 'warning' ? 'warning' : 'information';
}
