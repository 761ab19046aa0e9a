"""Run gradcheck from the editor, end to end: code lens -> command -> progress ->
diagnostics and report, through the real server and a real worker process."""

from __future__ import annotations

import asyncio
import re
import textwrap
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import close_client, SERVER, make_client, uri_of, wait_until

OPS = textwrap.dedent("""\
    import time

    import torch


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x  # wrong: d(x*x)/dx is 2x


    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2


    # gradlint: inputs=(torch.ones(2, dtype=torch.float64, requires_grad=True),)
    class Forever(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            while True:
                time.sleep(0.01)

        @staticmethod
        def backward(ctx, grad):
            return grad
    """)


def _capabilities() -> types.ClientCapabilities:
    capabilities = client_capabilities("visual_studio_code")
    capabilities.workspace.code_lens = types.CodeLensWorkspaceClientCapabilities(refresh_support=True)
    return capabilities


@pytest_lsp.fixture(params=[True, False], ids=["trusted", "untrusted"],
                    config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient, request, tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "ops.py").write_text(OPS)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=_capabilities(), root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options={"settings": {"debounce": 0, "runTimeout": 60},
                                "workspaceTrusted": request.param}))
    uri = uri_of(root / "ops.py")
    lsp_client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=OPS)))
    lsp_client.uri = uri
    lsp_client.trusted = request.param
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


async def _lenses(client: LanguageClient) -> dict[str, types.CodeLens]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        types.TextDocumentIdentifier(client.uri)))
    lines = OPS.splitlines()
    return {lines[lens.range.start.line].split("(")[0].replace("class ", ""): lens for lens in lenses}


async def test_code_lens_command_progress_diagnostics_and_report(client: LanguageClient):
    lenses = await _lenses(client)
    assert {name: lens.command.title for name, lens in lenses.items()} == {
        "Square": "▶ gradcheck", "Double": "▶ gradcheck", "Forever": "▶ gradcheck"}
    command = lenses["Square"].command
    if not client.trusted:
        with pytest.raises(JsonRpcException, match="trust the workspace"):
            await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command=command.command, arguments=command.arguments))
        assert any("trust the workspace" in m.message for m in client.messages)
        return
    reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command.command, arguments=command.arguments))
    result = reply["result"]
    assert result["status"] == "fail" and result["verdict"] == "wrong_gradient"
    assert reply["inputs_source"].startswith("synthesized")
    # progress: begin ... end, on a token the client created
    [token] = list(client.progress_reports)
    kinds = [type(value).__name__ for value in client.progress_reports[token]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert client.progress_reports[token][0].cancellable is True
    # the failure is a diagnostic on backward's line
    def run_diagnostics():
        return [d for d in client.diagnostics.get(client.uri, []) if d.code == "gradcheck"]
    [diagnostic] = await wait_until(run_diagnostics, what="gradcheck diagnostics")
    assert diagnostic.range.start.line == OPS.splitlines().index("    def backward(ctx, grad):")
    # the mismatch pattern is in the diagnostic and the lens, first
    assert diagnostic.message.startswith(
        "gradcheck Square: Jacobian mismatch for x, output 0: analytical = 0.5 × numerical (a constant factor)")
    # the lens shows the outcome, the hover and the last report show the table
    lenses = await _lenses(client)
    assert lenses["Square"].command.title == \
        "✗ Jacobian mismatch for x, output 0: analytical = 0.5 × numerical (a constant factor)"
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(client.uri), diagnostic.range.start))
    assert "| input → output element | numerical | analytical | \\|Δ\\| |" in hover.contents.value
    # at most four columns: the report is shown beside the code, in half a window or less
    assert all(line.count(" | ") <= 3 for line in hover.contents.value.splitlines() if line.startswith("| `"))
    report = await client.protocol.send_request_async("gradlint/lastReport", {"uri": client.uri})
    assert report.title == "gradcheck Square"
    assert re.search(r"\| `x\[\d+, \d+\]` → `output 0\[\d+, \d+\]` \|", report.markdown), report.markdown


async def test_passing_run_and_code_action(client: LanguageClient):
    if not client.trusted:
        pytest.skip("runs need trust")
    line = OPS.splitlines().index("class Double(torch.autograd.Function):") + 3
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(client.uri),
        types.Range(types.Position(line, 0), types.Position(line, 0)), types.CodeActionContext([])))
    [run] = [a for a in actions if a.title.startswith("Run gradcheck")]
    assert run.title == "Run gradcheck on `Double`"
    reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=run.command.command, arguments=run.command.arguments))
    assert reply["result"]["status"] == "pass"
    lenses = await _lenses(client)
    assert lenses["Double"].command.title.startswith("✓ gradcheck")


async def test_cancel_keeps_the_server_responsive_and_leaves_no_orphans(client: LanguageClient):
    if not client.trusted:
        pytest.skip("runs need trust")
    lenses = await _lenses(client)
    command = lenses["Forever"].command
    run = asyncio.ensure_future(client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command.command, arguments=command.arguments)))
    token = await wait_until(lambda: next(iter(client.progress_reports), None), what="progress")
    # wait until the user's forward is running (and looping) in the worker
    await wait_until(lambda: any(type(v).__name__ == "WorkDoneProgressReport" and
                                 "importing" in (v.message or "") for v in client.progress_reports[token]),
                     timeout=300, what="the run to start")
    # the server answers other requests while the run is in flight (it never ends by itself)
    await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(client.uri), types.Position(0, 0)))
    assert not run.done()
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    reply = await asyncio.wait_for(run, 300)
    assert reply["result"]["status"] == "cancelled"
    await wait_until(lambda: len(_worker_pids(client)) == 1, timeout=300, what="the run's process to be killed")
    # a later run works
    reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=lenses["Double"].command.command, arguments=lenses["Double"].command.arguments))
    assert reply["result"]["status"] == "pass"
    pids = _worker_pids(client)
    assert pids, "the worker should be running"
    await client.shutdown_session()
    client.capabilities = None  # already shut down: the fixture must not do it again
    await wait_until(lambda: not any(_alive(pid) for pid in pids), timeout=300, what="workers to exit")


