"""How fast is "Run gradcheck" from the editor once the worker is warm, compared with
checking the same Function in a fresh `python script.py`?

In one run: the median time of `workspace/executeCommand gradlint.runGradcheck` through
the real language server (worker already started: torch imported once), and the median
wall time of a cold script that imports torch and calls gradcheck on the same Function.
Target: warm <= 0.25x cold.

Run: .venv/bin/python benchmarks/bench_run.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

FUNCTION = textwrap.dedent("""\
    import torch


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad
    """)
SCRIPT = FUNCTION + textwrap.dedent("""\


    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(Square.apply, (x,))
    """)


def cold(rounds: int, directory: Path) -> float:
    script = directory / "script.py"
    script.write_text(SCRIPT)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def warm(rounds: int, directory: Path) -> tuple[float, float]:
    path = directory / "ops.py"
    path.write_text(FUNCTION)
    client = LanguageClient("gradlint-bench", "1")

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params):
        pass

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params):
        pass

    await client.start_io(sys.executable, "-m", "gradlint", "lsp")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=directory.as_uri(),
        initialization_options={"workspaceTrusted": True, "settings": {"debounce": 0}}))
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=FUNCTION)))
    line = FUNCTION.splitlines().index("class Square(torch.autograd.Function):")
    arguments = [{"uri": uri, "position": {"line": line, "character": 6}}]

    async def one() -> float:
        start = time.perf_counter()
        reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck", arguments=arguments))
        assert reply["result"]["status"] == "pass", reply
        return time.perf_counter() - start

    first = await one()  # starts the worker (torch import) and runs once
    samples = [await one() for _ in range(rounds)]
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return first, statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="gradlint-bench-run-"))
    cold_s = cold(args.rounds, directory)
    first_s, warm_s = asyncio.run(warm(args.rounds, directory))
    print(f"cold `python script.py` (import torch + gradcheck): {cold_s * 1000:8.0f} ms (median of {args.rounds})")
    print(f"first run through the server (starts the worker):  {first_s * 1000:8.0f} ms")
    print(f"warm run through the server:                        {warm_s * 1000:8.0f} ms (median of {args.rounds})")
    print(f"ratio warm / cold:                                  {warm_s / cold_s:8.3f}  (target <= 0.25)")


if __name__ == "__main__":
    main()
