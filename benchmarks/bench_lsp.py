"""How fast does the language server re-analyse after a keystroke, and how much memory
does it use?

In one run:
1. the time from a one-line `didChange` in a 3,000-line file of autograd code to the
   published diagnostics, next to a bare `libcst.parse_module` of the same file (target:
   re-analysis <= 0.5x the bare parse, which needs incremental work);
2. the server's resident memory with 50 documents open (target: <= 100 MB).

Run: .venv/bin/python benchmarks/bench_lsp.py [--lines 3000] [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import libcst
from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).parent))
from autograd_corpus import module  # noqa: E402


def bare_parse_seconds(text: str, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        libcst.parse_module(text)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main(lines: int, rounds: int, documents: int) -> None:
    text = module(lines)
    line_count = text.count("\n")
    workdir = Path(tempfile.mkdtemp(prefix="gradlint-bench-"))
    path = workdir / "big_module.py"
    path.write_text(text)
    uri = path.as_uri()

    client = LanguageClient("gradlint-bench", "1")
    published: dict[tuple[str, int | None], asyncio.Event] = {}
    counts: dict[tuple[str, int | None], int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams):
        key = (params.uri, params.version)
        counts[key] = len(params.diagnostics)
        published.setdefault(key, asyncio.Event()).set()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params):
        pass

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def on_configuration(params):
        return [{"debounce": 0} for _ in params.items]

    await client.start_io(sys.executable, "-m", "gradlint", "lsp")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(configuration=True)),
        root_uri=workdir.as_uri(), initialization_options={"settings": {"debounce": 0}}))
    client.initialized(types.InitializedParams())

    async def wait(key):
        await asyncio.wait_for(published.setdefault(key, asyncio.Event()).wait(), 120)

    start = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await wait((uri, 1))
    first = time.perf_counter() - start

    target_line = next(i for i, l in enumerate(text.splitlines()) if "norm > 0" in l and i > line_count // 2)
    samples = []
    for version in range(2, rounds + 2):
        new = f"    assert norm > {version}"
        old = text.splitlines()[target_line]
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(target_line, 0), types.Position(target_line, len(old))), text=new)
        text = "\n".join(text.splitlines()[:target_line] + [new] + text.splitlines()[target_line + 1:]) + "\n"
        start = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version), [change]))
        await wait((uri, version))
        samples.append(time.perf_counter() - start)
    keystroke = statistics.median(samples)
    parse = bare_parse_seconds(text, 5)

    pid = client._server.pid  # type: ignore[union-attr]
    for index in range(documents):
        other = workdir / f"doc_{index}.py"
        body = module(300).replace("ScaledTanh", f"ScaledTanh{index}_")
        other.write_text(body)
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=other.as_uri(), language_id="python", version=1, text=body)))
        await wait((other.as_uri(), 1))
    memory = rss_mb(pid)

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    print(f"file: {line_count} lines of autograd code, {counts[(uri, 1)]} findings")
    print(f"bare libcst.parse_module:            {parse * 1000:8.1f} ms (median of 5)")
    print(f"first analysis (didOpen -> publish): {first * 1000:8.1f} ms")
    print(f"one-line didChange -> publish:       {keystroke * 1000:8.1f} ms (median of {rounds})")
    print(f"ratio keystroke / bare parse:        {keystroke / parse:8.3f}  (target <= 0.5)")
    print(f"server RSS with {documents} open documents (+1 big): {memory:.0f} MB  (target <= 100 MB)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--documents", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.lines, args.rounds, args.documents))
