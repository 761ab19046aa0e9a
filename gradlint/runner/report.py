"""Run results (docs/run-result-schema.md) as text for terminals and Markdown for editors."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .. import __version__
from . import report_checks
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


def _message_lines(result: RunResult) -> list[str]:
    """The message's lines the headline does not already say (torch's sentence once)."""
    if not result.message or result.passed:
        return []
    shown = headline(result)
    return [line for line in str(result.message).splitlines() if line.strip() and line.strip() not in shown]


def _exception_said(result: RunResult, exception: Mapping[str, Any]) -> bool:
    """Did the headline or the message already say the exception's message?"""
    text = str(exception.get("message") or "").strip()
    first = text.splitlines()[0] if text else ""
    return bool(first) and (first in headline(result) or first in str(result.message or ""))


def causes(result: RunResult) -> list[Mapping[str, Any]]:
    """The linter's findings on the same target (runner/causes.py), as likely causes."""
    return list(result.related_findings or ())


def render_text(result: RunResult, name: str, relative=lambda p: p,
                source: str | None = None) -> str:
    """A few lines for a terminal: the outcome, where, why, likely causes, inputs, worst elements."""
    lines = [f"{mark(result)} {name}: {headline(result)}"]
    where = _where(result, relative)
    if where and not result.passed:
        lines.append(f"    at {where}")
    lines.extend(f"    {line}" for line in _message_lines(result))
    for finding in causes(result):
        lines.append(f"    likely cause: {relative(finding.get('file'))}:{finding.get('line')}: "
                     f"{finding.get('code')} {finding.get('message')}")
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
    lines.extend(report_checks.text_lines(result))  # compile comparisons, precision probes
    exception = result.exception
    if exception and _exception_said(result, exception) and not exception.get("traceback"):
        exception = None  # torch's sentence once: the summary said it and there is nothing more to show
    if exception:
        said = _exception_said(result, exception)
        lines.append(f"    {exception.get('type')}{' raised at:' if said else ': ' + str(exception.get('message'))}")
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
                    source: str | None = None, link: Callable[[str, int], str | None] | None = None,
                    rule_link: Callable[[str, str], str | None] | None = None) -> str:
    """The report an editor shows: outcome, location, likely causes, worst-element table, checks.
    ``link(file, line)`` makes a link to a source line, ``rule_link(code, name)`` to a rule's docs."""
    parts = [f"### {mark(result)} gradcheck `{name}`", "", f"**{headline(result)}**"]
    message = _message_lines(result)
    if message:
        parts += ["", "  \n".join(message)]
    where = _where(result, relative)
    if where and not result.passed:
        parts += ["", f"Where: `{where}`"]
    found = causes(result)
    if found:
        parts += ["", "Likely causes (`gradlint check` on the same code):"]
        for finding in found:
            code, line = str(finding.get("code")), finding.get("line")
            docs = rule_link(code, str(finding.get("name") or code)) if rule_link else None
            place = f"{relative(finding.get('file'))}:{line}"
            target = link(str(finding.get("file")), int(line)) if link and isinstance(line, int) else None
            parts.append(f"- {f'[{code}]({docs})' if docs else f'`{code}`'} "
                         f"{f'[{place}]({target})' if target else f'`{place}`'}: {finding.get('message')}")
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
    parts += report_checks.markdown_parts(result)  # compile comparisons, precision probes
    checks = [check for check in result.checks
              if not report_checks.is_compile_check(check) and not report_checks.is_precision_check(check)]
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
        said = _exception_said(result, exception)
        parts += ["", f"`{exception.get('type')}` raised at:" if said
                  else f"`{exception.get('type')}: {exception.get('message')}`"]
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
