"""Test-side helpers for driving the real server through pytest-lsp."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Union

from lsprotocol import types
from pygls.protocol import default_converter
from pygls.lsp.client import LanguageClient as BaseLanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, register_lsp_features

SERVER = [sys.executable, "-P", "-m", "gradlint", "lsp"]  # a safe launch line (README)
_LINE = re.compile(r"\r\n|\r|\n")


def _converter():
    """lsprotocol's converter, with one fix: it structures *any* object with a `command`
    key as a Command, so a CodeAction that carries a command would arrive as a broken
    Command. Real editors check whether `command` is a string; so does this hook."""
    converter = default_converter()
    union = Union[types.Command, types.CodeAction]

    def structure(obj, _):
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(union, structure)
    return converter


def make_client() -> LanguageClient:
    """pytest-lsp's client, recording every publishDiagnostics with its version."""
    client = LanguageClient(converter_factory=_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams):
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    def register_capability(client: LanguageClient, params: types.RegistrationParams):
        client.registrations.extend(params.registrations)

    def unregister_capability(client: LanguageClient, params: types.UnregistrationParams):
        return None

    def code_lens_refresh(client: LanguageClient, params: None):
        client.code_lens_refreshes += 1

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.CLIENT_REGISTER_CAPABILITY] = register_capability
    features[types.CLIENT_UNREGISTER_CAPABILITY] = unregister_capability
    def diagnostic_refresh(client: LanguageClient, params: None):
        client.diagnostic_refreshes += 1

    features[types.WORKSPACE_CODE_LENS_REFRESH] = code_lens_refresh
    features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = diagnostic_refresh
    register_lsp_features(client, features)
    client.published = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]
    client.code_lens_refreshes = 0  # type: ignore[attr-defined]
    client.diagnostic_refreshes = 0  # type: ignore[attr-defined]
    return client


async def wait_until(predicate: Callable[[], object], timeout: float = 300.0, what: str = "") -> object:
    """Poll until ``predicate()`` is true. ``timeout`` is a safety net against a hang, never a
    measurement: on a loaded machine anything may take long."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.02)


def encoding_of(result: types.InitializeResult) -> str:
    return result.capabilities.position_encoding or "utf-16"


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def offset(text: str, position: types.Position, encoding: str) -> int:
    starts = [0] + [m.end() for m in _LINE.finditer(text)]
    if position.line >= len(starts):
        return len(text)
    start = starts[position.line]
    end = starts[position.line + 1] if position.line + 1 < len(starts) else len(text)
    line = text[start:end].rstrip("\r\n")
    for index in range(len(line) + 1):
        if _units(line[:index], encoding) >= position.character:
            return start + index
    return start + len(line)


def apply_edits(text: str, edits, encoding: str) -> str:
    spans = sorted(((offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text)
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def workspace_edit_texts(edit: types.WorkspaceEdit) -> dict[str, list[types.TextEdit]]:
    result: dict[str, list[types.TextEdit]] = {}
    for change in edit.document_changes or []:
        result.setdefault(change.text_document.uri, []).extend(change.edits)
    for uri, edits in (edit.changes or {}).items():
        result.setdefault(uri, []).extend(edits)
    return result


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


class StdioConnection:
    """A bare JSON-RPC client over a server's stdio, for what pytest-lsp cannot do: send
    `exit` without `shutdown`, close stdin, start the server in a given directory, and
    watch the process end."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.messages: list[dict] = []
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.append(json.loads(stream.read(length)))

    def _read_stderr(self) -> None:
        self.stderr = self.process.stderr.read()

    def reply(self, msg_id: int, timeout: float = 300) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in self.messages:
                if message.get("id") == msg_id and "method" not in message:
                    return message
            time.sleep(0.01)
        raise AssertionError(f"no reply to request {msg_id}")


async def close_client(client: BaseLanguageClient, safety_net: float = 300.0) -> None:
    """End the server and the client, whatever state the test left them in.

    pygls's ``stop()`` waits for the server process to exit and for ever: a test that failed
    before its own ``shutdown_session`` (its ``finally: await client.stop()``) hung instead of
    reporting the failure. Here a server still running is asked to shut down and exit, then its
    stdin is closed (the server exits on end of input), and only a server still running after
    that is killed. ``safety_net`` bounds each step against a hang, never measures anything."""
    server = client._server  # pygls keeps the process only there
    if server is not None and server.returncode is None:
        try:
            await asyncio.wait_for(client.shutdown_async(None), safety_net)
            client.exit(None)
        except Exception:  # the server is broken or gone: the steps below end it
            pass
    if server is not None and server.returncode is None:
        if server.stdin is not None and not server.stdin.is_closing():
            server.stdin.close()
        try:
            await asyncio.wait_for(server.wait(), safety_net)
        except asyncio.TimeoutError:
            server.kill()
            await server.wait()
    await client.stop()
