"""Rendering findings: text, JSON, SARIF 2.1.0 and GitHub workflow commands."""

from __future__ import annotations

import base64
import json
import os
from collections import Counter
from urllib.parse import quote_from_bytes
from pathlib import Path
from typing import Collection, Iterable, Sequence

from .. import __version__
from ..findings import Applicability, Finding, Severity

_COLORS = {"bold": "1", "red": "31", "yellow": "33", "cyan": "36", "green": "32", "dim": "2"}


class Style:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, *names: str) -> str:
        if not self.enabled or not names:
            return text
        codes = ";".join(_COLORS[name] for name in names)
        return f"\x1b[{codes}m{text}\x1b[0m"


def fix_marker(finding: Finding, unsafe: bool, blocked: Collection[str] = ()) -> str:
    """` [*]` when `--fix` (with `--unsafe-fixes` if given) fixes this finding. ``blocked``:
    paths of files `--fix` leaves alone (they do not parse)."""
    fix = finding.fix
    if fix is None or finding.path in blocked:
        return ""
    if fix.applicability is Applicability.SAFE or unsafe:
        return " [*]"
    return ""


def failing(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that make `gradlint check` exit 1: all but hints."""
    return [f for f in findings if f.severity is not Severity.HINT]


def location(f: Finding) -> str:
    """``path:line:column``, or ``nb.ipynb:cell 3:line:column`` in a notebook (1-based)."""
    cell = "" if f.cell is None else f"cell {f.cell + 1}:"
    return f"{f.path}:{cell}{f.range.start.line}:{f.range.start.column + 1}"


def render_text(findings: Sequence[Finding], style: Style, unsafe: bool,
                blocked: Collection[str] = ()) -> list[str]:
    lines = []
    for f in findings:
        where = f"{location(f)}:"
        color = "red" if f.severity is Severity.ERROR else "yellow"
        if f.severity is Severity.HINT:
            code = f"{style(f.code, 'dim', 'bold')} {style('hint:', 'dim')}"
        else:
            code = style(f.code, color, "bold")
        lines.append(f"{style(where, 'bold')} {code} {f.message}"
                     f"{style(fix_marker(f, unsafe, blocked), 'cyan')}")
    return lines


def summary(findings: Sequence[Finding], style: Style, *, unsafe: bool, fixed: int = 0,
            fixing: bool = False, fixable: int | None = None,
            blocked: Collection[str] = ()) -> list[str]:
    """The closing lines. ``fixable``: how many fixes `--fix` would apply, counted by
    fixing a copy (None: count the findings that carry an applicable fix). Hints are
    counted apart: they do not fail the check."""
    hints = len(findings) - len(failing(findings))
    lines = _problems(failing(findings), style, unsafe=unsafe, fixed=fixed, fixing=fixing,
                      fixable=fixable, blocked=blocked)
    if hints:
        lines.append(f"{hints} hint{'s' if hints != 1 else ''} (shown, but not counted as "
                     f"problems).")
    return lines


def _problems(findings: Sequence[Finding], style: Style, *, unsafe: bool, fixed: int,
              fixing: bool, fixable: int | None, blocked: Collection[str]) -> list[str]:
    count = len(findings)
    fixing_applies = [f for f in findings if f.fix and f.path not in blocked]
    safe = sum(1 for f in fixing_applies if f.fix.applicability is Applicability.SAFE)
    hidden = sum(1 for f in fixing_applies if f.fix.applicability is Applicability.UNSAFE)
    lines = []
    if fixing and fixed:
        noun = "problem" if fixed + count == 1 else "problems"
        lines.append(f"Found {fixed + count} {noun} ({fixed} fixed, {count} remaining).")
    elif count == 0:
        lines.append(style("All checks passed!", "green"))
        return lines
    else:
        if fixable is None:
            fixable = safe + (hidden if unsafe else 0)
        noun = "problem" if count == 1 else "problems"
        detail = f" ({fixable} fixable with `--fix`)" if fixable and not fixing else ""
        lines.append(f"Found {count} {noun}{detail}.")
    if hidden and not unsafe:
        lines.append(f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
                     f"`--unsafe-fixes` option.")
    return lines


def statistics(findings: Sequence[Finding], unsafe: bool, blocked: Collection[str] = ()) -> list[str]:
    counts = Counter(f.code for f in findings)
    fixable = {f.code for f in findings if fix_marker(f, unsafe, blocked)}
    width = max((len(str(n)) for n in counts.values()), default=1)
    names = {f.code: f.name for f in findings}
    lines = []
    for code, number in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        name = names[code]
        marker = "[*]" if code in fixable else "[ ]"
        lines.append(f"{number:>{width}}\t{code}\t{marker} {name}")
    return lines


def timings(recorded, rule_names: dict[str, str], from_cache: int) -> list[str]:
    """`--timings`: where the CPU time of the files checked went, by phase and by rule."""
    from ..engine.timings import RULE

    seconds = recorded.seconds
    rules = {phase[len(RULE):]: value for phase, value in seconds.items() if phase.startswith(RULE)}
    phases = {phase: value for phase, value in seconds.items() if not phase.startswith(RULE)}
    passes = recorded.parsed_files  # (a file whose fixes are applied or counted is linted again)
    parsed = (f"{passes} lint pass{'es' if passes != 1 else ''} ({recorded.parsed_lines / 1000:.1f} k lines "
              f"parsed)" if passes else "none parsed")
    files = f"{recorded.files} file{'s' if recorded.files != 1 else ''}"
    lines = [f"Timings (CPU seconds): {files} checked, {parsed}, "
             f"{from_cache} answered from the cache; "
             f"{recorded.workers} process{'es' if recorded.workers != 1 else ''}"]
    rows = [("total", recorded.total)]
    order = ["importing libcst and the rules", "reading files", "pre-checks and choosing blocks",
             "parsing (libcst)", "module context"]
    rows += [(phase, phases.pop(phase)) for phase in order if phase in phases]
    rows.append(("rules (with the analysis they ask for)", sum(rules.values())))
    rows += [(f"  {code} {rule_names.get(code, '')}", value)
             for code, value in sorted(rules.items(), key=lambda item: -item[1]) if value >= 0.0005]
    rows += sorted(phases.items(), key=lambda item: -item[1])
    rows.append(("other", recorded.total - sum(seconds.values())))
    width = max(len(label) for label, _ in rows)
    lines += [f"  {label:<{width}} {value:8.3f}" for label, value in rows]
    if recorded.slowest:
        lines.append("  slowest files:")
        lines += [f"    {value:8.3f}  {name}" for value, name in recorded.slowest]
    return lines


def _edit_json(edit) -> dict:
    result = {
        "line": edit.range.start.line, "column": edit.range.start.column + 1,
        "end_line": edit.range.end.line, "end_column": edit.range.end.column + 1,
        "content": edit.new_text,
    }
    if edit.cell is not None:
        result["cell"] = edit.cell + 1
    return result


def path_fields(path: str) -> dict:
    """``path`` as JSON. A file name that is not valid UTF-8 (Python keeps its bytes as
    lone surrogates) cannot be JSON text as it is: ``path`` then shows it with U+FFFD for
    the undecodable bytes, and ``path_bytes`` holds the exact bytes, base64-encoded."""
    try:
        path.encode("utf-8")
        return {"path": path}
    except UnicodeEncodeError:
        raw = os.fsencode(path)
        return {"path": raw.decode("utf-8", "replace"), "path_bytes": base64.b64encode(raw).decode("ascii")}


def readable(path: str) -> str:
    """The path as valid text (undecodable bytes of a file name as U+FFFD)."""
    return path_fields(path)["path"]


def finding_json(f: Finding) -> dict:
    cell = {} if f.cell is None else {"cell": f.cell + 1}  # notebooks: lines count in the cell
    return {
        **path_fields(f.path),
        **cell,
        "line": f.range.start.line,
        "column": f.range.start.column + 1,
        "end_line": f.range.end.line,
        "end_column": f.range.end.column + 1,
        "code": f.code,
        "name": f.name,
        "severity": f.severity.value,
        "message": f.message,
        "fix": None if f.fix is None else {
            "title": f.fix.title,
            "applicability": f.fix.applicability.value,
            "edits": [_edit_json(e) for e in f.fix.edits],
        },
    }


def render_json(findings: Sequence[Finding]) -> str:
    return indented_json([finding_json(f) for f in findings])


def indented_json(value: object) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, for the types JSON has (dicts
    with string keys, lists, strings, integers, booleans, None; anything else goes to
    ``json.dumps``). The json module encodes in Python when asked to indent, one generator
    per container (its C encoder does not indent): a third of the cost, for the same text."""
    parts: list[str] = []
    try:
        _indented(value, "", parts)
    except _NotPlain:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(parts)


class _NotPlain(Exception):
    """A value ``indented_json`` leaves to ``json.dumps``."""


_STRING = json.encoder.encode_basestring  # (ensure_ascii=False's encoder, in C)


def _indented(value: object, indent: str, parts: list[str]) -> None:
    kind = type(value)
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        parts.append(scalar(value))
    elif value is None or value is True or value is False:
        parts.append(_CONSTANTS[value])  # type: ignore[index]
    elif kind is dict:
        if not value:
            parts.append("{}")
            return
        inner = indent + "  "
        separator = "{\n" + inner
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise _NotPlain
            scalar = _SCALARS.get(type(item))
            if scalar is not None:  # (most values: written with their key in one piece)
                parts.append(f"{separator}{_STRING(key)}: {scalar(item)}")
            else:
                parts.append(f"{separator}{_STRING(key)}: ")
                _indented(item, inner, parts)
            separator = ",\n" + inner
        parts.append("\n" + indent + "}")
    elif kind is list or kind is tuple:
        if not value:
            parts.append("[]")
            return
        inner = indent + "  "
        separator = "[\n" + inner
        for item in value:  # type: ignore[attr-defined]
            parts.append(separator)
            _indented(item, inner, parts)
            separator = ",\n" + inner
        parts.append("\n" + indent + "]")
    else:
        raise _NotPlain


_SCALARS = {str: _STRING, int: int.__repr__}  # (exact types: a bool is not written as an int)
_CONSTANTS = {None: "null", True: "true", False: "false"}


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note",
                Severity.HINT: "note"}


