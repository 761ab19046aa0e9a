"""The language server end to end: a real `gradlint lsp` process driven over stdio by
pytest-lsp, with the capabilities VS Code and Neovim really send."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import (SERVER, close_client, apply_edits, encoding_of, make_client, uri_of, wait_until,
                         workspace_edit_texts)

FLOAT32 = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
    """)


class Session:
    """One client + server, with the workspace and the negotiated encoding."""

    def __init__(self, client: LanguageClient, root: Path, encoding: str, editor: str):
        self.client = client
        self.root = root
        self.encoding = encoding
        self.editor = editor
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    @property
    def pull(self) -> bool:
        return self.client.capabilities.text_document.diagnostic is not None

    def write(self, name: str, text: str) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return uri_of(path)

    def open(self, name: str, text: str) -> str:
        uri = self.write(name, text)
        self.texts[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return uri

    def change(self, uri: str, edits: list[types.TextEdit]) -> None:
        self.versions[uri] += 1
        self.texts[uri] = apply_edits(self.texts[uri], edits, self.encoding)
        changes = [types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                   for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                                   reverse=True)]
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]), changes))

    def replace_all(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def diagnostics(self, uri: str, count: int | None = None) -> list[types.Diagnostic]:
        """The diagnostics of the current version (pulled or pushed, as the client does)."""
        if self.pull:
            async def pulled():
                report = await self.client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri)))
                return list(report.items)
            if count is None:
                return await pulled()
            result: list = []
            deadline = asyncio.get_running_loop().time() + 300  # a safety net against a hang
            while asyncio.get_running_loop().time() < deadline:
                result = await pulled()
                if len(result) == count:
                    return result
                await asyncio.sleep(0.05)
            raise AssertionError(f"expected {count} diagnostics, got {result}")
        version = self.versions[uri]

        def current():
            for params in reversed(self.client.published):
                if params.uri == uri:
                    if params.version == version and (count is None or len(params.diagnostics) == count):
                        return params
                    return None
            return None

        params = await wait_until(current, what=f"diagnostics for version {version}")
        return list(params.diagnostics)  # type: ignore[union-attr]


@pytest_lsp.fixture(params=["visual_studio_code", "neovim"],
                    config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient, request, tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(request.param),
        root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options={"settings": {"debounce": 50}, "workspaceTrusted": False},
    ))
    lsp_client.session = Session(lsp_client, root, encoding_of(result), request.param)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def session(client) -> Session:
    return client.session


async def test_open_publishes_diagnostics_with_code_source_and_data(session: Session):
    uri = session.open("test_ops.py", FLOAT32)
    [diagnostic] = await session.diagnostics(uri, 1)
    assert diagnostic.code == "GL001"
    assert diagnostic.source == "gradlint"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.message.startswith("gradcheck input `x` is float32")
    assert diagnostic.range == types.Range(types.Position(6, 32), types.Position(6, 36))  # `(x,)`
    assert diagnostic.data["fix"]["applicability"] == "safe"


async def test_encoding_negotiation(session: Session):
    assert session.encoding == ("utf-8" if session.editor == "neovim" else "utf-16")


async def test_change_updates_diagnostics_with_the_right_version(session: Session):
    uri = session.open("test_ops.py", FLOAT32)
    await session.diagnostics(uri, 1)
    line = FLOAT32.splitlines()[5]
    start = line.index("requires_grad")
    session.change(uri, [types.TextEdit(types.Range(types.Position(5, start), types.Position(5, start)),
                                        "dtype=torch.float64, ")])
    assert await session.diagnostics(uri, 0) == []
    if not session.pull:
        assert session.client.published[-1].version == 2


async def test_quick_fix_removes_the_diagnostic(session: Session):
    uri = session.open("test_ops.py", FLOAT32)
    [diagnostic] = await session.diagnostics(uri, 1)
    actions = await session.client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range,
        types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix])))
    titles = [a.title for a in actions]
    assert titles == ["gradlint (GL001): Create `x` as float64",
                      "gradlint (GL001): Suppress GL001 on this line"]
    fix = actions[0]
    assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
    edits = workspace_edit_texts(fix.edit)[uri]
    session.change(uri, edits)
    assert "x = torch.randn(3, dtype=torch.float64, requires_grad=True)" in session.texts[uri]
    assert await session.diagnostics(uri, 0) == []


