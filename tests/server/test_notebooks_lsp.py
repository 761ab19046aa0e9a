"""Notebook documents through the real server (pytest-lsp over stdio), synchronised the way
VS Code's language client does it (`notebookDocument/didOpen|didChange|didSave|didClose`
with cell text documents), for clients that pull diagnostics and clients that do not."""

from __future__ import annotations

import attrs
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import SERVER, apply_edits, encoding_of, make_client, uri_of, wait_until

CELLS = [
    (types.NotebookCellKind.Markup, "markdown", "# Prototype\n`gradcheck` below."),
    (types.NotebookCellKind.Code, "python",
     "%matplotlib inline\nimport torch\nfrom torch.autograd import gradcheck"),
    (types.NotebookCellKind.Code, "python", "x = torch.randn(3, requires_grad=True)"),
    (types.NotebookCellKind.Code, "python",
     "!nvidia-smi\nassert gradcheck(torch.sin, (x,))\n"
     "assert gradcheck(torch.cos, (torch.randn(2, requires_grad=True),))"),
]


def vscode_capabilities(pull: bool) -> types.ClientCapabilities:
    """VS Code's capabilities with what vscode-languageclient 9 adds for notebooks and
    (pull) diagnostics."""
    capabilities = client_capabilities("visual_studio_code")
    capabilities = attrs.evolve(capabilities, notebook_document=types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(
            dynamic_registration=True, execution_summary_support=True)))
    if pull:
        capabilities.text_document.diagnostic = types.DiagnosticClientCapabilities(
            dynamic_registration=True, related_document_support=False)
        capabilities.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(
            refresh_support=True)
    return capabilities


class NotebookSession:
    def __init__(self, client: LanguageClient, root, encoding: str, pull: bool):
        self.client = client
        self.root = root
        self.encoding = encoding
        self.pull = pull
        self.uri = ""
        self.version = 0
        self.cells: list[str] = []  # cell uris
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    def open(self, cells=CELLS) -> None:
        path = self.root / "proto.ipynb"
        path.write_text("{}")
        self.uri = uri_of(path)
        self.version = 1
        self.cells = [f"vscode-notebook-cell:{path}#W{index}sZmlsZQ%3D%3D" for index in range(len(cells))]
        items = []
        for uri, (kind, language, text) in zip(self.cells, cells):
            self.texts[uri] = text
            self.versions[uri] = 1
            if kind == types.NotebookCellKind.Code:  # VS Code syncs only the selector's cells
                items.append(types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text))
        self.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=self.uri, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(kind=kind, document=uri)
                       for uri, (kind, _, _) in zip(self.cells, cells)]),
            cell_text_documents=items))

    def edit(self, cell: str, edits: list[types.TextEdit]) -> None:
        self.version += 1
        self.versions[cell] += 1
        self.texts[cell] = apply_edits(self.texts[cell], edits, self.encoding)
        changes = [types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                   for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                                   reverse=True)]
        self.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=self.version, uri=self.uri),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                text_content=[types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cell, version=self.versions[cell]),
                    changes=changes)]))))

    def delete_cell(self, index: int) -> None:
        self.version += 1
        uri = self.cells.pop(index)
        self.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=self.version, uri=self.uri),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(start=index, delete_count=1),
                    did_close=[types.TextDocumentIdentifier(uri)])))))

    async def diagnostics(self, cell: str, count: int) -> list[types.Diagnostic]:
        """Cell diagnostics are published, also to pull clients (VS Code's client never
        pulls for cells); a pull for a cell answers nothing, so nothing shows twice."""
        if self.pull:
            report = await self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(types.TextDocumentIdentifier(cell)))
            assert len(report.items) == 0

        def current():
            found = self.client.diagnostics.get(cell)
            return found is not None and len(found) == count
        await wait_until(current, what=f"{count} diagnostics for {cell}")
        return list(self.client.diagnostics[cell])


@pytest_lsp.fixture(params=["pull", "push"],
                    config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient, request, tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=vscode_capabilities(request.param == "pull"),
        root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options={"settings": {"debounce": 20}},
    ))
    lsp_client.session = NotebookSession(lsp_client, root, encoding_of(result), request.param == "pull")
    lsp_client.init_result = result
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def session(client) -> NotebookSession:
    return client.session


async def test_notebook_sync_is_advertised_for_python_cells(client):
    sync = client.init_result.capabilities.notebook_document_sync
    [selector] = sync.notebook_selector
    assert selector.notebook == "jupyter-notebook"
    assert [cell.language for cell in selector.cells] == ["python"]
    assert "notebook.source.fixAll.gradlint" in client.init_result.capabilities.code_action_provider.code_action_kinds


async def test_diagnostics_per_cell_with_names_across_cells(session: NotebookSession):
    session.open()
    first, second = await session.diagnostics(session.cells[3], 2)
    assert first.code == "GL001" and first.message.startswith("gradcheck input `x` is float32")
    assert first.range == types.Range(types.Position(1, 28), types.Position(1, 32))  # below !nvidia-smi
    assert second.range.start.line == 2
    for cell in session.cells[1:3]:
        assert await session.diagnostics(cell, 0) == []


