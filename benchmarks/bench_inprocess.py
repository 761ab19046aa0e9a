"""In-process gradient checks vs torch's own: what does check_gradients cost?

    python benchmarks/bench_inprocess.py [--repeat N] [--size N]

For a small autograd.Function (x*x on --size float64 elements, and a two-input a*b) it
times, in this process, with torch warm:

- ``torch``: ``torch.autograd.gradcheck(f, inputs)`` (the baseline users replace);
- ``torch+gg``: gradcheck then gradgradcheck (what the runner's default plan proves);
- ``same checks``: ``check_gradients(f, *inputs, checks=["gradcheck"], fast_mode=False)``:
  the same torch call, plus gradlint's forward check and result (target: torch ±10%);
- ``default``: ``check_gradients(f, *inputs)``: the runner's whole plan (forward, input
  mutation, randomness, backward determinism, gradcheck fast+slow, gradgradcheck
  fast+slow), compared with torch+gg;
- ``slow only``: the same plan with ``fast_mode=False`` (no fast-mode pass before the
  slow one), compared with torch+gg;
- ``assert``: ``assert_gradients`` with the default plan.

Prints medians in milliseconds and each ratio against its baseline, measured in the
same run (interleaved rounds, so machine load affects both alike).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402

from gradlint import assert_gradients, check_gradients  # noqa: E402


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench(name: str, f, inputs: tuple, repeat: int) -> None:
    leaves = tuple(t.detach().clone().requires_grad_() for t in inputs)
    cases = {
        "torch": lambda: torch.autograd.gradcheck(f, leaves),
        "same checks": lambda: check_gradients(f, *inputs, checks=["gradcheck"], fast_mode=False),
        "torch+gg": lambda: (torch.autograd.gradcheck(f, leaves), torch.autograd.gradgradcheck(f, leaves)),
        "default": lambda: check_gradients(f, *inputs),
        "slow only": lambda: check_gradients(f, *inputs, fast_mode=False),
        "assert": lambda: assert_gradients(f, *inputs),
    }
    assert check_gradients(f, *inputs).ok
    for case in cases.values():  # warm up every path
        case()
    times: dict[str, list[float]] = {key: [] for key in cases}
    for _ in range(repeat):
        for key, case in cases.items():
            times[key].append(timed(case))
    median = {key: statistics.median(values) * 1000 for key, values in times.items()}
    print(f"\n{name}")
    for key, base in (("torch", None), ("same checks", "torch"), ("torch+gg", None),
                      ("default", "torch+gg"), ("slow only", "torch+gg"), ("assert", "torch+gg")):
        ratio = f"  ×{median[key] / median[base]:.2f} vs {base}" if base else ""
        print(f"  {key:<12} {median[key]:8.2f} ms{ratio}")
    print(f"  default vs torch alone: ×{median['default'] / median['torch']:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--size", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.rand(args.size, dtype=torch.float64) + 0.5
    a, b = torch.rand(args.size, dtype=torch.float64), torch.rand(args.size, dtype=torch.float64)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.repeat}")
    bench(f"Square, x: float64[{args.size}]", Square.apply, (x,), args.repeat)
    bench(f"Mul, a, b: float64[{args.size}]", Mul.apply, (a, b), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