async def test_a_fix_is_offered_only_as_the_current_lint_made_and_checked_it(session: Session):
    """A diagnostic whose data carries edits the server did not make (a stale or altered
    fix) gets no quick fix: only a current finding's fix, checked like `--fix` checks it."""
    uri = session.open("test_ops.py", FLOAT32)
    [diagnostic] = await session.diagnostics(uri, 1)
    data = dict(diagnostic.data)
    data["fix"] = dict(data["fix"], edits=[dict(e, text="(") for e in data["fix"]["edits"]])
    altered = types.Diagnostic(diagnostic.range, diagnostic.message, severity=diagnostic.severity,
                               code=diagnostic.code, source=diagnostic.source, data=data)
    actions = await session.client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range,
        types.CodeActionContext(diagnostics=[altered], only=[types.CodeActionKind.QuickFix])))
    assert [a.title for a in actions] == ["gradlint (GL001): Suppress GL001 on this line"]


async def test_suppress_action_adds_noqa(session: Session):
    uri = session.open("test_ops.py", FLOAT32)
    [diagnostic] = await session.diagnostics(uri, 1)
    actions = await session.client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range,
        types.CodeActionContext(diagnostics=[diagnostic])))
    suppress = next(a for a in actions if "Suppress" in a.title)
    session.change(uri, workspace_edit_texts(suppress.edit)[uri])
    assert "assert gradcheck(torch.sin, (x,))  # noqa: GL001" in session.texts[uri]
    assert await session.diagnostics(uri, 0) == []


async def test_fix_all(session: Session):
    text = FLOAT32 + textwrap.dedent("""\


        def test_exp():
            y = torch.randn(3, dtype=torch.float64)
            assert gradcheck(torch.exp, (y,))
        """)
    uri = session.open("test_ops.py", text)
    await session.diagnostics(uri, 2)
    actions = await session.client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), types.Range(types.Position(0, 0), types.Position(0, 0)),
        types.CodeActionContext(diagnostics=[], only=["source.fixAll.gradlint"])))
    [fix_all] = actions
    assert fix_all.kind == "source.fixAll.gradlint"
    session.change(uri, workspace_edit_texts(fix_all.edit)[uri])
    assert "y = torch.randn(3, dtype=torch.float64, requires_grad=True)" in session.texts[uri]
    assert await session.diagnostics(uri, 0) == []


async def test_hover_on_a_diagnostic_and_on_a_noqa_code(session: Session):
    uri = session.open("test_ops.py", FLOAT32.replace("(x,))", "(x,))  # noqa: GL002"))
    # GL001, and GL009 for the unused `# noqa: GL002`
    assert [d.code for d in await session.diagnostics(uri, 2)] == ["GL001", "GL009"]
    hover = await session.client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(6, 33)))
    assert "GL001 low-precision-gradcheck-input" in hover.contents.value
    assert "## Why is this bad?" in hover.contents.value
    line = session.texts[uri].splitlines()[6]
    hover = await session.client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(6, line.index("GL002") + 2)))
    assert "GL002 gradcheck-without-requires-grad" in hover.contents.value


async def test_configuration_change_is_applied(session: Session):
    uri = session.open("test_ops.py", FLOAT32)
    await session.diagnostics(uri, 1)
    session.client.set_configuration({"ignore": ["GL001"]}, section="gradlint")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    if session.pull:
        await wait_until(lambda: True)
    assert await session.diagnostics(uri, 0) == []
    session.client.set_configuration({"ignore": [], "severity": {"GL001": "warning"}}, section="gradlint")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    [diagnostic] = await session.diagnostics(uri, 1)
    assert diagnostic.severity == types.DiagnosticSeverity.Warning


async def test_pyproject_is_honoured_and_reloaded(session: Session):
    session.write("pyproject.toml", '[tool.gradlint]\nignore = ["GL001"]\n')
    uri = session.open("test_ops.py", FLOAT32)
    assert await session.diagnostics(uri, 0) == []
    pyproject = session.write("pyproject.toml", '[tool.gradlint]\nignore = []\n')
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=pyproject, type=types.FileChangeType.Changed)]))
    await session.diagnostics(uri, 1)


async def test_syntax_error_keeps_other_findings_and_recovers(session: Session):
    uri = session.open("test_ops.py", FLOAT32)
    await session.diagnostics(uri, 1)
    # half-typed: an unclosed call above the test function
    session.change(uri, [types.TextEdit(types.Range(types.Position(2, 0), types.Position(2, 0)),
                                        "y = torch.ones(3\n")])
    diagnostics = await session.diagnostics(uri, 2)
    assert [d.code for d in diagnostics] == ["GL000", "GL001"]
    assert diagnostics[0].message == "syntax error: '(' was never closed"
    session.change(uri, [types.TextEdit(types.Range(types.Position(2, 16), types.Position(2, 16)), ")")])
    assert [d.code for d in await session.diagnostics(uri, 1)] == ["GL001"]


