"""A big file in the editor: lints of versions nobody will see are given up, the newest is
published, and the server keeps answering meanwhile (a real `gradlint lsp` process)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from gradlint.engine.linter import lint_source

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from autograd_corpus import module  # noqa: E402
from lsp_helpers import close_client  # noqa: E402


async def test_newer_versions_supersede_a_running_lint(tmp_path):
    client = LanguageClient("big-files", "1")
    published: dict[int | None, int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams):
        published[params.version] = len(params.diagnostics)

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params):
        pass

    await client.start_io(sys.executable, "-m", "gradlint", "lsp")
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri(),
            initialization_options={"settings": {"debounce": 0}}))
        client.initialized(types.InitializedParams())
        text = module(4000)
        path = tmp_path / "big.py"
        path.write_text(text)
        uri = path.as_uri()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        await asyncio.sleep(0.3)  # the lint of version 1 is under way
        for version in range(2, 7):
            text = text.replace("unit 0)", f"unit 0, v{version})", 1) if version == 2 else \
                text.replace(f"unit 0, v{version - 1})", f"unit 0, v{version})", 1)
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(text=text)]))
        # the event loop is free while the lint thread works: a request is answered
        with pytest.raises(JsonRpcException):  # (an error answer is an answer)
            await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="gradlint.noSuchCommand", arguments=[]))
        expected = len(lint_source(text, str(path)).findings)
        deadline = time.monotonic() + 600
        while published.get(6) != expected:  # (early findings of version 6 may come first)
            assert time.monotonic() < deadline, published
            await asyncio.sleep(0.05)
        assert expected > 0
        assert not set(published) & {2, 3, 4, 5}  # superseded before they were published
    finally:
        await close_client(client)


async def test_the_trees_of_a_big_lint_are_frozen_out_of_the_collectors_sight():
    """After a lint that parsed a big file, its trees are collected once and frozen (a full
    collection over them cost a 50,000-line file's edit 0.9 s, one edit in twenty); a small
    file's lint leaves the collector alone; and what a superseded lint parsed counts (typing
    right after opening a big file). No timing: the newer version arrives when the older
    lint has parsed a given amount, whatever the machine's speed."""
    import gc

    from gradlint.engine.linter import LintOptions
    from gradlint.server.linting import FREEZE_AFTER_BYTES, Linter

    linter = Linter()
    gc.unfreeze()
    try:
        await linter.lint(module(300), "small.py", LintOptions())
        await linter.call(lambda: None)  # whatever the lint queued on the lint thread has run
        assert gc.get_freeze_count() == 0
        before = linter.cache.blocks.parsed_bytes
        await linter.lint(module(15000), "big.py", LintOptions())
        await linter.call(lambda: None)
        assert linter.cache.blocks.parsed_bytes - before >= FREEZE_AFTER_BYTES
        assert gc.get_freeze_count() > 100_000
    finally:
        gc.unfreeze()
        linter.shutdown()

    # a superseded lint's parsing counts: the newer lint alone stays under the threshold
    newer = module(6000, start=200_000)
    alone = Linter()
    await alone.lint(newer, "big.py", LintOptions())
    newer_bytes = alone.cache.blocks.parsed_bytes
    alone.shutdown()
    assert newer_bytes < FREEZE_AFTER_BYTES
    linter = Linter()
    loop = asyncio.get_running_loop()
    blocks = linter.cache.blocks
    parse = blocks.parser
    tasks: list[asyncio.Task] = []

    async def supersede() -> None:  # on the event loop: the editor sends version 2
        older = linter._latest.get("big")
        tasks.append(asyncio.ensure_future(linter.lint(newer, "big.py", LintOptions(), supersede="big")))
        while linter._latest.get("big") is older:  # version 2's lint has taken over
            await asyncio.sleep(0)

    def parser(text):  # on the lint thread, while version 1 parses
        parsed = parse(text)
        if not tasks and blocks.parsed_bytes >= FREEZE_AFTER_BYTES - newer_bytes:
            asyncio.run_coroutine_threadsafe(supersede(), loop).result()
        return parsed

    blocks.parser = parser
    gc.unfreeze()
    try:
        first = await linter.lint(module(15000, start=100_000), "big.py", LintOptions(), supersede="big")
        assert first is None, "version 1 was not superseded"
        assert blocks.parsed_bytes < FREEZE_AFTER_BYTES  # it stopped part-way
        assert gc.get_freeze_count() == 0
        [task] = tasks
        assert await task is not None
        await linter.call(lambda: None)
        assert blocks.parsed_bytes >= FREEZE_AFTER_BYTES
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        linter.shutdown()
