"""The language server with big files and long sessions, through a real LSP client.

In one run, for generated files of autograd code (``--sizes``, default 3k, 20k and 50k
lines), each next to a bare ``libcst.parse_module`` of the same text measured in the same
run:
- didOpen until the first published diagnostics (target for 50k lines: <= 2x the parse);
- a one-line edit in the middle until its diagnostics, median and p95 over ``--rounds``
  edits (target: <= 0.05x the parse);
and the server's resident memory after ``--edits`` distinct one-line edits to the 3,000-line
file (issue 14: <= 150 MB after 10,000).

``--shapes`` runs the first two on files of other shapes (benchmarks/shapes.py; issue 26):
the edit appends a comment to a statement line in the middle of the file (of a cell in the
middle, for the notebook, opened as an LSP notebook document); ``autograd`` keeps the
original edit (`assert norm > 0` becomes `assert norm > 2`, ...).

Run: .venv/bin/python benchmarks/bench_editor.py [--sizes 3000,20000,50000] [--rounds 20]
        [--edits 10000] [--shapes autograd,saves_nothing,...|all]
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
from shapes import SHAPES, generate  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Session:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.client = LanguageClient("gradlint-bench", "1")
        self.published: dict[tuple[str, int | None], asyncio.Event] = {}
        self.first: dict[tuple[str, int | None], float] = {}
        # a big file publishes its first findings early, then all of them: a version is
        # complete when as many diagnostics as an in-process lint finds were published
        self.expected: dict[str, int] = {}
        self.complete: dict[tuple[str, int | None], asyncio.Event] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams):
            key = (params.uri, params.version)
            if params.diagnostics and key not in self.first:
                self.first[key] = time.perf_counter()
            self.published.setdefault(key, asyncio.Event()).set()
            if len(params.diagnostics) == self.expected.get(params.uri):
                self.complete.setdefault(key, asyncio.Event()).set()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params):
            pass

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "gradlint", "lsp")
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=self.workdir.as_uri(),
            initialization_options={"settings": {"debounce": 0}}))
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    @property
    def pid(self) -> int:
        return self.client._server.pid  # type: ignore[union-attr]

    async def wait_first(self, key, timeout: float = 900) -> float:
        """Seconds until the first publish with diagnostics for this version."""
        deadline = time.perf_counter() + timeout
        while key not in self.first:
            if time.perf_counter() > deadline:
                raise TimeoutError(key)
            await asyncio.sleep(0.005)
        return self.first[key]

    async def wait(self, key, timeout: float = 900) -> None:
        """Until this version's diagnostics are all published (not only the early ones)."""
        await asyncio.wait_for(self.complete.setdefault(key, asyncio.Event()).wait(), timeout)

    def open(self, uri: str, text: str) -> None:
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))

    def open_notebook(self, uri: str, cells: list[tuple[str, str]]) -> None:
        """``cells``: (cell uri, its text) of the code cells."""
        self.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell)
                       for cell, _ in cells]),
            cell_text_documents=[types.TextDocumentItem(uri=cell, language_id="python", version=1,
                                                        text=text) for cell, text in cells]))

    def replace_cell_line(self, notebook: str, version: int, cell: str, line: int, old: str,
                          new: str) -> None:
        self.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=version, uri=notebook),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                text_content=[types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cell, version=version),
                    changes=[types.TextDocumentContentChangePartial(
                        range=types.Range(types.Position(line, 0), types.Position(line, len(old))),
                        text=new)])]))))

    def replace_line(self, uri: str, version: int, line: int, old: str, new: str) -> None:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, 0), types.Position(line, len(old))), text=new)]))


def finding_count(text: str) -> int:
    """How many diagnostics a complete lint of ``text`` publishes (gradlint in-process)."""
    from gradlint.engine.linter import LintOptions, lint_source

    return len(lint_source(text, "big.py", LintOptions()).findings)


def parse_seconds(text: str) -> float:
    start = time.perf_counter()
    libcst.parse_module(text)
    return time.perf_counter() - start


def edit_target(lines: list[str]) -> int:
    """A line in the middle that ends a simple statement (a comment can be appended)."""
    middle = len(lines) // 2
    for index in list(range(middle, len(lines))) + list(range(middle - 1, 0, -1)):
        text = lines[index]
        stripped = text.strip()
        if not stripped.startswith(("return ", "assert ", "x = ", "a = ", "print(")) or \
                "#" in text or text.count("(") != text.count(")") or text.rstrip().endswith((",", "\\")):
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if following.strip() and len(following) - len(following.lstrip()) > len(text) - len(text.lstrip()):
            continue
        return index
    raise SystemExit("no line to edit")


def report(label: str, parse: float, first: float, complete: float, samples: list[float]) -> str:
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))]
    median = statistics.median(samples)
    return (f"{label}: parse {parse:6.2f}s | open -> first diagnostics {first:6.2f}s "
            f"({first / parse:.2f}x), all {complete:6.2f}s ({complete / parse:.2f}x) | one-line edit "
            f"median {median * 1000:6.0f} ms ({median / parse:.3f}x), p95 {p95 * 1000:6.0f} ms "
            f"({p95 / parse:.3f}x)")


