"""Warm worker vs cold process: how long does "run gradcheck" take?

    python benchmarks/bench_worker.py [--python PATH] [--repeat N]

cold: ``python script.py`` where the script defines a small autograd.Function and calls
gradcheck on it (interpreter start + torch import + lazy gradcheck init + the check).
warm: the same gradcheck call re-run as a call site through an already started
``gradlint.runner.WorkerClient`` (fork of the warm worker + import of the script + the
whole gradlint pipeline: forward, input-mutation, random-op and nondeterminism checks,
gradcheck in fast and slow mode). Prints both medians and warm/cold (target <= 0.25).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gradlint.runner import RunResult, WorkerClient, make_request  # noqa: E402

SCRIPT = '''\
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


x = torch.rand(8, dtype=torch.float64, requires_grad=True) + 0.5
assert torch.autograd.gradcheck(Square.apply, (x,))
'''
CALL_LINE = SCRIPT.splitlines().index("assert torch.autograd.gradcheck(Square.apply, (x,))") + 1


def cold(python: str, script: str, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([python, "-W", "ignore", script], check=True, cwd=os.path.dirname(script),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return times


async def warm(python: str, script: str, repeat: int) -> tuple[float, list[float], RunResult]:
    folder = os.path.dirname(script)
    request = make_request(script, {"kind": "call_site", "line": CALL_LINE, "end_line": CALL_LINE},
                           workspace_root=folder)
    t = time.perf_counter()
    async with WorkerClient(python, folder) as client:
        startup = time.perf_counter() - t
        times = []
        result = None
        for _ in range(repeat):
            t = time.perf_counter()
            result = await client.run(request, timeout=60)
            times.append(time.perf_counter() - t)
            if not result.passed:
                raise SystemExit("warm run did not pass: %s" % result.summary)
    return startup, times, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch (default: this one)")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "square_op.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        cold(args.python, script, 1)  # page cache
        cold_times = cold(args.python, script, args.repeat)
        startup, warm_times, result = asyncio.run(warm(args.python, script, args.repeat + 1))
        warm_times = warm_times[1:]  # the first run also pays first-touch costs
    c, w = statistics.median(cold_times), statistics.median(warm_times)
    checks = ", ".join("%s %.0f ms" % (ch["name"], 1000 * ch["seconds"]) for ch in result.checks)
    print("cold  python script.py       median %7.1f ms  (min %.1f, n=%d)" % (1000 * c, 1000 * min(cold_times), len(cold_times)))
    print("warm  WorkerClient.run       median %7.1f ms  (min %.1f, n=%d)" % (1000 * w, 1000 * min(warm_times), len(warm_times)))
    print("worker start-up (once)              %7.1f ms" % (1000 * startup))
    print("warm run breakdown: child %.0f ms; import %.0f ms; %s" % (
        1000 * result.timings.get("child_wall_s", 0), 1000 * result.timings.get("import_s", 0), checks))
    print("ratio warm/cold: %.3f  (target <= 0.25: %s)" % (w / c, "met" if w / c <= 0.25 else "NOT met"))


if __name__ == "__main__":
    main()
