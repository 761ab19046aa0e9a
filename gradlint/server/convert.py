"""Findings, edits and rule docs as LSP values."""

from __future__ import annotations

import difflib
from typing import Iterable, Sequence

from lsprotocol import types

from ..findings import Applicability, Edit, Finding, Severity
from ..rules import RULES_BY_CODE
from .documents import Document

SOURCE = "gradlint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def lsp_range(document: Document, start_line: int, start_col: int, end_line: int, end_col: int,
              encoding: str) -> types.Range:
    line, character = document.to_client(start_line, start_col, encoding)
    end, end_character = document.to_client(end_line, end_col, encoding)
    return types.Range(types.Position(line, character), types.Position(end, end_character))


def text_edit(document: Document, edit: Edit, encoding: str) -> types.TextEdit:
    rng = edit.range
    return types.TextEdit(lsp_range(document, rng.start.line, rng.start.column, rng.end.line,
                                    rng.end.column, encoding), edit.new_text)


def diagnostic(document: Document, finding: Finding, encoding: str,
               docs_url: str | None) -> types.Diagnostic:
    rng = finding.range
    data: dict = {"version": document.version, "statement_line": finding.statement_line}
    if finding.fix is not None:
        data["fix"] = {
            "title": finding.fix.title,
            "applicability": finding.fix.applicability.value,
            "edits": [{"range": [e.range.start.line, e.range.start.column, e.range.end.line,
                                 e.range.end.column], "text": e.new_text} for e in finding.fix.edits],
        }
    description = None
    if docs_url:
        description = types.CodeDescription(href=docs_url.replace("{code}", finding.code)
                                             .replace("{name}", finding.name))
    return types.Diagnostic(
        range=lsp_range(document, rng.start.line, rng.start.column, rng.end.line, rng.end.column,
                        encoding),
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        code_description=description,
        source=SOURCE,
        data=data,
    )


def edits_from_data(data: dict) -> list[Edit]:
    from ..findings import Range

    return [Edit(Range.of(*item["range"]), item["text"]) for item in data["fix"]["edits"]]


def whole_document_edits(document: Document, new_text: str, encoding: str) -> list[types.TextEdit]:
    """Line-granular edits turning the document into ``new_text`` (not one giant edit, so
    that editors keep the cursor and folding where nothing changed)."""
    old_lines = document.text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits: list[types.TextEdit] = []
    offsets = [0]
    for line in old_lines:
        offsets.append(offsets[-1] + len(line))
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = document.position_of(offsets[i1])
        end = document.position_of(offsets[i2])
        edits.append(types.TextEdit(
            lsp_range(document, start[0], start[1], end[0], end[1], encoding),
            "".join(new_lines[j1:j2])))
    return edits


def rule_markdown(code: str, message: str | None = None) -> str | None:
    rule = RULES_BY_CODE.get(code)
    if rule is None:
        return None
    header = f"**{rule.code} {rule.name}** ({rule.severity.value})"
    parts = [header]
    if message:
        parts.append(f"_{message}_")
    parts.append(rule.docs())
    return "\n\n".join(parts)


def fix_title(code: str, title: str, applicability: str) -> str:
    suffix = " (unsafe)" if applicability == Applicability.UNSAFE.value else ""
    return f"gradlint ({code}): {title}{suffix}"


def document_changes(document: Document, edits: Sequence[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri,
                                                                     version=document.version),
        edits=list(edits))])


def plain_changes(document: Document, edits: Iterable[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(changes={document.uri: list(edits)})
