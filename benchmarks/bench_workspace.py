"""How expensive are workspace diagnostics on a large repository?

In one run, on one directory tree (default: torch's own sources in this venv, ~2,000 Python
files, most of them mentioning torch):
1. baseline: `gradlint check --exit-zero -q DIR -j 1` (every file read and linted once);
2. the language server's first `workspace/diagnostic` (a cold scan of the same tree);
3. a second `workspace/diagnostic` after a file with a finding was added (only that file is
   read; the others are answered "unchanged").

Prints each time and its ratio to the baseline, and the server's own count of files
scanned, linted and parsed (files that cannot hold a finding are never parsed).

Run: .venv/bin/python benchmarks/bench_workspace.py [DIR]
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient


def default_tree() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec and spec.origin, "torch is not installed: pass a directory"
    return Path(spec.origin).parent


async def serve(root: Path) -> tuple[float, float, list[str], int, int]:
    client = LanguageClient("gradlint-bench", "1")
    logs: list[str] = []

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams):
        logs.append(params.message)

    await client.start_io(sys.executable, "-m", "gradlint", "lsp")
    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True),
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities()),
        text_document=types.TextDocumentClientCapabilities(
            diagnostic=types.DiagnosticClientCapabilities()))
    await client.initialize_async(types.InitializeParams(
        capabilities=caps, root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="bench")]))
    client.initialized(types.InitializedParams())
    start = time.perf_counter()
    first = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    cold = time.perf_counter() - start
    previous = [types.PreviousResultId(uri=i.uri, value=i.result_id) for i in first.items]
    touched = root / "zz_bench_new_test.py"  # a new file with a finding: the answer changes
    touched.write_text("import torch\nfrom torch.autograd import gradcheck\n\n"
                       "gradcheck(torch.sin, (torch.randn(3, requires_grad=True),))\n")
    start = time.perf_counter()
    pending = client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=previous))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=touched.as_uri(), type=types.FileChangeType.Changed)]))
    second = await pending
    warm = time.perf_counter() - start
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    full = sum(1 for item in second.items if item.kind == "full")
    return cold, warm, logs, len(first.items), full


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else default_tree()
    work = Path(tempfile.mkdtemp(prefix="gradlint-bench-ws-"))
    tree = work / source.name
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.so.*", "lib"))
    files = sum(1 for _ in tree.rglob("*.py"))
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "gradlint"), "check", "--exit-zero", "-q", "-j", "1",
                    str(tree)], stdout=subprocess.DEVNULL, check=True)
    baseline = time.perf_counter() - start
    cold, warm, logs, reported, changed = asyncio.run(serve(tree))
    shutil.rmtree(work, ignore_errors=True)
    print(f"tree: {source} ({files} .py files)")
    print(f"baseline  gradlint check -j 1      {baseline:7.2f} s   1.00x")
    print(f"first     workspace/diagnostic     {cold:7.2f} s   {cold / baseline:.2f}x   "
          f"({reported} files with findings reported)")
    print(f"after a file was added             {warm:7.2f} s   {warm / baseline:.3f}x   "
          f"({changed} full report(s), the rest unchanged)")
    for line in logs:
        if re.search(r"workspace diagnostics:", line):
            print(f"server: {line}")


if __name__ == "__main__":
    main()
