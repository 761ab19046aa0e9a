"""Cold `gradlint run` on a package vs a plain script doing the same gradchecks.

A generated package holds ``--functions`` custom autograd Functions, each with a test that
calls gradcheck on it. In one run (medians of ``--rounds``, interleaved):
- ``python -c "import torch"``: the import both pay;
- a plain script that imports the package and calls ``gradcheck`` and ``gradgradcheck`` on
  every Function with the tests' inputs;
- ``gradlint run --no-cache PACKAGE`` (one worker, torch imported once, targets run in
  parallel, each also checked for input mutation, random ops and nondeterminism).
Prints the ratio (target <= 1.05) and the per-target overhead over torch's own gradcheck,
the import excluded.

Run: .venv/bin/python benchmarks/bench_run_package.py [--functions 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

GRADLINT = str(Path(sys.executable).parent / "gradlint")

FUNCTION = textwrap.dedent('''\
    class Scaled{n}(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return torch.tanh(x * w) * {n}.5

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            y = torch.tanh(x * w)
            common = grad * (1 - y * y) * {n}.5
            return common * w, common * x


    ''')

TEST = textwrap.dedent('''\
    def test_scaled_{n}():
        x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
        w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(ops.Scaled{n}.apply, (x, w))


    ''')

SCRIPT = textwrap.dedent('''\
    import torch
    from pkg import ops

    for n in range({count}):
        x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
        w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
        function = getattr(ops, f"Scaled{{n}}").apply
        assert torch.autograd.gradcheck(function, (x, w))
        assert torch.autograd.gradgradcheck(function, (x, w))
    ''')


def make_package(root: Path, count: int) -> None:
    package = root / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text("import torch\n\n\n" + "".join(FUNCTION.format(n=n) for n in range(count)))
    tests = root / "tests"
    tests.mkdir()
    (tests / "test_ops.py").write_text("import torch\n\nfrom pkg import ops\n\n\n"
                                       + "".join(TEST.format(n=n) for n in range(count)))
    (root / "script.py").write_text(SCRIPT.format(count=count))


def wall(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{command} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gradlint-bench-run-"))
    make_package(root, args.functions)
    imports, script, runs, serial = [], [], [], []
    for _ in range(args.rounds):
        imports.append(wall([sys.executable, "-c", "import torch"], root))
        script.append(wall([sys.executable, "script.py"], root))
        runs.append(wall([GRADLINT, "run", "--no-cache", "pkg"], root))
        serial.append(wall([GRADLINT, "run", "--no-cache", "-j", "1", "pkg"], root))
    imported, plain, gradlint, one_at_a_time = (statistics.median(v) for v in (imports, script, runs, serial))
    n = args.functions
    print(f"import torch:                          {imported:7.2f} s")
    print(f"plain script, {n} gradcheck+gradgradcheck: {plain:7.2f} s")
    print(f"gradlint run --no-cache pkg:           {gradlint:7.2f} s")
    print(f"ratio gradlint / plain script:         {gradlint / plain:7.3f}  (target <= 1.05)")
    print(f"gradlint run --no-cache -j 1 pkg:      {one_at_a_time:7.2f} s  ({one_at_a_time / plain:.3f}x)")
    print(f"per target, one at a time, import excluded: torch's gradcheck+gradgradcheck "
          f"{(plain - imported) / n * 1000:6.0f} ms, gradlint {(one_at_a_time - imported) / n * 1000:6.0f} ms "
          f"(overhead {(one_at_a_time - plain) / n * 1000:+6.0f} ms: its extra checks, the worker, reports)")


if __name__ == "__main__":
    main()