async def test_quick_fix_edits_the_cell_where_the_tensor_is_made(session: NotebookSession):
    session.open()
    diagnostic, _ = await session.diagnostics(session.cells[3], 2)
    actions = await session.client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(session.cells[3]), diagnostic.range,
        types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix])))
    assert [a.title for a in actions] == ["gradlint (GL001): Create `x` as float64; `x` is a module-level name, "
                                          "which other code may read (in a notebook, every cell) (unsafe)",
                                          "gradlint (GL001): Suppress GL001 on this line"]
    [change] = actions[0].edit.document_changes
    assert change.text_document.uri == session.cells[2]
    assert change.text_document.version == 1
    session.edit(session.cells[2], change.edits)
    assert session.texts[session.cells[2]] == "x = torch.randn(3, dtype=torch.float64, requires_grad=True)"
    [left] = await session.diagnostics(session.cells[3], 1)  # the other cell's diagnostics follow
    assert left.range.start.line == 2

    [suppress] = [a for a in await session.client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(session.cells[3]), left.range,
        types.CodeActionContext(diagnostics=[left]))) if "Suppress" in a.title]
    session.edit(session.cells[3], suppress.edit.document_changes[0].edits)
    assert session.texts[session.cells[3]].endswith("requires_grad=True),))  # noqa: GL001")
    await session.diagnostics(session.cells[3], 0)


async def test_notebook_fix_all_and_cell_fix_all(session: NotebookSession):
    cells = [(types.NotebookCellKind.Code, "python", "import torch\nfrom torch.autograd import gradcheck"),
             (types.NotebookCellKind.Code, "python", "gradcheck(torch.sin, (torch.randn(2, requires_grad=True),))"),
             (types.NotebookCellKind.Code, "python", "gradcheck(torch.cos, (torch.randn(4, requires_grad=True),))")]
    session.open(cells)
    await session.diagnostics(session.cells[2], 1)

    async def fix_all(cell: int, kind: str):
        return await session.client.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(session.cells[cell]), types.Range(types.Position(0, 0), types.Position(0, 0)),
            types.CodeActionContext(diagnostics=[], only=[kind])))

    [whole] = await fix_all(0, "notebook.source.fixAll")
    assert whole.kind == "notebook.source.fixAll.gradlint"
    assert [c.text_document.uri for c in whole.edit.document_changes] == session.cells[1:]
    [one] = await fix_all(1, "source.fixAll")
    assert one.kind == "source.fixAll.gradlint"
    [change] = one.edit.document_changes
    assert change.text_document.uri == session.cells[1]
    session.edit(session.cells[1], change.edits)
    assert "dtype=torch.float64" in session.texts[session.cells[1]]
    await session.diagnostics(session.cells[1], 0)
    assert len(await session.diagnostics(session.cells[2], 1)) == 1


async def test_structure_changes_and_close(session: NotebookSession):
    session.open()
    await session.diagnostics(session.cells[3], 2)
    closed = session.cells[2]
    session.delete_cell(2)  # `x` is no longer made in the notebook: nothing known about it
    [remaining] = await session.diagnostics(session.cells[2], 1)
    assert remaining.range.start.line == 2
    hover = await session.client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(session.cells[2]), remaining.range.start))
    assert hover is not None and "GL001" in hover.contents.value
    session.client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(session.uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri) for uri in session.cells if "W0" not in uri]))
    for uri in (session.cells[2], closed):
        await wait_until(lambda: len(session.client.diagnostics.get(uri, "x")) == 0, what="cleared")


async def test_the_baseline_holds_a_notebooks_findings(session: NotebookSession):
    """Findings written into the project's baseline by `gradlint check --write-baseline` are
    hints in the editor's cells; a new cell's mistake is reported as usual."""
    import subprocess
    import sys
    from pathlib import Path

    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    root = session.root
    (root / "pyproject.toml").write_text("[tool.gradlint]\n")
    cells = [new_markdown_cell(text) if kind == types.NotebookCellKind.Markup else new_code_cell(text)
             for kind, _, text in CELLS]
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}}), str(root / "proto.ipynb"))
    written = subprocess.run([str(Path(sys.executable).parent / "gradlint"), "check", "--write-baseline"],
                             cwd=root, capture_output=True, text=True, timeout=300)
    assert written.stdout.startswith("Wrote gradlint-baseline.json: 2 findings"), written.stdout + written.stderr
    session.open([*CELLS, (types.NotebookCellKind.Code, "python",
                           "y = torch.randn(2, requires_grad=True)\nassert gradcheck(torch.tan, (y,))")])
    old = await session.diagnostics(session.cells[3], 2)
    assert {d.severity for d in old} == {types.DiagnosticSeverity.Hint}
    assert all(d.message.endswith("(in the baseline)") for d in old)
    [new] = await session.diagnostics(session.cells[4], 1)
    assert new.severity == types.DiagnosticSeverity.Error and "`y`" in new.message