def render_sarif(findings: Sequence[Finding], base: Path) -> str:
    from ..rules import ALL_RULES  # the rules' documentation (not needed for other formats)

    rules = list(ALL_RULES)
    index = {rule.code: position for position, rule in enumerate(rules)}
    results = []
    for f in findings:
        uri = _uri(f.path, base)
        region = {"startLine": f.range.start.line, "startColumn": f.range.start.column + 1,
                  "endLine": f.range.end.line, "endColumn": f.range.end.column + 1}
        location: dict = {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}
        result = {
            "ruleId": f.code,
            "ruleIndex": index.get(f.code, 0),
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [location],
        }
        if f.cell is not None:  # a notebook: the region's lines count from the cell's start
            location["logicalLocations"] = [{"name": f"cell {f.cell + 1}", "kind": "module"}]
            result["properties"] = {"cell": f.cell + 1}
        if f.fix is not None and f.cell is None:  # a notebook's edits are not in file lines
            result["fixes"] = [{
                "description": {"text": f.fix.title},
                "artifactChanges": [{
                    "artifactLocation": {"uri": uri},
                    "replacements": [{
                        "deletedRegion": {"startLine": e.range.start.line,
                                          "startColumn": e.range.start.column + 1,
                                          "endLine": e.range.end.line,
                                          "endColumn": e.range.end.column + 1},
                        "insertedContent": {"text": e.new_text},
                    } for e in f.fix.edits],
                }],
            }]
        results.append(result)
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gradlint",
                "version": __version__,
                "rules": [{
                    "id": rule.code,
                    "name": rule.name,
                    "shortDescription": {"text": rule.summary},
                    "fullDescription": {"text": rule.docs().split("\n\n")[1] if "\n\n" in rule.docs() else rule.summary},
                    "help": {"text": rule.docs(), "markdown": rule.docs()},
                    "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
                } for rule in rules],
            }},
            "results": results,
        }],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


