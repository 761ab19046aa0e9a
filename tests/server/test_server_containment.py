"""In the editor, runs stay inside the workspace folders, symlinks followed: trust is
granted to them, so a file opened from elsewhere, or a link out of the workspace, gets
no "▶ gradcheck" lens and its runs are refused (`gradlint run PATH` names it instead).

Whether a run is allowed is asked on a line with nothing to run: inside, the server
answers "no autograd Function or gradcheck call here"; no worker is ever started."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import close_client, SERVER, make_client, uri_of

TEXT = """\
import torch

x = 1


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
"""


@pytest.fixture
async def session(tmp_path):
    workspace, outside = tmp_path / "workspace", tmp_path / "elsewhere"
    workspace.mkdir()
    outside.mkdir()
    for folder in (workspace, outside):
        (folder / "ops.py").write_text(TEXT)
    (workspace / "linked.py").symlink_to(outside / "ops.py")
    client = await ClientServerConfig(server_command=SERVER, client_factory=make_client).start()
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"), root_uri=uri_of(workspace),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(workspace), name="workspace")],
        initialization_options={"workspaceTrusted": True}))
    uris = {"inside": uri_of(workspace / "ops.py"), "opened from elsewhere": uri_of(outside / "ops.py"),
            "a link out": (workspace / "linked.py").absolute().as_uri()}
    for uri in uris.values():
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=TEXT)))
    yield client, uris
    await client.shutdown_session()
    await close_client(client)


async def _answer(client: LanguageClient, uri: str) -> str:
    with pytest.raises(JsonRpcException) as error:
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck", arguments=[{"uri": uri, "position": {"line": 2, "character": 0}}]))
    return str(error.value)


async def _lenses(client: LanguageClient, uri: str) -> int:
    return len(await client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri))))


async def test_runs_stay_inside_the_workspace_folders(session):
    client, uris = session
    assert "no autograd Function, custom op or gradcheck call here" in await _answer(client, uris["inside"])
    assert await _lenses(client, uris["inside"]) == 1
    for name in ("opened from elsewhere", "a link out"):
        answer = await _answer(client, uris[name])
        assert "is outside the workspace folders" in answer, (name, answer)
        assert await _lenses(client, uris[name]) == 0, name
    assert "(a link to " in await _answer(client, uris["a link out"])
    assert any("outside the workspace folders" in m.message for m in client.messages)
    file_run = client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="gradlint.runGradcheckFile", arguments=[{"uri": uris["a link out"]}]))
    with pytest.raises(JsonRpcException, match="outside the workspace folders"):
        await file_run
