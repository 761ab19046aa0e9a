"""Workspace diagnostics through the real server: `workspace/diagnostic` for pull clients
(incremental, held open while nothing changes, honouring excludes, never parsing files
that cannot hold a finding), and published diagnostics of closed files for push clients
that ask for them with `diagnosticMode: "workspace"`."""

from __future__ import annotations

import asyncio
import re
import textwrap

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import SERVER, make_client, uri_of, wait_until

FLOAT32 = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
    """)
FIXED = FLOAT32.replace("randn(3, ", "randn(3, dtype=torch.float64, ")


def capabilities(pull: bool) -> types.ClientCapabilities:
    caps = client_capabilities("visual_studio_code")
    caps.workspace.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
        dynamic_registration=True)
    if pull:
        caps.text_document.diagnostic = types.DiagnosticClientCapabilities(dynamic_registration=True)
        caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


def make_workspace(root):
    (root / "pkg").mkdir()
    (root / "pkg" / "test_a.py").write_text(FLOAT32)
    (root / "pkg" / "test_b.py").write_text(FLOAT32.replace("test_sin", "test_b"))
    (root / "pkg" / "clean.py").write_text("import torch\n\nx = torch.ones(2)\n")
    for index in range(20):  # files that cannot hold a finding: never parsed
        (root / "pkg" / f"util_{index}.py").write_text(f"def f{index}(x):\n    return x + {index}\n")
    (root / "generated").mkdir()
    (root / "generated" / "test_gen.py").write_text(FLOAT32)
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "test_dep.py").write_text(FLOAT32)
    (root / "pyproject.toml").write_text('[tool.gradlint]\nexclude = ["generated/"]\n')


async def start(lsp_client: LanguageClient, root, pull: bool, settings: dict):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(pull), root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="ws")],
        initialization_options={"settings": {"debounce": 20, **settings}}))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def pull_client(lsp_client: LanguageClient, tmp_path):
    make_workspace(tmp_path)
    lsp_client.root = tmp_path
    await start(lsp_client, tmp_path, pull=True, settings={})
    yield
    await lsp_client.shutdown_session()


def by_uri(report: types.WorkspaceDiagnosticReport) -> dict:
    return {item.uri: item for item in report.items}


def stats(client: LanguageClient) -> list[tuple[int, int, int]]:
    found = []
    for message in client.log_messages:
        match = re.search(r"workspace diagnostics: (\d+) files, (\d+) linted, (\d+) parsed", message.message)
        if match:
            found.append(tuple(int(g) for g in match.groups()))
    return found


def watched(client: LanguageClient, *changes: tuple) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=uri_of(path), type=kind) for path, kind in changes]))


async def test_workspace_diagnostics_are_advertised_and_answered(pull_client: LanguageClient):
    root = pull_client.root
    assert pull_client.capabilities.text_document.diagnostic is not None
    report = await pull_client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    items = by_uri(report)
    # files with findings only: excluded, virtualenv and clean files have nothing to say
    assert set(items) == {uri_of(root / "pkg" / "test_a.py"), uri_of(root / "pkg" / "test_b.py")}
    item = items[uri_of(root / "pkg" / "test_a.py")]
    assert item.kind == "full" and item.version is None
    [diagnostic] = item.items
    assert diagnostic.code == "GL001"
    assert diagnostic.range == types.Range(types.Position(6, 32), types.Position(6, 36))
    await wait_until(lambda: stats(pull_client), what="the scan's log line")
    files, linted, parsed = stats(pull_client)[0]
    assert files == linted == 23  # pkg/ only: generated/ is excluded, .venv skipped
    assert parsed == 2  # the 20 files without `torch`, and clean.py, were read, never parsed


async def test_unchanged_workspace_is_held_then_answered_incrementally(pull_client: LanguageClient):
    root = pull_client.root
    first = await pull_client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    previous = [types.PreviousResultId(uri=item.uri, value=item.result_id) for item in first.items]
    pending = asyncio.ensure_future(pull_client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=previous)))
    await asyncio.sleep(1.0)
    assert not pending.done()  # nothing changed: no answer yet (no busy polling)
    (root / "pkg" / "test_a.py").write_text(FIXED)
    (root / "pkg" / "new_test.py").write_text(FLOAT32)
    watched(pull_client, (root / "pkg" / "test_a.py", types.FileChangeType.Changed),
            (root / "pkg" / "new_test.py", types.FileChangeType.Created))
    report = await asyncio.wait_for(pending, 300)
    items = by_uri(report)
    assert items[uri_of(root / "pkg" / "test_a.py")].kind == "full"
    assert len(items[uri_of(root / "pkg" / "test_a.py")].items) == 0
    assert items[uri_of(root / "pkg" / "test_b.py")].kind == "unchanged"
    assert len(items[uri_of(root / "pkg" / "new_test.py")].items) == 1
    files, linted, parsed = stats(pull_client)[-1]
    assert (files, linted, parsed) == (24, 2, 2)  # only the changed files were read again

    previous = [types.PreviousResultId(uri=item.uri, value=item.result_id) for item in report.items]
    (root / "pkg" / "new_test.py").unlink()
    watched(pull_client, (root / "pkg" / "new_test.py", types.FileChangeType.Deleted))
    report = await asyncio.wait_for(pull_client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=previous)), 300)
    gone = by_uri(report)[uri_of(root / "pkg" / "new_test.py")]
    assert gone.kind == "full" and len(gone.items) == 0  # cleared in the client


async def test_open_documents_are_reported_from_the_editor(pull_client: LanguageClient):
    root = pull_client.root
    uri = uri_of(root / "pkg" / "test_a.py")
    pull_client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=7, text=FIXED)))
    report = await pull_client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    item = by_uri(report)[uri]
    assert item.version == 7 and len(item.items) == 0


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def push_client(lsp_client: LanguageClient, tmp_path):
    make_workspace(tmp_path)
    lsp_client.root = tmp_path
    await start(lsp_client, tmp_path, pull=False, settings={"diagnosticMode": "workspace"})
    yield
    await lsp_client.shutdown_session()


async def test_push_clients_get_closed_files_when_they_ask(push_client: LanguageClient):
    root = push_client.root
    uri = uri_of(root / "pkg" / "test_b.py")
    await wait_until(lambda: len(push_client.diagnostics.get(uri, ())) == 1, what="published closed file")
    assert uri_of(root / "generated" / "test_gen.py") not in push_client.diagnostics
    # open, edit, close without saving: the file on disk is what is shown again
    push_client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=FIXED)))
    await wait_until(lambda: len(push_client.diagnostics.get(uri, "x")) == 0, what="open buffer")
    push_client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    await wait_until(lambda: len(push_client.diagnostics.get(uri, ())) == 1, what="back to disk")
    # a fixed file on disk is cleared
    (root / "pkg" / "test_b.py").write_text(FIXED)
    watched(push_client, (root / "pkg" / "test_b.py", types.FileChangeType.Changed))
    await wait_until(lambda: len(push_client.diagnostics.get(uri, "x")) == 0, what="cleared")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def quiet_client(lsp_client: LanguageClient, tmp_path):
    make_workspace(tmp_path)
    await start(lsp_client, tmp_path, pull=False, settings={})
    yield
    await lsp_client.shutdown_session()


async def test_push_clients_get_open_files_only_by_default(quiet_client: LanguageClient):
    await asyncio.sleep(1.0)
    assert quiet_client.diagnostics == {}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def off_client(lsp_client: LanguageClient, tmp_path):
    make_workspace(tmp_path)
    await start(lsp_client, tmp_path, pull=True, settings={"diagnosticMode": "openFilesOnly"})
    yield
    await lsp_client.shutdown_session()


async def test_open_files_only_turns_workspace_reports_off(off_client: LanguageClient):
    report = await off_client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    assert len(report.items) == 0


async def test_show_configuration_command(pull_client: LanguageClient):
    root = pull_client.root
    uri = uri_of(root / "generated" / "test_gen.py")
    report = await pull_client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="gradlint.showConfiguration", arguments=[uri]))
    assert report["uri"] == uri
    assert report["excluded"] is True and report["excludedBy"] == "generated/"
    assert report["settings"]["exclude"] == {"value": ["generated/"], "origin": str(root / "pyproject.toml")}
    assert report["settings"]["select"]["origin"] == "default"
    assert report["editor"]["diagnosticMode"] == "auto"