async def test_ranges_on_lines_with_emoji_cjk_tabs_and_crlf(session: Session):
    text = ("import torch\r\ndef test():\r\n\tx = torch.randn(3, requires_grad=True)\r\n"
            "\ttorch.autograd.gradcheck(torch.sin, (x,), raise_exception='😀你好')\r\n"
            "\ts = '😀'; torch.autograd.gradcheck(torch.sin, (x,))\r\n")
    uri = session.open("test_unicode.py", text)
    diagnostics = await session.diagnostics(uri, 2)
    line = text.split("\r\n")[4]

    def column(prefix: str) -> int:
        return len(prefix.encode("utf-8")) if session.encoding == "utf-8" else \
            len(prefix.encode("utf-16-le")) // 2

    start = line.index("(x,))")  # the inputs argument `(x,)`
    assert diagnostics[1].range == types.Range(types.Position(4, column(line[:start])),
                                               types.Position(4, column(line[:start + 4])))
    # the quick fix edits line 2 correctly even so
    actions = await session.client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostics[1].range,
        types.CodeActionContext(diagnostics=[diagnostics[1]])))
    session.change(uri, workspace_edit_texts(actions[0].edit)[uri])
    assert session.texts[uri].split("\r\n")[2] == "\tx = torch.randn(3, dtype=torch.float64, requires_grad=True)"
    await session.diagnostics(uri, 0)


async def test_close_clears_diagnostics(session: Session):
    uri = session.open("test_ops.py", FLOAT32)
    await session.diagnostics(uri, 1)
    session.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    if not session.pull:
        await wait_until(lambda: session.client.published[-1].uri == uri and
                         not session.client.published[-1].diagnostics, what="cleared diagnostics")


async def test_documents_are_debounced_independently(session: Session):
    if session.pull:
        pytest.skip("the client decides when to pull")
    first = session.open("a.py", FLOAT32)
    second = session.open("b.py", FLOAT32)
    await session.diagnostics(first, 1)
    await session.diagnostics(second, 1)
    # keep typing in `a`: `b` still gets its diagnostics promptly
    for index in range(5):
        session.change(first, [types.TextEdit(types.Range(types.Position(0, 0), types.Position(0, 0)), "# edit\n")])
        if index == 2:
            session.change(second, [types.TextEdit(types.Range(types.Position(6, 0), types.Position(6, 0)), "#")])
    assert await session.diagnostics(second, 0) == []
    await session.diagnostics(first, 1)


async def test_multi_root_workspaces_use_each_folders_configuration(tmp_path):
    from pytest_lsp import ClientServerConfig

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    (second / "pyproject.toml").write_text('[tool.gradlint]\nignore = ["GL001"]\n')
    config = ClientServerConfig(server_command=SERVER, client_factory=make_client)
    client = await config.start()
    try:
        client.set_configuration({"docsUrl": "https://docs.example/gradlint/{code}"},
                                 section="gradlint", scope_uri=uri_of(first))
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"),
            workspace_folders=[types.WorkspaceFolder(uri=uri_of(first), name="first"),
                               types.WorkspaceFolder(uri=uri_of(second), name="second")],
            initialization_options={"settings": {"debounce": 0}}))
        uris = []
        for folder in (first, second):
            path = folder / "test_ops.py"
            path.write_text(FLOAT32)
            uris.append(uri_of(path))
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uris[-1], language_id="python", version=1, text=FLOAT32)))
        await wait_until(lambda: all(any(p.uri == u for p in client.published) for u in uris))
        last = {p.uri: p for p in client.published}
        [diagnostic] = last[uris[0]].diagnostics
        assert diagnostic.code_description.href == "https://docs.example/gradlint/GL001"
        assert list(last[uris[1]].diagnostics) == []
        await client.shutdown_session()
    finally:
        await close_client(client)


async def test_custom_notification_params_reach_the_server(session: Session):
    """`gradlint/setWorkspaceTrust` params arrive as a mapping (pygls gives namedtuples)."""
    session.client.protocol.notify("gradlint/setWorkspaceTrust", {"trusted": True})
    await wait_until(lambda: any("workspace trusted" in m.message for m in session.client.log_messages),
                     what="the trust change to be logged")
    assert not any(m.type == types.MessageType.Error for m in session.client.messages)
