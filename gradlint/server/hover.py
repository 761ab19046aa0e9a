"""Hover: rule documentation and gradcheck reports."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types

from ..analysis.source import scan
from . import convert
from .documents import column_from_units

if TYPE_CHECKING:
    from .language_server import GradlintServer

_NOQA_CODE = re.compile(r"GL\d{3}")


async def hover_at(ls: GradlintServer, params: types.HoverParams) -> types.Hover | None:
    """A rule's documentation over its code in a suppression comment or over a finding;
    a gradcheck run's report over its diagnostic."""
    document = ls.documents.get(params.text_document.uri)
    if document is None:
        return None
    position = params.position
    text = document.line(position.line)
    column = _code_point_column(text, position.character, ls)
    for match in _NOQA_CODE.finditer(_comment_part(text)[1]):
        start = _comment_part(text)[0] + match.start()
        if start <= column <= start + len(match.group()):
            markdown = convert.rule_markdown(match.group())
            if markdown:
                return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, markdown))
    snapshot = await ls.lint_document(document)
    line = position.line + 1
    for finding in snapshot.findings:
        rng = finding.range
        if (rng.start.line, rng.start.column) <= (line, column) <= (rng.end.line, rng.end.column):
            markdown = convert.rule_markdown(finding.code, finding.message)
            if markdown:
                hover_range = convert.lsp_range(document, rng.start.line, rng.start.column,
                                                rng.end.line, rng.end.column, ls.encoding)
                return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, markdown), hover_range)
    if ls.runs is not None:
        return ls.runs.hover(document, position.line)
    return None


def _code_point_column(text: str, character: int, ls: GradlintServer) -> int:
    return column_from_units(text, character, ls.encoding)


def _comment_part(line: str) -> tuple[int, str]:
    comment = scan(line + "\n").comments.get(1)
    if comment is None:
        return 0, ""
    return line.rindex(comment), comment
