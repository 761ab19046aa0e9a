"""What `compile` costs and finds: the compile-check fixtures run in a real worker, each
once without and once with ``options.compile`` (aot_eager and inductor), in one run.

Prints per target the verdict with and without compile, the run's wall time both ways
(the plain run is the baseline), and each compile check's time (compilation included).

    nice .venv/bin/python benchmarks/bench_compile.py [--backends aot_eager,inductor]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from gradlint.runner import make_request, run_sync

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "runner", "fixtures")
TARGETS = [("function_class", "StraightThroughRound"), ("function_class", "Sin"), ("function_class", "WrongSin"),
           ("function_class", "OldStyleSquare"), ("callable", "square_by_mul"),
           ("function_class", "VmapStraightThrough"), ("custom_op", "cube")]


def requests(options):
    path = os.path.join(FIXTURES, "compile_targets.py")
    return [make_request(path, {"kind": kind, "qualname": q}, workspace_root=FIXTURES, options=dict(options))
            for kind, q in TARGETS]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="aot_eager,inductor")
    args = ap.parse_args()
    plain = run_sync(requests({"draws": 1}), python=sys.executable, cwd=FIXTURES, max_parallel=1, timeout=600)
    compiled = run_sync(requests({"draws": 1, "compile": args.backends.split(",")}), python=sys.executable,
                        cwd=FIXTURES, max_parallel=1, timeout=600)
    print("| target | plain run | with compile | wall plain → compile | compile checks (s, compilation included) |")
    print("|---|---|---|---|---|")
    for (kind, q), a, b in zip(TARGETS, plain, compiled):
        times = ", ".join("%s %s %.1f" % (c["name"], {"pass": "✓", "fail": "✗", "skipped": "–"}.get(c["status"], "?"),
                                          c["seconds"])
                          for c in b["checks"] if c["name"].startswith(("compile", "func.")))
        print("| %s | %s/%s | %s/%s | %.1f → %.1f s | %s |" % (q, a["status"], a["verdict"], b["status"], b["verdict"],
                                                             a["timings"].get("child_wall_s", 0.0),
                                                             b["timings"].get("child_wall_s", 0.0), times))
    print("\nmachine load: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