def _uri(path: str, base: Path) -> str:
    """A URI reference, percent-encoded from the file name's bytes (lossless, even for a
    name that is not UTF-8)."""
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(base)
        except ValueError:
            return candidate.as_uri()
    return quote_from_bytes(os.fsencode(candidate.as_posix()), safe="/")


def _github_escape(text: str, property_value: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(findings: Iterable[Finding]) -> list[str]:
    lines = []
    for f in findings:
        level = {"error": "error", "warning": "warning"}.get(f.severity.value, "notice")
        title = _github_escape(f"{f.code} {f.name}", True)
        if f.cell is not None:
            # lines in a notebook's JSON are not the cell's: annotate the file, say where
            where = f"cell {f.cell + 1}, line {f.range.start.line}, column {f.range.start.column + 1}"
            lines.append(f"::{level} file={_github_escape(readable(f.path), True)},title={title}::"
                         f"{_github_escape(f'{f.code} {f.message} ({where})')}")
            continue
        props = (f"file={_github_escape(readable(f.path), True)},line={f.range.start.line},"
                 f"col={f.range.start.column + 1},endLine={f.range.end.line},"
                 f"endColumn={f.range.end.column + 1},title={title}")
        lines.append(f"::{level} {props}::{_github_escape(f'{f.code} {f.message}')}")
    return lines
