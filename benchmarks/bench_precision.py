"""The precision-relative verdict on six low-precision ops × three backwards × seeds, against
a fixed-tolerance check measured in the same run.

For each op (precision_families.py) and dtype, every backward is judged by
``gradlint``'s precision verdict (``options.dtype``, k = 2, run in-process through the
worker's Job) and by the usual fixed-tolerance test: ``torch.testing.assert_close`` of the
low-precision gradients against float64 ones with torch's default tolerances for the dtype,
at the same inputs. Prints a table (markdown) of pass counts.

    nice .venv/bin/python benchmarks/bench_precision.py [--seeds 5] [--dtypes bfloat16,float16]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import precision_families as fam  # noqa: E402

from gradlint.worker.inprocess import check  # noqa: E402

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def fixed_tolerance(fn_cls, inputs, dtype):
    """assert_close(low-precision gradients, float64 gradients) with torch's default tolerances."""
    gen = torch.Generator().manual_seed(1)
    x64 = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn_cls.apply(*x64)
    go = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    ref = torch.autograd.grad(out, x64, go)
    xlo = [t.detach().to(dtype).requires_grad_() for t in inputs]
    got = torch.autograd.grad(fn_cls.apply(*xlo), xlo, go.to(dtype))
    try:
        for a, b in zip(got, ref):
            torch.testing.assert_close(a, b.to(dtype))  # torch's defaults: bf16 rtol 1.6e-2, fp16 1e-3
        return True
    except AssertionError:
        return False


def shapes(op):
    return [(4, 16), (16, 8)] if op == "matmul" else [(4, 16)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--dtypes", default="bfloat16,float16")
    args = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    for dname in args.dtypes.split(","):
        for op in fam.OPS:
            for variant in fam.VARIANTS:
                fn_cls = fam.make(op, variant)
                verdicts, ratios, fixed = [], [], []
                for seed in range(args.seeds):
                    gen = torch.Generator().manual_seed(100 + seed)
                    inputs = tuple(torch.randn(s, generator=gen, dtype=torch.float64).requires_grad_()
                                   for s in shapes(op))
                    r = check(fn_cls.apply, inputs, {"dtype": dname, "draws": 1, "seed": seed,
                                                     "gradgradcheck": False})
                    rec = next((c for c in r["checks"] if c["name"] == "precision (%s)" % dname), None)
                    verdicts.append(r["verdict"] if rec is not None and rec["status"] != "skipped" else "skipped")
                    if rec is not None and rec["details"].get("worst_tensor"):
                        ratios.append(rec["details"]["worst_tensor"]["ratio"])
                    fixed.append(fixed_tolerance(fn_cls, inputs, DTYPES[dname]))
                rows.append((dname, op, variant, verdicts, ratios, fixed))
    elapsed = time.perf_counter() - t0
    print("| dtype | op | backward | gradlint passes | worst ratio (median, max) | fixed tolerance passes |")
    print("|---|---|---|---|---|---|")
    for dname, op, variant, verdicts, ratios, fixed in rows:
        ok = sum(v == "ok" for v in verdicts)
        other = sorted(set(v for v in verdicts if v not in ("ok", "precision_loss")))
        r = sorted(ratios)
        med = "%.2g, %.2g" % (r[len(r) // 2], r[-1]) if r else "-"
        print("| %s | %s | %s | %d/%d%s | %s | %d/%d |" % (dname, op, variant, ok, len(verdicts),
                                                          (" (" + ", ".join(other) + ")") if other else "",
                                                          med, sum(fixed), len(fixed)))
    print("\n%d runs in %.0f s; machine load: %s" % (sum(len(r[3]) for r in rows), elapsed,
                                                     open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