def _worker_pids(client: LanguageClient) -> list[int]:
    """The live processes of the worker of *this* test's server: the worker (a child of the
    server, in a session of its own) and every run forked from it (same session, even if a
    run outlived its worker). Workers of other servers on the machine (other tests, other
    test runs) are not counted: counting every `gradlint/worker/__main__.py` on the machine
    made this test wait for processes it does not own."""
    server = client._server.pid  # pygls keeps the server's subprocess there
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid, _pgrp, session = stat[stat.rindex(")") + 2:].split()[:4]
        if state != "Z" and any(part.endswith(b"gradlint/worker/__main__.py") for part in command):
            table[int(entry.name)] = (int(ppid), int(session))
    workers = {pid for pid, (ppid, _) in table.items() if ppid == server}
    return sorted(pid for pid, (_, session) in table.items() if session in workers)


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


async def test_run_results_reach_clients_that_pull_diagnostics(tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "ops.py").write_text(OPS)
    config = ClientServerConfig(server_command=SERVER, client_factory=make_client)
    client = await config.start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("neovim"), root_uri=uri_of(root),
            initialization_options={"settings": {"debounce": 0}, "workspaceTrusted": True}))
        uri = uri_of(root / "ops.py")
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=OPS)))
        params = types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri))
        first = await client.text_document_diagnostic_async(params)
        assert list(first.items) == []
        line = OPS.splitlines().index("class Square(torch.autograd.Function):")
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck", arguments=[{"uri": uri, "position": {"line": line, "character": 6}}]))
        params.previous_result_id = first.result_id
        second = await client.text_document_diagnostic_async(params)
        assert second.kind == "full", "the run changed the diagnostics: the report must not be 'unchanged'"
        assert [d.code for d in second.items] == ["gradcheck"]
        await client.shutdown_session()
    finally:
        await close_client(client)


async def test_cancel_request_kills_the_run(client: LanguageClient):
    """`$/cancelRequest` for the executeCommand request stops the run too."""
    if not client.trusted:
        pytest.skip("runs need trust")
    lenses = await _lenses(client)
    command = lenses["Forever"].command
    future = client.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments),
        msg_id="run-forever")
    token = await wait_until(lambda: next(iter(client.progress_reports), None), what="progress")
    await wait_until(lambda: any(type(v).__name__ == "WorkDoneProgressReport" and
                                 "importing" in (v.message or "") for v in client.progress_reports[token]),
                     timeout=300, what="the run to start")
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="run-forever"))
    with pytest.raises(JsonRpcException, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(future), 300)
    # the run's process is gone (a forked run shows the worker's command line too): only
    # the worker itself is left, and the next run passes
    await wait_until(lambda: len(_worker_pids(client)) == 1, timeout=300, what="the run's process to be killed")
    reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=lenses["Double"].command.command, arguments=lenses["Double"].command.arguments))
    assert reply["result"]["status"] == "pass"


CHECKED = textwrap.dedent("""\
    import torch


    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2


    def test_double():
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(Double.apply, (x,))
    """)


async def test_runs_use_the_results_cache_and_run_a_call_once(tmp_path):
    """Like `gradlint run`: a file's gradcheck call that a Function's run already ran is not
    run again, and a second run of an unchanged saved file is served from the cache
    (.gradlint_cache/runs in the workspace folder) until the file changes."""
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "checked.py").write_text(CHECKED)
    config = ClientServerConfig(server_command=SERVER, client_factory=make_client)
    client = await config.start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=_capabilities(), root_uri=uri_of(root),
            workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
            initialization_options={"settings": {"debounce": 0}, "workspaceTrusted": True}))
        uri = uri_of(root / "checked.py")
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=CHECKED)))
        replies = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheckFile", arguments=[{"uri": uri}]))
        runs = {reply["kind"]: reply for reply in replies}
        function, call = runs["function_class"], runs["call_site"]
        assert function["inputs_source"] == "from the gradcheck call at line 16"
        assert function["result"]["status"] == call["result"]["status"] == "pass"
        assert call["result"]["id"] == function["result"]["id"]  # the same worker run
        assert not function["cached"] and not call["cached"]
        assert list((root / ".gradlint_cache" / "runs").glob("*.json"))

        line = CHECKED.splitlines().index("class Double(torch.autograd.Function):")
        arguments = [{"uri": uri, "position": {"line": line, "character": 6}}]
        again = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck", arguments=arguments))
        assert again["cached"] and again["result"] == function["result"]
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
        titles = {lens.range.start.line: lens.command.title for lens in lenses}
        assert titles[line].startswith("✓ gradcheck") and titles[line].endswith("(cached)"), titles

        changed = CHECKED.replace("return grad * 2", "return 2 * grad")
        (root / "checked.py").write_text(changed)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(text=changed)]))
        fresh = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck", arguments=arguments))
        assert fresh["result"]["status"] == "pass" and not fresh["cached"]
        assert fresh["result"]["id"] != function["result"]["id"]
        await client.shutdown_session()
    finally:
        await close_client(client)
