"""The baseline in the editor (a real `gradlint lsp`): findings it holds are hints marked
"(in the baseline)" or hidden (`baselinedFindings`), matched on the text in the editor (an
unsaved edit that moves lines keeps the match), a new mistake is reported as usual, and a
baseline rewritten on disk applies at once (a watched-file event)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import close_client, SERVER, make_client, uri_of, wait_until

SOURCE = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
    """)
NEW_MISTAKE = textwrap.dedent("""\


    def test_cos():
        y = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.cos, (y,))
    """)


def _write_baseline(root: Path) -> None:
    gradlint = Path(sys.executable).parent / "gradlint"
    written = subprocess.run([str(gradlint), "check", "--write-baseline"], cwd=root, capture_output=True,
                             text=True, timeout=300)
    assert written.returncode == 0, written.stderr


async def _start(root: Path, settings: dict) -> LanguageClient:
    client = await ClientServerConfig(server_command=SERVER, client_factory=make_client).start()
    capabilities = client_capabilities("visual_studio_code")
    capabilities.text_document.diagnostic = None  # a push client
    capabilities.workspace.configuration = False
    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=uri_of(root),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="workspace")],
        initialization_options={"settings": {"debounce": 0, **settings}}))
    return client


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.gradlint]\n")
    (root / "test_ops.py").write_text(SOURCE)
    _write_baseline(root)
    return root


def _open(client: LanguageClient, path: Path, text: str) -> str:
    uri = uri_of(path)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    return uri


def _shown(client: LanguageClient, uri: str) -> list[tuple[int, str, str]]:
    return [(d.range.start.line, d.severity.name, d.message) for d in client.diagnostics.get(uri, [])]


async def test_baselined_findings_are_hints_and_a_new_mistake_is_an_error(tmp_path):
    root = _project(tmp_path)
    client = await _start(root, {})
    try:
        # unsaved: two lines above, and a new mistake below
        uri = _open(client, root / "test_ops.py", "import os\n\n" + SOURCE + NEW_MISTAKE)
        await wait_until(lambda: len(client.diagnostics.get(uri, [])) == 2, what="two diagnostics")
        [(old_line, old_severity, old), (new_line, new_severity, new)] = sorted(_shown(client, uri))
        assert (old_line, old_severity) == (8, "Hint") and old.endswith(" (in the baseline)"), old
        assert (new_line, new_severity) == (13, "Error") and "`y`" in new and "baseline" not in new

        # the baseline rewritten on disk (the new one accepted): both are hints at once
        (root / "test_ops.py").write_text("import os\n\n" + SOURCE + NEW_MISTAKE)
        _write_baseline(root)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=uri_of(root / "gradlint-baseline.json"), type=types.FileChangeType.Changed)]))
        await wait_until(lambda: [s for _, s, _ in _shown(client, uri)] == ["Hint", "Hint"],
                         what="both findings in the baseline")
    finally:
        await client.shutdown_session()
        await close_client(client)


async def test_baselined_findings_can_be_hidden(tmp_path):
    root = _project(tmp_path)
    client = await _start(root, {"baselinedFindings": "hide"})
    try:
        uri = _open(client, root / "test_ops.py", SOURCE + NEW_MISTAKE)
        await wait_until(lambda: len(client.diagnostics.get(uri, [])) == 1, what="one diagnostic")
        [(line, severity, message)] = _shown(client, uri)
        assert (line, severity) == (11, "Error") and "`y`" in message
    finally:
        await client.shutdown_session()
        await close_client(client)
