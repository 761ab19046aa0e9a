"""A run that fails in the editor leads with its cause and links the static finding on the
same code (issue 29), end to end: a real LSP client, the real server, a real worker."""

from __future__ import annotations

import textwrap

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import SERVER, make_client, uri_of, wait_until

# a custom op that clamps its input in place without declaring it (GL032), whose backward
# reads the clamped input: gradcheck raises in the backward, opcheck's schema test fails
CLAMP_OP = textwrap.dedent('''\
    import torch


    @torch.library.custom_op("editorcause::relu_inplace", mutates_args=())
    def relu_inplace(x: torch.Tensor) -> torch.Tensor:
        y = x.clamp_(min=0.0)
        return y.clone()


    @relu_inplace.register_fake
    def _(x):
        return torch.empty_like(x)


    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)


    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0)


    relu_inplace.register_autograd(backward, setup_context=setup_context)
''')
LINES = CLAMP_OP.splitlines()
WRITE = LINES.index("    y = x.clamp_(min=0.0)")  # 0-based, as LSP counts
TORCH_INPLACE = "one of the variables needed for gradient computation has been modified by an inplace operation"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient, tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    path = root / "clamp_op.py"
    path.write_text(CLAMP_OP)
    capabilities = client_capabilities("visual_studio_code")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options={"settings": {"debounce": 0, "runTimeout": 120,
                                             "docsUrl": "https://docs.example/rules/{code}-{name}"},
                                "workspaceTrusted": True}))
    lsp_client.uri = uri_of(path)
    lsp_client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=lsp_client.uri, language_id="python", version=1, text=CLAMP_OP)))
    yield
    await lsp_client.shutdown_session()


async def test_the_run_points_at_the_write_and_links_the_finding_on_it(client: LanguageClient):
    # the static finding is there first
    def finding():
        return [d for d in client.diagnostics.get(client.uri, []) if d.code == "GL032"]
    [gl032] = await wait_until(finding, what="the GL032 diagnostic")
    assert gl032.range.start.line == WRITE

    lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(client.uri)))
    [lens] = lenses
    reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=lens.command.command, arguments=lens.command.arguments))
    result = reply["result"]
    assert (result["status"], result["verdict"]) == ("fail", "op_schema")
    assert result["location"]["line"] == WRITE + 1
    assert [(f["code"], f["line"]) for f in result["related_findings"]] == [("GL032", WRITE + 1)]

    # the run's diagnostic is on the line that writes, and links the finding there
    def run_diagnostics():
        return [d for d in client.diagnostics.get(client.uri, []) if d.code == "gradcheck"]
    [diagnostic] = await wait_until(run_diagnostics, what="the gradcheck diagnostic")
    assert diagnostic.range.start.line == WRITE
    assert diagnostic.message.startswith(
        "gradcheck editorcause::relu_inplace: opcheck schema: the op writes to its input `x` "
        "(`y = x.clamp_(min=0.0)`, line 6) but mutates_args does not list it")
    assert diagnostic.message.count(TORCH_INPLACE) == 1
    [related] = diagnostic.related_information
    assert related.location.uri == client.uri and related.location.range == gl032.range
    assert related.message.startswith("GL032 (line 6): custom op `editorcause::relu_inplace` writes to its input `x`")

    lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(client.uri)))
    assert lenses[0].command.title.startswith("✗ opcheck schema: the op writes to its input `x`")

    # the hover and the report view name the cause, link the finding's line and its rule's docs,
    # and say torch's sentence once
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(client.uri), diagnostic.range.start))
    report = await client.protocol.send_request_async("gradlint/lastReport", {"uri": client.uri})
    for markdown in (hover.contents.value, report.markdown):
        assert "Likely causes (`gradlint check` on the same code):" in markdown
        assert f"- [GL032](https://docs.example/rules/GL032-unlisted-mutation) [clamp_op.py:6]({client.uri}#L6): " \
               "custom op `editorcause::relu_inplace` writes to its input `x`" in markdown
        assert markdown.count(TORCH_INPLACE) == 1
        assert "Where: `clamp_op.py:6 (relu_inplace)`" in markdown
