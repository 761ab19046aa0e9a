"""A broken pyproject.toml in the editor: a visible message, and diagnostics go on with the
default settings (the command line makes it exit 2 instead: tests/test_hostile_input.py)."""

from __future__ import annotations

import asyncio
import os

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from lsp_helpers import close_client, SERVER, make_client, uri_of, wait_until

FLOAT32 = "import torch\nx = torch.randn(3, requires_grad=True)\ntorch.autograd.gradcheck(torch.sin, (x,))\n"
BAD = {
    "binary": (bytes(range(256)), "not UTF-8 text"),
    "tool is a number": (b"tool = 5\n", "`tool` must be a table, not an integer"),
    "a FIFO": (None, "not a regular file (a FIFO)"),
}


@pytest.mark.parametrize("name", list(BAD))
async def test_a_bad_pyproject_is_shown_and_linting_goes_on(tmp_path, name):
    content, message = BAD[name]
    root = tmp_path / "workspace"
    root.mkdir()
    if content is None:
        os.mkfifo(root / "pyproject.toml")
    else:
        (root / "pyproject.toml").write_bytes(content)
    (root / "ops.py").write_text(FLOAT32)
    client = await ClientServerConfig(server_command=SERVER, client_factory=make_client).start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("neovim"), root_uri=uri_of(root),
            initialization_options={"settings": {"debounce": 0}}))
        uri = uri_of(root / "ops.py")
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=FLOAT32)))
        report = await asyncio.wait_for(client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri))), 300)
        assert [d.code for d in report.items] == ["GL001"]  # the default settings
        [shown] = await wait_until(lambda: [m for m in client.messages if "pyproject.toml" in m.message],
                                   what="the configuration problem to be shown")
        assert shown.type == types.MessageType.Error and message in shown.message
        await client.shutdown_session()
    finally:
        await close_client(client)
