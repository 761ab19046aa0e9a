"""Suppression comments: ``# noqa``, ``# noqa: GL001``, ``# gradlint: ignore[GL001]``.

A comment on the line where a finding starts, or on the first line of the statement that
holds it, suppresses the finding. ``# gradlint: noqa`` on a line of its own exempts the
whole file (``# gradlint: noqa: GL001, GL002`` only those codes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..findings import Finding

ALL = "*"

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*gradlint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_FILE = re.compile(r"^#\s*gradlint:\s*noqa(?::\s*(?P<codes>[A-Za-z0-9,\s]+))?\s*$", re.IGNORECASE)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")


@dataclass(frozen=True)
class Suppression:
    line: int
    codes: frozenset[str]  # {ALL} for a bare `# noqa`
    column: int  # where the suppression starts in the comment (for editing it)
    end_column: int
    kind: str  # "noqa" | "ignore"

    def covers(self, code: str) -> bool:
        return ALL in self.codes or code in self.codes


def _codes(text: str | None) -> frozenset[str]:
    if text is None:
        return frozenset({ALL})
    return frozenset(code.upper() for code in _CODE.findall(text)) or frozenset({ALL})


def parse_suppressions(comments: Mapping[int, str]) -> tuple[dict[int, list[Suppression]], frozenset[str]]:
    """Line suppressions by line, and the codes exempted for the whole file."""
    by_line: dict[int, list[Suppression]] = {}
    file_codes: set[str] = set()
    for line, comment in comments.items():
        file_match = _FILE.match(comment.strip())
        if file_match:
            file_codes |= _codes(file_match.group("codes"))
            continue
        for pattern, kind in ((_NOQA, "noqa"), (_IGNORE, "ignore")):
            for match in pattern.finditer(comment):
                by_line.setdefault(line, []).append(
                    Suppression(line, _codes(match.group("codes")), match.start(), match.end(), kind))
    return by_line, frozenset(file_codes)


def is_suppressed(finding: Finding, by_line: Mapping[int, Iterable[Suppression]],
                  file_codes: frozenset[str], used: set | None = None) -> bool:
    """Is ``finding`` suppressed? Records in ``used`` which (suppression, code) did it."""
    if ALL in file_codes or finding.code in file_codes:
        return True
    lines = {finding.range.start.line}
    if finding.statement_line is not None:
        lines.add(finding.statement_line)
    matches = [s for line in lines for s in by_line.get(line, ()) if s.covers(finding.code)]
    if used is not None:
        used.update((id(s), finding.code) for s in matches)
    return bool(matches)


def unused_codes(by_line: Mapping[int, Iterable[Suppression]], used: set, enabled: Iterable[str]
                 ) -> list[tuple[Suppression, list[str]]]:
    """Suppressions naming gradlint codes that suppressed nothing (codes of rules that are
    not enabled, and other tools' codes, are never reported: gradlint cannot tell)."""
    enabled = set(enabled)
    result = []
    for suppressions in by_line.values():
        for suppression in suppressions:
            if ALL in suppression.codes:
                continue
            unused = sorted(code for code in suppression.codes
                            if code in enabled and (id(suppression), code) not in used)
            if unused:
                result.append((suppression, unused))
    return result


def without_codes(comment: str, suppression: Suppression, codes: Iterable[str]) -> str:
    """``comment`` with ``codes`` taken out of the directive; "" if nothing is left."""
    drop = set(codes)
    directive = comment[suppression.column: suppression.end_column]
    kept = [code for code in _CODE.findall(directive) if code.upper() not in drop]
    if kept:
        if suppression.kind == "noqa":
            new = f"# noqa: {', '.join(kept)}"
        else:
            new = f"# gradlint: ignore[{', '.join(kept)}]"
    else:
        new = ""
    rest = (comment[: suppression.column] + new + comment[suppression.end_column:]).strip()
    return "" if rest in ("", "#") else rest


def add_noqa(line_text: str, code: str) -> str:
    """``line_text`` with ``code`` added to its ``# noqa`` comment (or a new one).

    ``line_text`` is the whole physical line without its line ending. A bare ``# noqa``
    already covers everything and is left as it is.
    """
    from ..analysis.source import scan

    comments = scan(line_text + "\n").comments
    comment = comments.get(1)
    if comment is None:
        stripped = line_text.rstrip()
        return f"{stripped}  # noqa: {code}"
    start = line_text.rindex(comment)
    match = _NOQA.search(comment)
    if match is None:
        return f"{line_text[:start].rstrip()}  # noqa: {code} {comment}".rstrip()
    codes = match.group("codes")
    if codes is None:
        return line_text  # a bare noqa suppresses every code already
    existing = [c.upper() for c in _CODE.findall(codes)]
    if code in existing:
        return line_text
    new = f"# noqa: {', '.join([*existing, code])}"
    return line_text[:start] + comment[: match.start()] + new + comment[match.end():]
