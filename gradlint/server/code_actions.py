"""Code actions: a finding's fix, "suppress on this line", fix-all, and "Run gradcheck"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..engine.suppressions import add_noqa
from ..findings import Applicability, Fix
from . import convert
from .documents import Document, units
from .linting import LintSnapshot
from .notebooks import FIX_ALL_KIND, NOTEBOOK_FIX_ALL_KIND
from .payloads import plain

if TYPE_CHECKING:
    from .language_server import GradlintServer

CODE_ACTION_OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND, NOTEBOOK_FIX_ALL_KIND],
    resolve_provider=False)


async def code_actions(ls: GradlintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """Quick fixes and suppressions for gradlint's diagnostics in range, fix-all, and "Run
    gradcheck" on the target at the cursor."""
    if ls.notebooks is not None and ls.notebooks.is_cell(params.text_document.uri):
        return await ls.notebooks.code_actions(params)
    document = ls.documents.get(params.text_document.uri)
    if document is None:
        return None
    only = params.context.only
    actions: list[types.CodeAction] = []
    if not only or any(k in (types.CodeActionKind.QuickFix, "quickfix") for k in only):
        snapshot = await ls.lint_document(document)
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != convert.SOURCE:
                continue
            actions.extend(_quick_fixes(ls, document, snapshot, diagnostic))
    if not only or any(FIX_ALL_KIND.startswith(k) or k == FIX_ALL_KIND for k in only):
        action = await _fix_all(ls, document)
        if action is not None:
            actions.append(action)
    if not only and ls.runs is not None:
        actions.extend(await ls.runs.code_actions(document, params.range))
    return actions


def _quick_fixes(ls: GradlintServer, document: Document, snapshot: LintSnapshot,
                 diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    code = str(diagnostic.code)
    actions = []
    fix = _fix_of(ls, document, snapshot, diagnostic)
    if fix is not None:
        edits = [convert.text_edit(document, e, ls.encoding) for e in fix.edits]
        actions.append(types.CodeAction(
            title=convert.fix_title(code, fix.title, fix.applicability.value),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=fix.applicability is Applicability.SAFE,
            edit=convert.document_changes(document, edits)))
    line = diagnostic.range.start.line
    text = document.line(line)
    if not text.rstrip().endswith("\\"):
        new_line = add_noqa(text, code)
        if new_line != text:
            end = types.Position(line, units(text, ls.encoding))
            edit = types.TextEdit(types.Range(types.Position(line, 0), end), new_line)
            actions.append(types.CodeAction(
                title=f"gradlint ({code}): Suppress {code} on this line",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                edit=convert.document_changes(document, [edit])))
    return actions


def _fix_of(ls: GradlintServer, document: Document, snapshot: LintSnapshot,
            diagnostic: types.Diagnostic) -> Fix | None:
    """The fix behind a diagnostic: from its data when the data is for this version of
    the document (no re-lint), else from the current lint, matched by code and range."""
    data = plain(diagnostic.data) or {}
    if data.get("version") == document.version and document.version is not None:
        fix = data.get("fix")
        if fix is None:
            return None
        return Fix(fix["title"], Applicability(fix["applicability"]),
                   tuple(convert.edits_from_data(data)))
    for finding in snapshot.findings:
        rng = convert.lsp_range(document, finding.range.start.line, finding.range.start.column,
                                finding.range.end.line, finding.range.end.column, ls.encoding)
        if finding.code == str(diagnostic.code) and rng == diagnostic.range:
            return finding.fix
    return None


async def _fix_all(ls: GradlintServer, document: Document) -> types.CodeAction | None:
    snapshot = await ls.lint_document(document)
    if not any(f.fix and f.fix.applicability is Applicability.SAFE for f in snapshot.findings):
        return None
    settings = ls.settings_for(document.uri)
    _, root = ls.folder_of(document.uri)
    path = ls.path_of(document.uri)
    options = ls.configs.options(path, root, settings)
    fixed = await ls.linter.fix_all(document.text, str(path or document.uri), options)
    if fixed == document.text:
        return None
    edits = convert.whole_document_edits(document, fixed, ls.encoding)
    return types.CodeAction(title="gradlint: Fix all auto-fixable problems", kind=FIX_ALL_KIND,
                            edit=convert.document_changes(document, edits))
