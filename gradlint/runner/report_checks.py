"""The compile and precision checks of a result (docs/run-result-schema.md 3.6, 3.7), for the
reports: which comparisons ran on which backends and how long compiling took; each precision
probe's errors, their ratio and the factor k.

``report.py`` places these lines in the text and Markdown reports; ``gradlint run`` prints
``passed_lines`` under a passing target, so that a ✓ says which of these checks it covers.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .result import RunResult

Check = Mapping[str, Any]

SYMBOLS = {"pass": "✓", "fail": "✗", "error": "✗", "skipped": "–"}


def is_compile_check(check: Check) -> bool:
    """``func.grad`` (eager torch.func) and ``compile …`` checks (the ``compile`` option)."""
    name = str(check.get("name") or "")
    return name == "func.grad" or name.startswith("compile")


def is_precision_check(check: Check) -> bool:
    return str(check.get("name") or "").startswith("precision (")


def compile_checks(result: RunResult) -> list[Check]:
    return [check for check in result.checks if is_compile_check(check)]


def precision_checks(result: RunResult) -> list[Check]:
    return [check for check in result.checks if is_precision_check(check)]


def _details(check: Check) -> Mapping[str, Any]:
    details = check.get("details")
    return details if isinstance(details, Mapping) else {}


def _num(value: Any, digits: int = 4) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return f"{value:.{digits}g}"


def _symbol(check: Check) -> str:
    if check.get("status") == "fail" and check.get("verdict") == "compile_unsupported":
        return "⚠"
    return SYMBOLS.get(str(check.get("status")), "?")


def _why_skipped(check: Check) -> str:
    text = str(check.get("message") or "skipped")
    text = text[len("skipped: "):] if text.startswith("skipped: ") else text
    return text.split(" (")[0]


def _outcome(check: Check) -> str:
    """What one compile comparison found, in a few words."""
    details = _details(check)
    if check.get("status") == "skipped":
        return f"skipped: {_why_skipped(check)}"
    if check.get("verdict") == "compile_unsupported":
        reason = details.get("reason") or details.get("torch_message") or check.get("message") or ""
        return f"graph break: {str(reason).split(' (')[0]}"
    pattern = details.get("pattern")
    found = f"max |Δ| {_num(details.get('max_difference'))}"
    if isinstance(pattern, Mapping) and pattern.get("text"):
        return f"{found}: {pattern['text']}"
    worst = details.get("worst_element")
    if isinstance(worst, Mapping) and check.get("status") == "fail":
        index = worst.get("index")
        where = f"{worst.get('tensor')}{list(index) if isinstance(index, (list, tuple)) else ''}"
        return f"{found} at {where}: eager {_num(worst.get('eager'))}, compiled {_num(worst.get('compiled'))}"
    if check.get("status") == "error":
        return str(check.get("message") or "error")
    return found


def compile_time(checks: Sequence[Check]) -> float:
    return sum(float(_details(c).get("compile_seconds") or 0.0) for c in checks)


def backends(checks: Sequence[Check]) -> list[str]:
    found = [str(_details(c).get("backend")) for c in checks if _details(c).get("backend")]
    return list(dict.fromkeys(found))


def _compile_header(checks: Sequence[Check]) -> str:
    ran = [c for c in checks if c.get("status") != "skipped"]
    on = ", ".join(backends(checks)) or "no backend"
    return (f"torch.compile and torch.func ({on}): {len(ran)} of {len(checks)} comparisons ran, "
            f"{compile_time(checks):.1f} s compiling")


def _precision_header(check: Check) -> str:
    details = _details(check)
    return (f"{check.get('name')}, k = {_num(details.get('factor'), 3)}: each output and gradient's max |Δ| "
            f"against float64, and the same for {details.get('reference_label') or 'the reference'} "
            f"at {details.get('dtype')}")


def _probe_rows(check: Check) -> list[tuple[str, Mapping[str, Any] | None, str | None]]:
    """(probe, tensor row or None, why the probe was skipped)."""
    rows: list[tuple[str, Mapping[str, Any] | None, str | None]] = []
    for probe in _details(check).get("probes") or []:
        if not isinstance(probe, Mapping):
            continue
        name = str(probe.get("probe"))
        if probe.get("skipped"):
            rows.append((name, None, str(probe["skipped"])))
            continue
        for tensor in probe.get("tensors") or []:
            if isinstance(tensor, Mapping):
                rows.append((name, tensor, None))
    return rows


def _tensor_name(row: Mapping[str, Any]) -> str:
    name = str(row.get("name"))
    return name if name.startswith("output") else f"grad {name}"


# -- text -------------------------------------------------------------------------------------

def text_lines(result: RunResult) -> list[str]:
    """Lines (indented for ``render_text``) on the compile and precision checks."""
    lines: list[str] = []
    checks = compile_checks(result)
    if checks:
        lines.append(f"    {_compile_header(checks)}:")
        width = max(len(str(c.get("name"))) for c in checks)
        for check in checks:
            took = _details(check).get("compile_seconds", check.get("seconds"))
            timing = f"{float(took):6.2f} s" if isinstance(took, (int, float)) and check.get("status") != "skipped" \
                else " " * 8
            lines.append(f"      {_symbol(check)} {str(check.get('name')):<{width}}  {timing}  {_outcome(check)}")
    for check in precision_checks(result):
        if check.get("status") == "skipped":
            lines.append(f"    {check.get('name')}: skipped: {_why_skipped(check)}")
            continue
        lines.append(f"    {_precision_header(check)}:")
        rows = _probe_rows(check)
        probe_width = max([len(p) for p, _, _ in rows] + [5])
        lines.append(f"      {'probe':<{probe_width}}  {'':<10} {'error':>10} {'reference':>10} {'ratio':>7} "
                     f"{'allowed':>10}")
        for probe, row, skipped in rows:
            if row is None:
                lines.append(f"      {probe:<{probe_width}}  skipped: {skipped}")
                continue
            lines.append(f"      {probe:<{probe_width}}  {_tensor_name(row):<10} {_num(row.get('error')):>10} "
                         f"{_num(row.get('reference_error')):>10} {_num(row.get('ratio'), 3):>6}× "
                         f"{_num(row.get('allowed')):>10} {'✓' if row.get('passed') else '✗'}")
        for note in _details(check).get("reference_notes") or []:
            lines.append(f"      reference: {note}")
    return lines


def passed_lines(result: RunResult) -> list[str]:
    """One line per kind of these checks, for a target that passed (``gradlint run`` prints
    no report for a pass)."""
    lines: list[str] = []
    checks = compile_checks(result)
    if checks:
        ran = [c for c in checks if c.get("status") != "skipped"]
        names = ", ".join(str(c.get("name")) for c in ran) or "none"
        skipped = len(checks) - len(ran)
        lines.append(f"    compile: {len(ran)} comparison{'s agree' if len(ran) != 1 else ' agrees'} with eager "
                     f"({names}); {compile_time(checks):.1f} s compiling"
                     f"{f'; {skipped} skipped' if skipped else ''}")
    for check in precision_checks(result):
        details = _details(check)
        worst = details.get("worst_tensor")
        if check.get("status") == "skipped":
            lines.append(f"    {check.get('name')}: skipped: {_why_skipped(check)}")
        elif isinstance(worst, Mapping):
            lines.append(f"    {check.get('name')}: within k = {_num(details.get('factor'), 3)} × the error of "
                         f"{details.get('reference_label') or 'the reference'} at {details.get('dtype')}; worst "
                         f"{_num(worst.get('ratio'), 3)}× ({_tensor_name(worst)}, {worst.get('probe')}: "
                         f"{_num(worst.get('error'))} vs {_num(worst.get('reference_error'))})")
    untaken = result.extra.get("untaken_branches")
    if isinstance(untaken, list) and untaken:
        shown = ", ".join(str(arm.get("line")) for arm in untaken[:6] if isinstance(arm, Mapping))
        lines.append(f"    not covered: backward's branch{'es' if len(untaken) > 1 else ''} at line"
                     f"{'s' if len(untaken) > 1 else ''} {shown} (no input checked took "
                     f"{'them' if len(untaken) > 1 else 'it'})")
    step = result.extra.get("coarser_step")
    if isinstance(step, Mapping) and isinstance(step.get("to"), Mapping):
        to = step["to"]
        settings = f"eps={_num(to.get('eps'), 3)}, atol={_num(to.get('atol'), 3)}, rtol={_num(to.get('rtol'), 3)}"
        if step.get("grain") == "noise":
            lines.append(f"    checked at a step for forward's noise (~{_num(step.get('noise'), 2)} at eps=1e-06: a "
                         f"solver's tolerance?): {settings}")
        elif step.get("float64_error"):
            lines.append(f"    checked in float32, at its resolution: forward raises in float64 "
                         f"({str(step['float64_error'])[:100]}) ({settings})")
        else:
            lines.append(f"    checked at float32's resolution: forward computes in {step.get('grain')} inside ({settings})")
    return lines


# -- Markdown ---------------------------------------------------------------------------------

def markdown_parts(result: RunResult) -> list[str]:
    """Sections for ``render_markdown``: a table of the compile comparisons and one of each
    precision probe."""
    parts: list[str] = []
    checks = compile_checks(result)
    if checks:
        parts += ["", f"**{_compile_header(checks)}**", "",
                  "| comparison | result | compiling |", "|---|---|---:|"]
        for check in checks:
            took = _details(check).get("compile_seconds")
            shown = f"{float(took):.2f} s" if isinstance(took, (int, float)) else "—"
            parts.append(f"| {check.get('name')} | {_symbol(check)} {_escape(_outcome(check))} | {shown} |")
    for check in precision_checks(result):
        if check.get("status") == "skipped":
            parts += ["", f"**{check.get('name')}**: skipped: {_escape(_why_skipped(check))}"]
            continue
        parts += ["", f"**{_escape(_precision_header(check))}**", ""]
        parts += ["| probe | of | error | reference | ratio | |", "|---|---|---:|---:|---:|---|"]
        for probe, row, skipped in _probe_rows(check):
            if row is None:
                parts.append(f"| {_escape(probe)} | skipped: {_escape(str(skipped))} | | | | |")
                continue
            parts.append(f"| {_escape(probe)} | {_tensor_name(row)} | {_num(row.get('error'))} | "
                         f"{_num(row.get('reference_error'))} | {_num(row.get('ratio'), 3)}× | "
                         f"{'✓' if row.get('passed') else '✗'} |")
    return parts


def _escape(text: str) -> str:
    return text.replace("|", "\\|")