async def one_size(lines: int, rounds: int, workdir: Path, shape: str = "autograd") -> str:
    if shape == "notebook":
        return await one_notebook(lines, rounds, workdir)
    text = module(lines) if shape == "autograd" else generate(shape, lines)
    path = workdir / f"{shape}_{lines}.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    parse = parse_seconds(text)
    session = Session(workdir)
    session.expected[uri] = finding_count(text)  # (the edits below keep it)
    await session.start()
    start = time.perf_counter()
    session.open(uri, text)
    first = await session.wait_first((uri, 1)) - start
    await session.wait((uri, 1))
    complete = time.perf_counter() - start
    source_lines = text.splitlines()
    if shape == "autograd":
        target = next(i for i, l in enumerate(source_lines)
                      if "norm > 0" in l and i > len(source_lines) // 2)
    else:
        target = edit_target(source_lines)
    old = source_lines[target]
    samples = []
    for version in range(2, rounds + 2):
        new = f"    assert norm > {version}" if shape == "autograd" else f"{source_lines[target]}  # edit {version}"
        start = time.perf_counter()
        session.replace_line(uri, version, target, old, new)
        await session.wait((uri, version))
        samples.append(time.perf_counter() - start)
        old = new
    await session.stop()
    label = f"{lines:>6} lines" if shape == "autograd" else f"{shape:>13} {lines:>6} lines"
    return report(label, parse, first, complete, samples)


async def one_notebook(lines: int, rounds: int, workdir: Path) -> str:
    """The notebook shape as an LSP notebook document: timed until its cells' diagnostics."""
    import json

    from gradlint.engine.linter import LintOptions
    from gradlint.engine.notebooks import CellText, lint_cells

    path = workdir / f"notebook_{lines}.ipynb"
    raw = generate("notebook", lines)
    path.write_text(raw, encoding="utf-8")
    sources = ["".join(cell["source"]) for cell in json.loads(raw)["cells"] if cell["cell_type"] == "code"]
    cells = [(f"vscode-notebook-cell:{path}#W{index}sZmlsZQ%3D%3D", text) for index, text in enumerate(sources)]
    findings = lint_cells([CellText(index, text) for index, (_, text) in enumerate(cells)], str(path),
                          LintOptions())
    parse = parse_seconds("\n".join(text for _, text in cells).replace("%time", "#time"))
    session = Session(workdir)
    counts = [0] * len(cells)
    for finding in findings:
        counts[finding.cell] += 1
    for (uri, _), count in zip(cells, counts):
        session.expected[uri] = count
    await session.start()
    start = time.perf_counter()
    session.open_notebook(path.as_uri(), cells)
    first = min([await session.wait_first((uri, 1)) for (uri, _), n in zip(cells, counts) if n][:1]) - start
    for (uri, _), count in zip(cells, counts):
        if count:
            await session.wait((uri, 1))
    complete = time.perf_counter() - start
    middle = len(cells) // 2
    cell_uri, cell_text = cells[middle]
    cell_lines = cell_text.splitlines()
    target = edit_target(cell_lines)
    old = cell_lines[target]
    samples = []
    for version in range(2, rounds + 2):
        new = f"{cell_lines[target]}  # edit {version}"
        start = time.perf_counter()
        session.replace_cell_line(path.as_uri(), version, cell_uri, target, old, new)
        await session.wait((cell_uri, version))
        samples.append(time.perf_counter() - start)
        old = new
    await session.stop()
    return report(f"{'notebook':>13} {lines:>6} lines", parse, first, complete, samples)


async def memory(edits: int, workdir: Path) -> str:
    text = module(3000)
    path = workdir / "edited.py"
    path.write_text(text)
    uri = path.as_uri()
    session = Session(workdir)
    session.expected[uri] = finding_count(text)
    await session.start()
    session.open(uri, text)
    await session.wait((uri, 1))
    before = rss_mb(session.pid)
    source_lines = text.splitlines()
    targets = [i for i, l in enumerate(source_lines) if "norm > 0" in l]
    current = {i: source_lines[i] for i in targets}
    for version in range(2, edits + 2):
        line = targets[version % len(targets)]
        new = f"    assert norm > {version}"  # a distinct edit each time
        session.replace_line(uri, version, line, current[line], new)
        current[line] = new
        if version % 50 == 0 or version == edits + 1:
            await session.wait((uri, version))
    after = rss_mb(session.pid)
    await session.stop()
    return (f"server RSS: {before:.0f} MB after opening a 3,000-line file, {after:.0f} MB after "
            f"{edits} distinct edits to it (target <= 150 MB)")


async def main(sizes: list[int], rounds: int, edits: int, shapes: list[str]) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="gradlint-bench-editor-"))
    for shape in shapes:
        for lines in sizes:
            print(await one_size(lines, rounds, workdir, shape), flush=True)
    if edits:
        print(await memory(edits, workdir), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3000,20000,50000")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--edits", type=int, default=10000)
    parser.add_argument("--shapes", default="autograd", help="comma-separated, or all: " + ",".join(SHAPES))
    args = parser.parse_args()
    shapes = list(SHAPES) if args.shapes == "all" else args.shapes.split(",")
    asyncio.run(main([int(s) for s in args.sizes.split(",") if s], args.rounds, args.edits, shapes))
