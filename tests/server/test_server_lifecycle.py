"""Stopping the server in the middle of a gradcheck run, every way an editor can: the
`shutdown` request, `exit` without it, stdin closing, SIGTERM. Each time: the right exit
code, no traceback, and no process left (checked on the process tree: every process
started from the server carries a token, so what the run started in a session of its own
is found too). Exit times are measured by benchmarks/bench_lifecycle.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_helpers import StdioConnection as Connection
from process_tree import kill_tagged, new_token, recorded_pids, tagged, tagged_env

SERVER = [str(Path(sys.executable).parent / "gradlint"), "lsp"]

# A Function whose forward starts a process in a session of its own, then never returns.
OPS = """\
import os
import time

import torch


def _escape():
    if os.fork() == 0:
        try:
            os.setsid()
            with open(os.environ["GRADLINT_TEST_PIDS"], "a") as f:
                f.write("setsid %d\\n" % os.getpid())
            while True:
                time.sleep(0.05)
        finally:
            os._exit(0)


# gradlint: inputs=(torch.ones(2, dtype=torch.float64, requires_grad=True),)
class Forever(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _escape()
        while True:
            time.sleep(0.01)

    @staticmethod
    def backward(ctx, grad):
        return grad
"""


@pytest.fixture
def running(tmp_path):
    """A server with a run in flight whose code has escaped into a session of its own."""
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "ops.py").write_text(OPS)
    token, pids = new_token(), tmp_path / "pids"
    process = subprocess.Popen(SERVER, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=tagged_env(token, GRADLINT_TEST_PIDS=str(pids)))
    connection = Connection(process)
    try:
        connection.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {},
            "initializationOptions": {"workspaceTrusted": True}}})
        connection.reply(1)
        connection.send({"method": "initialized", "params": {}})
        uri = (root / "ops.py").as_uri()
        connection.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": OPS}}})
        line = OPS.splitlines().index("class Forever(torch.autograd.Function):")
        connection.send({"id": 2, "method": "workspace/executeCommand", "params": {
            "command": "gradlint.runGradcheck",
            "arguments": [{"uri": uri, "position": {"line": line, "character": 6}}]}})
        deadline = time.monotonic() + 120
        while not recorded_pids(pids):
            assert time.monotonic() < deadline and process.poll() is None, "the run never started"
            time.sleep(0.05)
        assert len(tagged(token)) >= 4  # the server, the worker, the run, what it started
        yield connection, token
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        kill_tagged(token)


def _ended(connection: Connection) -> int:
    code = connection.process.wait(timeout=300)
    time.sleep(0.1)  # let the stderr reader finish
    return code


def test_shutdown_then_exit_during_a_run(running):
    connection, token = running
    connection.send({"id": 3, "method": "shutdown"})
    reply = connection.reply(3, timeout=300)
    assert "error" not in reply, reply  # was: "dictionary changed size during iteration"
    assert "canceled" in connection.reply(2)["error"]["message"]
    connection.send({"method": "exit"})
    assert _ended(connection) == 0
    assert tagged(token) == []
    assert b"Traceback" not in connection.stderr, connection.stderr.decode()[-2000:]


def test_exit_without_shutdown_during_a_run(running):
    connection, token = running
    connection.send({"method": "exit"})
    assert _ended(connection) == 1  # LSP: 1 when exit comes without shutdown
    assert tagged(token) == []
    assert b"Traceback" not in connection.stderr, connection.stderr.decode()[-2000:]


def test_stdin_closed_during_a_run(running):
    connection, token = running
    connection.process.stdin.close()
    assert _ended(connection) == 1
    assert tagged(token) == []
    assert b"Traceback" not in connection.stderr, connection.stderr.decode()[-2000:]


def test_sigterm_during_a_run(running):
    connection, token = running
    connection.process.send_signal(signal.SIGTERM)
    assert _ended(connection) == -signal.SIGTERM
    assert tagged(token) == []  # the server stopped the worker and its runs before dying
    assert b"Traceback" not in connection.stderr, connection.stderr.decode()[-2000:]
