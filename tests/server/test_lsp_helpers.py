"""The test client itself: a test that fails halfway must report its failure, not hang in
its clean-up (pygls's `stop()` waits for ever for a server nobody told to exit)."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from lsp_helpers import SERVER, close_client, make_client

SAFETY_NET = 300.0  # against a hang only; the close takes well under a second when it works


async def test_close_ends_a_server_the_test_never_shut_down(tmp_path):
    client = make_client()
    await client.start_io(*SERVER)
    await client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri()))
    server = client._server
    # the test body failed here: no shutdown_session before the clean-up
    await asyncio.wait_for(close_client(client), SAFETY_NET)
    assert server.returncode == 0  # asked to shut down and exit, not killed
    assert client.stopped


async def test_close_after_shutdown_session_is_a_no_op_for_the_server(tmp_path):
    client = make_client()
    await client.start_io(*SERVER)
    await client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri()))
    await client.shutdown_session()
    await asyncio.wait_for(close_client(client), SAFETY_NET)
    assert client._server.returncode == 0
