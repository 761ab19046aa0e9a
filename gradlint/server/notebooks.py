"""Notebook documents in the language server (LSP 3.17 `notebookDocument/*`, as VS Code
sends them for Jupyter notebooks).

Each Python cell is a text document of its own (kept in the server's document store, so
hover and code actions work on cells as on files), and the notebook is linted as one
module: its code cells joined in order by ``engine.notebooks``. Diagnostics are per cell;
a quick fix may edit another cell (where a tensor was made); `source.fixAll.gradlint` fixes
one cell, `notebook.source.fixAll.gradlint` the whole notebook.

Cell diagnostics are always published (`textDocument/publishDiagnostics`), also to clients
that pull diagnostics: VS Code's language client (9.x) never pulls for notebook cells, and a
change in one cell can change another cell's diagnostics. A pull for a cell is answered with
an empty report, so that no client shows them twice.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from lsprotocol import types

from ..engine.notebooks import CellText, fix_cells, lint_cells
from ..engine.suppressions import add_noqa
from ..findings import Applicability, Finding
from . import convert
from .documents import Document, units
from .linting import LintSnapshot

if TYPE_CHECKING:  # pragma: no cover
    from .language_server import GradlintServer

log = logging.getLogger("gradlint.server")

NOTEBOOK_FIX_ALL_KIND = "notebook.source.fixAll.gradlint"
FIX_ALL_KIND = "source.fixAll.gradlint"
PYTHON = ("python",)
SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")],
    save=True)


@dataclass
class OpenNotebook:
    uri: str
    version: int
    cells: list[types.NotebookCell]


@dataclass
class NotebookLint:
    key: tuple  # (cell uri, version) of every Python cell, in order
    by_cell: dict[str, LintSnapshot] = field(default_factory=dict)


def _kind_matches(requested: str, kind: str) -> bool:
    return kind == requested or kind.startswith(requested + ".")


class Notebooks:
    def __init__(self, ls: "GradlintServer"):
        self.ls = ls
        self.open: dict[str, OpenNotebook] = {}
        self.cell_notebook: dict[str, str] = {}  # cell uri -> notebook uri
        self.lints: dict[str, NotebookLint] = {}

    # -- sync ------------------------------------------------------------------------------
    def did_open(self, params: types.DidOpenNotebookDocumentParams) -> None:
        notebook = params.notebook_document
        self.open[notebook.uri] = OpenNotebook(notebook.uri, notebook.version, list(notebook.cells))
        for cell in notebook.cells:
            self.cell_notebook[cell.document] = notebook.uri
        for item in params.cell_text_documents:
            self.ls.documents.open(item.uri, item.text, item.version, item.language_id)
        self.schedule(notebook.uri, immediate=True)

    def did_change(self, params: types.DidChangeNotebookDocumentParams) -> None:
        notebook = self.open.get(params.notebook_document.uri)
        if notebook is None:
            return
        notebook.version = params.notebook_document.version
        cells = params.change.cells
        if cells is not None:
            if cells.structure is not None:
                array = cells.structure.array
                removed = notebook.cells[array.start:array.start + array.delete_count]
                notebook.cells[array.start:array.start + array.delete_count] = list(array.cells or [])
                for cell in removed:
                    self.cell_notebook.pop(cell.document, None)
                for cell in array.cells or []:
                    self.cell_notebook[cell.document] = notebook.uri
                for item in cells.structure.did_open or []:
                    self.ls.documents.open(item.uri, item.text, item.version, item.language_id)
                for closed in cells.structure.did_close or []:
                    self._forget_cell(closed.uri)
            for data in cells.data or []:
                for index, cell in enumerate(notebook.cells):
                    if cell.document == data.document:
                        notebook.cells[index] = data
            for content in cells.text_content or []:
                document = self.ls.documents.get(content.document.uri)
                if document is None:
                    continue
                for change in content.changes:
                    if isinstance(change, types.TextDocumentContentChangePartial):
                        rng = change.range
                        document.apply_change(change.text, (rng.start.line, rng.start.character),
                                              (rng.end.line, rng.end.character), self.ls.encoding)
                    else:
                        document.apply_change(change.text, None, None, self.ls.encoding)
                document.version = content.document.version
        self.schedule(notebook.uri)

    def did_save(self, params: types.DidSaveNotebookDocumentParams) -> None:
        self.schedule(params.notebook_document.uri, immediate=True)

    def did_close(self, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        notebook = self.open.pop(uri, None)
        self.lints.pop(uri, None)
        self.ls.debouncer.cancel(f"notebook:{uri}")
        cells = [cell.document for cell in notebook.cells] if notebook else []
        cells += [item.uri for item in params.cell_text_documents]
        for cell_uri in dict.fromkeys(cells):
            self._forget_cell(cell_uri)

    def _forget_cell(self, uri: str) -> None:
        self.cell_notebook.pop(uri, None)
        self.ls.documents.close(uri)
        self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # -- linting ---------------------------------------------------------------------------
    def is_cell(self, uri: str) -> bool:
        return uri in self.cell_notebook

    def relint_all(self) -> None:
        self.lints.clear()
        for uri in list(self.open):
            self.schedule(uri, immediate=True)

    def schedule(self, uri: str, immediate: bool = False) -> None:
        delay = 0.0 if immediate else self.ls.settings_for(uri).debounce_ms / 1000.0
        self.ls.debouncer.schedule(f"notebook:{uri}", delay,
                                   lambda: self._start(uri))

    def _start(self, uri: str) -> None:
        task = asyncio.ensure_future(self.lint_and_report(uri))
        self.ls.lint_tasks.add(task)
        task.add_done_callback(self.ls.lint_tasks.discard)

    def _python_cells(self, notebook: OpenNotebook) -> list[tuple[int, Document]]:
        cells = []
        for position, cell in enumerate(notebook.cells):
            if cell.kind != types.NotebookCellKind.Code:
                continue
            document = self.ls.documents.get(cell.document)
            if document is not None and document.language_id in PYTHON:
                cells.append((position, document))
        return cells

    def _key(self, notebook: OpenNotebook) -> tuple:
        return tuple((document.uri, document.version, position)
                     for position, document in self._python_cells(notebook))

    async def lint(self, notebook: OpenNotebook) -> NotebookLint:
        await self.ls.configured()
        key = self._key(notebook)
        cached = self.lints.get(notebook.uri)
        if cached is not None and cached.key == key:
            return cached
        cells = self._python_cells(notebook)
        result = NotebookLint(key)
        findings: list[Finding] = []
        settings = self.ls.settings_for(notebook.uri)
        path = self.ls.path_of(notebook.uri)
        _, root = self.ls.folder_of(notebook.uri)
        if settings.enable and not (path is not None and self.ls.excluded(path, root)):
            options = self.ls.configs.options(path, root, settings)
            texts = [CellText(position, document.text) for position, document in cells]
            try:
                findings = await self.ls.linter.call(lint_cells, texts, str(path or notebook.uri),
                                                     options, self.ls.linter.cache)
            except Exception:  # a bug in gradlint must not take the editor down
                log.exception("linting notebook %s failed", notebook.uri)
            findings = self.ls.baselines.apply(findings, None, path, self.ls.configs.config_for(path, root),
                                               options.select, settings.baselined_findings,
                                               cells={cell.index: cell.text for cell in texts})
        by_position: dict[int, list[Finding]] = {}
        for finding in findings:
            by_position.setdefault(finding.cell or 0, []).append(finding)
        for position, document in cells:
            result.by_cell[document.uri] = LintSnapshot(
                document.uri, document.version, tuple(by_position.get(position, ())))
        if self._key(notebook) == key:
            self.lints[notebook.uri] = result
        return result

    async def lint_cell(self, document: Document) -> LintSnapshot | None:
        """The snapshot of a cell (None when ``document`` is not a notebook cell)."""
        notebook_uri = self.cell_notebook.get(document.uri)
        notebook = self.open.get(notebook_uri or "")
        if notebook is None:
            return None
        lint = await self.lint(notebook)
        return lint.by_cell.get(document.uri) or LintSnapshot(document.uri, document.version, ())

    async def lint_and_report(self, uri: str) -> None:
        notebook = self.open.get(uri)
        if notebook is None:
            return
        lint = await self.lint(notebook)
        if self._key(notebook) != lint.key:
            return  # outdated: a newer change is on its way
        for cell_uri, snapshot in lint.by_cell.items():
            document = self.ls.documents.get(cell_uri)
            if document is not None:
                self.ls.publish(document, snapshot)

    # -- code actions ------------------------------------------------------------------------
    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        document = self.ls.documents.get(uri)
        notebook = self.open.get(self.cell_notebook.get(uri, ""))
        if document is None or notebook is None:
            return []
        only = params.context.only or []
        lint = await self.lint(notebook)
        snapshot = lint.by_cell.get(uri) or LintSnapshot(uri, document.version, ())
        actions: list[types.CodeAction] = []
        if not only or any(_kind_matches(k, types.CodeActionKind.QuickFix) for k in only):
            for diagnostic in params.context.diagnostics:
                if diagnostic.source == convert.SOURCE:
                    actions.extend(self._quick_fixes(notebook, document, snapshot, diagnostic))
        if not only or any(_kind_matches(k, FIX_ALL_KIND) for k in only):
            action = await self._fix_all(notebook, FIX_ALL_KIND, only_cell=uri)
            if action is not None:
                actions.append(action)
        if any(_kind_matches(k, NOTEBOOK_FIX_ALL_KIND) for k in only):
            action = await self._fix_all(notebook, NOTEBOOK_FIX_ALL_KIND)
            if action is not None:
                actions.append(action)
        return actions

    def _cell_documents(self, notebook: OpenNotebook) -> dict[int, Document]:
        return dict(self._python_cells(notebook))

    def _edit(self, notebook: OpenNotebook, edits_by_cell: dict[int, list[types.TextEdit]]
              ) -> types.WorkspaceEdit:
        documents = self._cell_documents(notebook)
        return types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=documents[position].uri, version=documents[position].version),
                edits=edits)
            for position, edits in sorted(edits_by_cell.items())])

    def _quick_fixes(self, notebook: OpenNotebook, document: Document, snapshot: LintSnapshot,
                     diagnostic: types.Diagnostic) -> list[types.CodeAction]:
        code = str(diagnostic.code)
        encoding = self.ls.encoding
        actions = []
        finding = next((f for f in snapshot.findings if f.code == code and convert.lsp_range(
            document, f.range.start.line, f.range.start.column, f.range.end.line,
            f.range.end.column, encoding) == diagnostic.range), None)
        fix = finding.fix if finding is not None else None
        documents = self._cell_documents(notebook)
        if fix is not None and all(edit.cell in documents for edit in fix.edits):
            by_cell: dict[int, list[types.TextEdit]] = {}
            for edit in fix.edits:
                assert edit.cell is not None
                by_cell.setdefault(edit.cell, []).append(
                    convert.text_edit(documents[edit.cell], edit, encoding))
            actions.append(types.CodeAction(
                title=convert.fix_title(code, fix.title, fix.applicability.value),
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                is_preferred=fix.applicability is Applicability.SAFE,
                edit=self._edit(notebook, by_cell)))
        line = diagnostic.range.start.line
        text = document.line(line)
        new_line = add_noqa(text, code)
        if new_line != text and not text.rstrip().endswith("\\"):
            edit = types.TextEdit(types.Range(types.Position(line, 0),
                                              types.Position(line, units(text, encoding))), new_line)
            actions.append(types.CodeAction(
                title=f"gradlint ({code}): Suppress {code} on this line",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                edit=convert.document_changes(document, [edit])))
        return actions

    async def _fix_all(self, notebook: OpenNotebook, kind: str,
                       only_cell: str | None = None) -> types.CodeAction | None:
        documents = self._cell_documents(notebook)
        lint = await self.lint(notebook)
        findings: Iterable[Finding] = (f for uri, s in lint.by_cell.items() for f in s.findings
                                       if only_cell is None or uri == only_cell)
        if not any(f.fix and f.fix.applicability is Applicability.SAFE for f in findings):
            return None
        position = next((p for p, d in documents.items() if d.uri == only_cell), None)
        settings = self.ls.settings_for(notebook.uri)
        path = self.ls.path_of(notebook.uri)
        _, root = self.ls.folder_of(notebook.uri)
        options = self.ls.configs.options(path, root, settings)
        texts = [CellText(p, d.text) for p, d in documents.items()]
        outcome = await self.ls.linter.call(
            lambda: fix_cells(texts, str(path or notebook.uri), options, unsafe=False,
                              cache=self.ls.linter.cache,
                              only_cells=None if position is None else {position}))
        edits = {}
        for cell, text in outcome.sources.items():
            if text != documents[cell].text:
                edits[cell] = convert.whole_document_edits(documents[cell], text, self.ls.encoding)
        if not edits:
            return None
        title = ("gradlint: Fix all auto-fixable problems in the notebook" if only_cell is None
                 else "gradlint: Fix all auto-fixable problems")
        return types.CodeAction(title=title, kind=kind, edit=self._edit(notebook, edits))


def attach(ls: "GradlintServer") -> Notebooks:
    """Register the notebookDocument/* features on ``ls``."""
    notebooks = Notebooks(ls)
    ls.notebooks = notebooks

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        notebooks.did_open(params)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        notebooks.did_change(params)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveNotebookDocumentParams) -> None:
        notebooks.did_save(params)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        notebooks.did_close(params)

    return notebooks

