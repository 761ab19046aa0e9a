"""The editor's ▶ lens over a torch.library custom op, end to end: a real LSP client, the
real server, a real worker running gradcheck and opcheck."""

from __future__ import annotations

import re
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import SERVER, make_client, uri_of, wait_until

SIN_OPS = (Path(__file__).resolve().parent.parent / "fixtures" / "custom_ops" / "run" / "sin_ops.py").read_text()
LINES = SIN_OPS.splitlines()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient, tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "sin_ops.py").write_text(SIN_OPS)
    capabilities = client_capabilities("visual_studio_code")
    capabilities.workspace.code_lens = types.CodeLensWorkspaceClientCapabilities(refresh_support=True)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options={"settings": {"debounce": 0, "runTimeout": 120}, "workspaceTrusted": True}))
    lsp_client.uri = uri_of(root / "sin_ops.py")
    lsp_client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=lsp_client.uri, language_id="python", version=1, text=SIN_OPS)))
    yield
    await lsp_client.shutdown_session()


async def _lenses(client: LanguageClient) -> dict[str, types.CodeLens]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        types.TextDocumentIdentifier(client.uri)))
    return {LINES[lens.range.start.line]: lens for lens in lenses}


async def _run(client: LanguageClient, lens: types.CodeLens) -> dict:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=lens.command.command, arguments=lens.command.arguments))


GOOD = '@torch.library.custom_op("fixture::goodsin", mutates_args=())'
BAD = '@torch.library.custom_op("fixture::badsin", mutates_args=())'


async def test_a_lens_above_each_custom_op_runs_gradcheck_and_opcheck(client: LanguageClient):
    lenses = await _lenses(client)
    # above each op's definition (its decorator line), nowhere else
    assert {line: lens.command.title for line, lens in lenses.items()} == {
        GOOD: "▶ gradcheck + opcheck", BAD: "▶ gradcheck + opcheck"}

    reply = await _run(client, lenses[BAD])
    assert reply["target"] == "fixture::badsin"
    result = reply["result"]
    assert (result["status"], result["verdict"]) == ("fail", "wrong_gradient")
    assert result["target"]["op"] == "fixture::badsin"
    # the failure is a diagnostic on the registered backward, naming the op and the input
    diagnostics = await wait_until(
        lambda: [d for d in client.diagnostics.get(client.uri, []) if d.code == "gradcheck"],
        what="gradcheck diagnostics")
    [diagnostic] = diagnostics
    assert diagnostic.range.start.line == LINES.index("def bad_backward(ctx, grad):")
    assert diagnostic.message.startswith("gradcheck fixture::badsin: Jacobian mismatch: input x, output 0")
    lenses = await _lenses(client)
    assert lenses[BAD].command.title.startswith("✗ Jacobian mismatch: input x, output 0")

    reply = await _run(client, lenses[GOOD])
    assert reply["result"]["status"] == "pass", reply["result"]["summary"]
    lenses = await _lenses(client)
    assert re.fullmatch(r"✓ gradcheck \+ opcheck \d+\.\d s", lenses[GOOD].command.title), \
        lenses[GOOD].command.title


async def test_the_code_action_inside_an_op_names_it(client: LanguageClient):
    line = LINES.index("def goodsin(x: torch.Tensor) -> torch.Tensor:") + 1
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(client.uri),
        types.Range(types.Position(line, 4), types.Position(line, 4)), types.CodeActionContext([])))
    assert [a.title for a in actions if a.title.startswith("Run gradcheck")] == \
        ["Run gradcheck on `fixture::goodsin`"]
