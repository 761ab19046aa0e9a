"""Run results (docs/run-result-schema.md) as text for terminals and Markdown for editors."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import __version__
from .result import RunResult, Status

MARKS: Mapping[Status, str] = {"pass": "✓", "fail": "✗", "error": "✗", "crash": "✗", "memory": "✗", "timeout": "⏱",
         "output_limit": "✗", "cancelled": "■", "no_inputs": "?", "inconclusive": "⚠", "warning": "⚠"}


def mark(result: RunResult) -> str:
    return MARKS.get(result.status, "?")


def headline(result: RunResult) -> str:
    """The summary without its leading status mark (callers add their own)."""
    summary = result.summary or result.status
    for symbol in ("✓ ", "✗ ", "⏱ ", "■ ", "⚠ "):
        if summary.startswith(symbol):
            return summary[len(symbol):]
    return summary


def seconds(result: RunResult) -> float | None:
    value = result.timings.get("total_s") or result.timings.get("wall_s")
    return float(value) if isinstance(value, (int, float)) else None


def _number(value: Any, digits: int = 6) -> str:
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}"
    return "—" if value is None else str(value)


def _index(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def failing_check(result: RunResult) -> Mapping[str, Any] | None:
    name = result.failed_check
    for check in result.checks:
        if check.get("name") == name or (name is None and check.get("status") in ("fail", "error")):
            return check
    return None


def worst_rows(result: RunResult) -> list[Mapping[str, Any]]:
    check = failing_check(result)
    if check is None:
        return []
    return list((check.get("details") or {}).get("worst") or [])


def _inputs_line(inputs: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for item in inputs:
        if item.get("kind") == "tensor":
            shape = "×".join(str(n) for n in item.get("shape") or []) or "scalar"
            promoted = f" (promoted from {item['promoted_from']})" if item.get("promoted_from") else ""
            grad = ", requires_grad" if item.get("requires_grad") else ""
            lines.append(f"{item.get('name')}: {item.get('dtype')}[{shape}]{grad}{promoted} "
                         f"{item.get('preview', '')}".rstrip())
        else:
            lines.append(f"{item.get('name')}: {item.get('repr', item.get('type', 'value'))}")
    return lines


def _where(result: RunResult, relative) -> str | None:
    location = result.location
    if not location or not location.get("file"):
        return None
    function = f" ({location.get('function')})" if location.get("function") else ""
    return f"{relative(location['file'])}:{location.get('line')}{function}"


def render_text(result: RunResult, name: str, relative=lambda p: p,
                source: str | None = None) -> str:
    """A few lines for a terminal: the outcome, where, why, inputs, worst elements."""
    lines = [f"{mark(result)} {name}: {headline(result)}"]
    where = _where(result, relative)
    if where and not result.passed:
        lines.append(f"    at {where}")
    if result.message and not result.passed:
        lines.append(f"    {result.message}")
    if source:
        lines.append(f"    inputs: {source}")
    for line in _inputs_line(result.inputs):
        lines.append(f"      {line}")
    rows = worst_rows(result)
    if rows:
        lines.append("    worst elements:")
        lines.append(f"      {'input':<14} {'output':<14} {'numerical':>12} {'analytical':>12} {'|Δ|':>10}")
        for row in rows:
            lines.append(f"      {row.get('input')}{_index(row.get('input_index')):<{max(1, 13 - len(str(row.get('input'))))}} "
                         f"{row.get('output_name', row.get('output'))}{_index(row.get('output_index'))!s:<6} "
                         f"{_number(row.get('numerical')):>12} {_number(row.get('analytical')):>12} "
                         f"{_number(row.get('abs_error'), 3):>10}")
    exception = result.exception
    if exception:
        lines.append(f"    {exception.get('type')}: {exception.get('message')}")
        for frame in (exception.get("traceback") or [])[-3:]:
            lines.append(f"      {relative(frame.get('file'))}:{frame.get('line')} in {frame.get('function')}: "
                         f"{(frame.get('code') or '').strip()}")
    crash = result.crash
    if crash and crash.get("description"):
        lines.append(f"    {crash['description']}")
    tail = result.stderr_tail.strip()
    if tail and result.failed and result.status != "fail":  # the run could not check: its output says why
        lines.append("    output (last lines):")
        lines.extend(f"      {line}" for line in tail.splitlines()[-5:])
    return "\n".join(lines)


def render_markdown(result: RunResult, name: str, relative=lambda p: p,
                    source: str | None = None) -> str:
    """The report an editor shows: outcome, location, worst-element table, checks."""
    parts = [f"### {mark(result)} gradcheck `{name}`", "", f"**{headline(result)}**"]
    if result.message and not result.passed:
        parts += ["", str(result.message)]
    where = _where(result, relative)
    if where and not result.passed:
        parts += ["", f"Where: `{where}`"]
    rows = worst_rows(result)
    if rows:
        # four columns, the element pair in one: an editor shows the report beside the code, in
        # half a window or less (six columns of unbreakable code spans ran off its right edge)
        parts += ["", "| input → output element | numerical | analytical | \\|Δ\\| |", "|---|---:|---:|---:|"]
        for row in rows:
            parts.append(f"| `{row.get('input')}{_index(row.get('input_index'))}` → "
                         f"`{row.get('output_name', row.get('output'))}{_index(row.get('output_index'))}` "
                         f"| {_number(row.get('numerical'))} | {_number(row.get('analytical'))} "
                         f"| {_number(row.get('abs_error'), 3)} |")
    inputs = _inputs_line(result.inputs)
    if inputs:
        parts += ["", f"Inputs{f' ({source})' if source else ''}:"]
        parts += [f"- `{line}`" for line in inputs]
    checks = result.checks
    if checks:
        parts += ["", "| check | result | time |", "|---|---|---:|"]
        for check in checks:
            status = check.get("status")
            symbol = {"pass": "✓", "fail": "✗", "error": "✗", "skipped": "–"}.get(status, status)
            detail = check.get("message") if status in ("skipped",) else check.get("verdict") or ""
            parts.append(f"| {check.get('name')} | {symbol} {detail or ''} | "
                         f"{_number(check.get('seconds'), 2)} s |")
    exception = result.exception
    if exception:
        parts += ["", f"`{exception.get('type')}: {exception.get('message')}`"]
        frames = exception.get("traceback") or []
        if frames:
            parts += ["", "```"] + [f"{relative(f.get('file'))}:{f.get('line')} in {f.get('function')}: "
                                    f"{(f.get('code') or '').strip()}" for f in frames] + ["```"]
    tail = result.stderr_tail.strip()
    if tail:
        parts += ["", "Output (last lines):", "```", *tail.splitlines()[-15:], "```"]
    environment = result.environment
    if environment:
        parts += ["", f"torch {environment.get('torch')}, Python {environment.get('python')}, "
                      f"{_number(seconds(result), 3)} s"]
    return "\n".join(parts)


TORCH_REQUIREMENT = "torch==2.13.0"  # the torch gradlint is tested with (the `torch` extra)
# gradlint and torch together, as the README's Install says (torch-gradlint is not on PyPI yet:
# a release is installed from its git tag; docs/releasing.md says when this changes)
WITH_TORCH = f"torch-gradlint[torch] @ git+https://github.com/gradlint/gradlint@v{__version__}"


def worker_advice(reason: str, python: str, choose: str) -> list[str]:
    """What to do when the gradcheck worker cannot start in ``python`` (``reason`` is the
    worker's own one line). ``choose`` is how this front end picks another interpreter
    (`gradlint run --python PATH`, the editor's `interpreter` setting)."""
    lines = [f"Run gradcheck with a Python that has torch: {choose}."]
    if "torch" in reason:
        lines.append(f"Or install torch into {python}: `{python} -m pip install {TORCH_REQUIREMENT}` "
                     f"(or gradlint and torch together: `pip install \"{WITH_TORCH}\"`).")
    return lines
