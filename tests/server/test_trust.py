"""Trust comes only from a boolean `true`, only through the client's own channels:
`initializationOptions.workspaceTrusted` and `gradlint/setWorkspaceTrust`. Strings,
numbers, null and objects are untrusted (and logged); settings never carry trust, since a
workspace's own settings file can supply them. A client that says nothing about trust (Neovim,
Emacs, Helix) gets the folders the user trusted with `gradlint trust`, read from the user's
configuration whenever it changes; a client that manages trust (VS Code) keeps its own word.

Whether a run is allowed is asked with "run gradcheck" on a line with nothing to run: a
trusted server answers "no autograd Function or gradcheck call here", an untrusted one
refuses first, and no worker is ever started."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from gradlint.engine import trust_store
from lsp_helpers import close_client, SERVER, make_client, uri_of, wait_until

TEXT = "import torch\n\nx = 1\n"
NOT_BOOLEANS = ["true", "false", "no", "yes", 1, 0, None, {"value": True}, [True]]
TRUSTED, REFUSED = "no autograd Function", "trust"


async def _start(tmp_path, initialization_options: dict, configuration: dict | None = None,
                 user_config: Path | None = None) -> LanguageClient:
    root = tmp_path / "workspace"
    root.mkdir(exist_ok=True)
    (root / "ops.py").write_text(TEXT)
    env = {**os.environ, "GRADLINT_CONFIG_DIR": str(user_config or tmp_path / "user-config")}
    client = await ClientServerConfig(server_command=SERVER, client_factory=make_client,
                                      server_env=env).start()
    capabilities = client_capabilities("visual_studio_code")
    if configuration is not None:
        client.set_configuration(configuration, section="gradlint")
    else:
        capabilities.workspace.configuration = False
    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options=initialization_options))
    client.uri = uri_of(root / "ops.py")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=client.uri, language_id="python", version=1, text=TEXT)))
    return client


async def _stop(client: LanguageClient) -> None:
    await client.shutdown_session()
    await close_client(client)


async def _run_answer(client: LanguageClient) -> str:
    with pytest.raises(JsonRpcException) as error:
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck",
            arguments=[{"uri": client.uri, "position": {"line": 2, "character": 0}}]))
    message = str(error.value)
    assert TRUSTED in message or "trust the workspace" in message or "gradlint trust" in message, message
    return TRUSTED if TRUSTED in message else REFUSED


def _logged(client: LanguageClient, text: str) -> bool:
    return any(text in m.message for m in client.log_messages)


@pytest.mark.parametrize("value", NOT_BOOLEANS, ids=repr)
async def test_initialization_options_trust_only_a_boolean_true(tmp_path, value):
    client = await _start(tmp_path, {"workspaceTrusted": value})
    try:
        assert await _run_answer(client) == REFUSED
        await wait_until(lambda: _logged(client, "initializationOptions.workspaceTrusted"),
                         what="the rejected value to be logged")
    finally:
        await _stop(client)


async def test_initialization_options_true_trusts(tmp_path):
    client = await _start(tmp_path, {"workspaceTrusted": True})
    try:
        assert await _run_answer(client) == TRUSTED
    finally:
        await _stop(client)


async def test_set_workspace_trust_accepts_only_a_boolean(tmp_path):
    client = await _start(tmp_path, {})
    try:
        assert await _run_answer(client) == REFUSED
        for value in NOT_BOOLEANS:
            client.protocol.notify("gradlint/setWorkspaceTrust", {"trusted": True})
            await wait_until(lambda: _logged(client, "workspace trusted"), what="trust")
            assert await _run_answer(client) == TRUSTED
            client.log_messages.clear()
            client.protocol.notify("gradlint/setWorkspaceTrust", {"trusted": value})
            await wait_until(lambda: _logged(client, "workspace not trusted"), what="untrust")
            assert await _run_answer(client) == REFUSED, value
            assert _logged(client, "gradlint/setWorkspaceTrust: ")
        for params in ([True], "true", {"trust": True}):  # not even the right shape
            client.log_messages.clear()
            client.protocol.notify("gradlint/setWorkspaceTrust", params)
            await wait_until(lambda: _logged(client, "workspace not trusted"), what="untrust")
            assert await _run_answer(client) == REFUSED, params
        # as a request too (the extension sends a notification; both are served)
        await client.protocol.send_request_async("gradlint/setWorkspaceTrust", {"trusted": True})
        assert await _run_answer(client) == TRUSTED
        await client.protocol.send_request_async("gradlint/setWorkspaceTrust", {"trusted": "false"})
        assert await _run_answer(client) == REFUSED
    finally:
        await _stop(client)


async def test_settings_never_carry_trust(tmp_path):
    """A workspace's settings file (e.g. .vscode/settings.json) can say anything:
    neither the configuration the server pulls nor the one pushed to it grants trust."""
    client = await _start(tmp_path, {"settings": {}}, configuration={"workspaceTrusted": True})
    try:
        await wait_until(lambda: _logged(client, "workspace/configuration: `workspaceTrusted` is ignored"),
                         what="the ignored key to be logged")
        assert await _run_answer(client) == REFUSED
        for settings in ({"gradlint": {"workspaceTrusted": True}}, {"workspaceTrusted": True}):
            client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))
            await wait_until(lambda: _logged(client, "workspace/didChangeConfiguration: `workspaceTrusted`"),
                             what="the ignored key to be logged")
            client.log_messages.clear()
            assert await _run_answer(client) == REFUSED
    finally:
        await _stop(client)


def _trust(user_config: Path, folder: Path) -> None:
    store = trust_store.load(user_config / trust_store.FILE_NAME)
    store.add(folder)
    trust_store.save(store)


async def test_a_client_without_trust_of_its_own_gets_the_users_trusted_folders(tmp_path):
    """Neovim, Emacs, Helix: refused with the one command that trusts the folder; after
    `gradlint trust` (the list in the user's configuration changes), the same server runs."""
    user_config = tmp_path / "user-config"
    client = await _start(tmp_path, {}, user_config=user_config)
    root = (tmp_path / "workspace").resolve()
    try:
        with pytest.raises(JsonRpcException) as refused:
            await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="gradlint.runGradcheck",
                arguments=[{"uri": client.uri, "position": {"line": 2, "character": 0}}]))
        assert f"`gradlint trust {root}`" in str(refused.value)
        await wait_until(lambda: any(f"gradlint trust {root}" in m.message for m in client.messages),
                         what="the refusal shown to the user")
        _trust(user_config, tmp_path)  # a folder above the workspace trusts it too
        assert await _run_answer(client) == TRUSTED
        store = trust_store.load(user_config / trust_store.FILE_NAME)
        store.remove(tmp_path)
        trust_store.save(store)
        assert await _run_answer(client) == REFUSED
    finally:
        await _stop(client)


async def test_a_client_with_trust_of_its_own_keeps_its_word(tmp_path):
    """VS Code in Restricted Mode: the folder being in the user's list changes nothing."""
    user_config = tmp_path / "user-config"
    _trust(user_config, tmp_path)
    client = await _start(tmp_path, {"workspaceTrusted": False}, user_config=user_config)
    try:
        assert await _run_answer(client) == REFUSED
    finally:
        await _stop(client)


async def test_a_trusted_folders_list_others_can_write_is_not_honoured(tmp_path):
    user_config = tmp_path / "user-config"
    _trust(user_config, tmp_path)
    os.chmod(user_config / trust_store.FILE_NAME, 0o666)
    client = await _start(tmp_path, {}, user_config=user_config)
    try:
        with pytest.raises(JsonRpcException, match="can be written by other users"):
            await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="gradlint.runGradcheck",
                arguments=[{"uri": client.uri, "position": {"line": 2, "character": 0}}]))
    finally:
        await _stop(client)
