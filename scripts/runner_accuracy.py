#!/usr/bin/env python3
"""Measure `gradlint run` on real published autograd Functions, as a new user would.

For each pinned PyPI release below (downloaded into a cache outside the repository by
the same code as ``real_code_accuracy.py``; nothing is committed), this script:

1. copies the release into a scratch checkout and runs ``gradlint run . --format json``
   from inside it, with no declarations, in an interpreter that has torch 2.13 and the
   package's runtime dependencies (a venv the script makes in the cache);
2. counts, over the autograd Functions it finds: passed, failed (a ✗ on a correct
   Function is a false alarm), inconclusive, skipped — and the same for gradcheck calls;
3. makes wrong-backward mutants of every Function (the first returned gradient scaled by
   2 or negated, the first two returned gradients swapped, the gradient replaced by
   zeros) and runs each with ``gradlint run FILE::Class``: how many could be run, and
   how many of those were reported as a gradient failure.

Functions whose backward is deliberately not the derivative of forward (straight-through
estimators, gradient rerouting) are listed in ``NOT_A_DERIVATIVE`` with the reason, and
are left out of the "correct Functions" figures (their results are still printed).

Usage (run with the repository's venv, where gradlint is installed)::

    .venv/bin/python scripts/runner_accuracy.py                 # everything
    .venv/bin/python scripts/runner_accuracy.py --only entmax   # one package
    .venv/bin/python scripts/runner_accuracy.py --no-mutants    # originals only
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_code_accuracy import download, extract  # noqa: E402

# (PyPI name, version, what the interpreter needs to import it besides torch/numpy/scipy)
PACKAGES: list[tuple[str, str, list[str]]] = [
    ("entmax", "1.3", []),
    ("sparsemax", "0.1.9", []),
    ("pytorch-wavelets", "1.3.0", ["PyWavelets==1.9.0", "setuptools==80.9.0", "dtcwt==0.14.0",  # pkg_resources, tests
                                   "py3nvml==0.2.7"]),  # its tests import it
    ("roma", "1.8.0", []),
    ("pypose", "0.9.5", []),
    ("pyro-ppl", "1.9.2", ["pyro-api==0.1.2", "opt_einsum==3.4.0", "tqdm==4.70.1"]),
    ("torch-struct", "0.5", []),
    ("e3nn", "0.6.0", ["sympy==1.14.0", "opt-einsum-fx==0.1.4", "opt_einsum==3.4.0"]),
    ("gpytorch", "1.15.2", ["linear_operator==0.6.1", "jaxtyping==0.3.11", "scikit-learn==1.9.1",
                            "mpmath==1.3.0"]),
    ("kornia", "0.9.0", ["kornia-rs==0.2.0"]),
    ("monai", "1.6.1", []),
]
BASE_REQUIREMENTS = ["torch==2.13.0", "numpy==1.26.4", "scipy==1.17.1", "pytest==9.2.0"]  # numpy<2: dtcwt (wavelets tests)

# Functions whose backward is not meant to be the derivative of forward (`file::Class` patterns),
# each checked by reading the code; gradcheck cannot agree with them, and should not.
NOT_A_DERIVATIVE = {
    "*::QuantizeCategorical": "straight-through estimator (pyro relaxed_straight_through)",
    "*::QuantizeBernoulli": "straight-through estimator (pyro relaxed_straight_through)",
    "pyro/distributions/*::_*Sample": "a sampler whose backward is a variance-reduced gradient estimator "
                                      "(control variates, transport), not the pathwise derivative (pyro)",
    "pyro/contrib/oed/eig.py::_EwmaLogFn": "gradient from a moving average of past inputs (pyro docstring)",
    "pypose/lietensor/operation.py::*": "Lie-group maps: gradients in the tangent space, not the Euclidean "
                                        "derivative of the input coordinates (pypose)",
    "roma/mappings.py::_ProcrustesRegularization*": "adds a regularization term to the gradient; 'cannot be "
                                                    "expressed as the derivative of any function' (roma docstring)",
    "kornia/geometry/epipolar/essential.py::_NullSpaceBasis": "differentiates the spanned subspace, not the "
                                                             "returned basis (gauge-invariant by design)",
    "*::_AutoGradReLU": "guided backpropagation for saliency maps (monai visualize)",
    "*::_UncheckedAssign": "gradient rerouting for an in-place assignment (torchdiffeq)",
    "*::_StitchGradient": "gradient rerouting (torchdiffeq)",
    "*::ImplicitFnGradientRerouting": "gradient rerouting (torchdiffeq)",
    "*::_SampledLogSumExp": "forward samples; backward is a score-function estimate (torch-struct)",
    "*::_MultiSampledLogSumExp": "forward samples; backward is a score-function estimate (torch-struct)",
    "torch_struct/semirings/sparse_max.py::_SparseMaxGrad": "forward is the identity; backward applies "
                                                             "sparsemax's Jacobian: a gradient hook (torch-struct)",
    "gpytorch/variational/*::_NaturalToMuVarSqrt": "backward returns the natural gradient (the gradient w.r.t. "
                                                   "the expectation parameters) for NGD: 'Calculates the natural "
                                                   "gradient with respect to nat_mean, nat_covar' (gpytorch)",
    "gpytorch/variational/*::_TrilNaturalToMuVarSqrt": "backward is _NaturalToMuVarSqrt's natural gradient, "
                                                       "carried to the Cholesky parameterisation (gpytorch NGD)",
    "gpytorch/variational/ciq_variational_strategy.py::_NgdInterpTerms": "'the gradients will be with respect to the "
                                                                         "cannonical parameters … rather than the "
                                                                         "natural parameters … natural gradient "
                                                                         "descent' (gpytorch docstring)",
}


def by_design(target: str) -> str | None:
    for pattern, why in NOT_A_DERIVATIVE.items():
        if fnmatch.fnmatch(target, pattern) or fnmatch.fnmatch(target, "*/" + pattern):
            return why
    return None


MUTATIONS = ("scale", "negate", "swap", "zero")
GRADIENT_VERDICTS = {"wrong_gradient", "undefined_grad", "batched_grad", "gradcheck_failed",
                     "non_differentiable_point"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the interpreter the runs use ---------------------------------------------------------

def run_venv(cache: Path, extra: list[str]) -> Path:
    venv = cache / "runvenv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    stamp = venv / ".requirements"
    wanted = sorted(set(BASE_REQUIREMENTS + extra))
    if not stamp.exists() or stamp.read_text().split() != wanted:
        log("installing the run interpreter's packages ...")
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        *wanted], check=True)
        stamp.write_text("\n".join(wanted))
    return python


# -- running gradlint ---------------------------------------------------------------------

def gradlint_run(args: list[str], cwd: Path, python: Path, gradlint: Path, timeout: float = 3600) -> list[dict]:
    cmd = [str(gradlint), "run", *args, "--format", "json", "--no-cache", "--python", str(python),
           "--exit-zero"]
    # no bytecode caches: a mutant written in place must never be run from a stale .pyc
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        data = json.loads(proc.stdout or "[]")
    except ValueError:
        raise RuntimeError(f"gradlint run printed no JSON (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout)[-600:]}") from None
    return data if isinstance(data, list) else data.get("results", [])


def outcome(entry: dict) -> str:
    """pass | fail | inconclusive | warning | skipped | error (one word per run)."""
    if entry.get("skipped"):
        return "abstract" if "abstract" in str(entry["skipped"]) else "skipped"
    result = entry.get("result") or {}
    status = result.get("status")
    if status == "pass":
        return "pass"
    if status in ("inconclusive", "warning"):
        return status
    if status == "no_inputs" and str(result.get("summary", "")).startswith("abstract"):
        return "abstract"
    if status == "no_inputs" or entry.get("skipped"):
        return "skipped"
    if status == "fail" and result.get("verdict") in GRADIENT_VERDICTS:
        return "fail"
    if result.get("verdict") == "missing_dependency":
        return "env"  # the run interpreter lacks a module (e.g. a compiled extension)
    if status == "timeout":
        return "timeout"  # the run was killed at --timeout: no verdict (slow or overloaded machine)
    return "error"


# -- mutants ------------------------------------------------------------------------------

class BackwardMutator(cst.CSTTransformer):
    """Mutates the returns of ``Class.backward`` (or ``vjp``) in one way."""

    def __init__(self, class_name: str, mutation: str):
        self.class_name = class_name
        self.mutation = mutation
        self.depth = 0
        self.in_class = False
        self.in_backward = False
        self.changed = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if node.name.value == self.class_name and self.depth == 0:
            self.in_class = True
        self.depth += 1
        return True

    def leave_ClassDef(self, original, updated):
        self.depth -= 1
        if original.name.value == self.class_name and self.depth == 0:
            self.in_class = False
        return updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self.in_class and node.name.value in ("backward", "vjp") and not self.in_backward:
            self.in_backward = True
            self._def = node
        return True

    def leave_FunctionDef(self, original, updated):
        if self.in_backward and original is getattr(self, "_def", None):
            self.in_backward = False
        return updated

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        if not self.in_backward or updated.value is None:
            return updated
        value = updated.value
        whole = value  # `(dx,) + (None,) * 5`: the gradients are the left tuple's
        concatenated = isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) \
            and isinstance(value.left, cst.Tuple)
        if concatenated:
            value = value.left
        elements = list(value.elements) if isinstance(value, cst.Tuple) else None
        exprs = [e.value for e in elements] if elements is not None else [value]
        real = [i for i, e in enumerate(exprs) if not (isinstance(e, cst.Name) and e.value == "None")
                and not isinstance(e, cst.StarredElement)]
        if not real:
            return updated
        first = real[0]
        new = list(exprs)
        wrap = lambda e: cst.parse_expression(f"({cst.Module([]).code_for_node(e)})")  # noqa: E731
        if self.mutation == "scale":
            new[first] = cst.parse_expression(f"2.0 * {cst.Module([]).code_for_node(wrap(exprs[first]))}")
        elif self.mutation == "negate":
            new[first] = cst.parse_expression(f"-{cst.Module([]).code_for_node(wrap(exprs[first]))}")
        elif self.mutation == "zero":
            new[first] = cst.parse_expression(
                f"__import__('torch').zeros_like({cst.Module([]).code_for_node(exprs[first])})")
        elif self.mutation == "swap":
            if len(real) < 2:
                return updated
            a, b = real[0], real[1]
            new[a], new[b] = exprs[b], exprs[a]
        self.changed += 1
        if elements is None:
            return updated.with_changes(value=new[0])
        tuple_ = value.with_changes(elements=[e.with_changes(value=v) for e, v in zip(elements, new)])
        return updated.with_changes(value=whole.with_changes(left=tuple_) if concatenated else tuple_)


def mutate(source: str, class_name: str, mutation: str) -> str | None:
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    mutator = BackwardMutator(class_name, mutation)
    new = module.visit(mutator)
    return new.code if mutator.changed else None


# -- one package -----------------------------------------------------------------------------

def checkout(cache: Path, name: str, version: str, tag: str) -> Path:
    archive, _kind = download(name, version, cache)
    source = extract(archive, cache, name, version)
    scratch = cache / "runner" / tag / f"{name}-{version}"
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(source, scratch, ignore=shutil.ignore_patterns(".gradlint_cache", "__pycache__"))
    return scratch


def measure_package(cache: Path, name: str, version: str, python: Path, gradlint: Path,
                    mutants: bool, tag: str) -> dict:
    root = checkout(cache, name, version, tag)
    t0 = time.monotonic()
    entries = gradlint_run(["."], root, python, gradlint)
    seconds = time.monotonic() - t0
    functions, calls = [], []
    for entry in entries:
        kind = entry.get("kind")
        target = entry.get("target", "")
        row = {"target": target, "outcome": outcome(entry),
               "summary": (entry.get("result") or {}).get("summary", "") or entry.get("skipped", ""),
               "inputs": entry.get("inputs_source", "")}
        if kind == "function_class":
            symbol = target.split("::")[-1].split(".")[-1]
            row["class"] = symbol
            row["file"] = target.split("::")[0]
            row["by_design"] = by_design(target)
            functions.append(row)
        else:
            calls.append(row)
    mutant_rows = []
    if mutants:
        mutant_rows = run_mutants(root, functions, python, gradlint)
    return {"package": name, "version": version, "seconds": seconds, "functions": functions,
            "calls": calls, "mutants": mutant_rows}


def run_mutants(root: Path, functions: list[dict], python: Path, gradlint: Path) -> list[dict]:
    """Every mutant as a sibling module of its original (same package, so relative imports
    work), all run by one `gradlint run` (one worker start)."""
    planned, written, in_place = [], [], []
    for fn in functions:
        if fn["by_design"]:
            continue
        if str(fn.get("inputs", "")).startswith("captured from"):
            in_place.append(fn)  # its callers import the original module: mutate that one
            continue
        path = root / fn["file"]
        original = path.read_text()
        for mutation in MUTATIONS:
            changed = mutate(original, fn["class"], mutation)
            if changed is None:
                continue
            sibling = path.with_name(f"_glmut{len(planned)}_{path.name}")
            sibling.write_text(changed)
            written.append(sibling)
            planned.append((fn, mutation, f"{sibling.relative_to(root).as_posix()}::{fn['class']}"))
    rows = []
    try:
        found = gradlint_run([t for _fn, _m, t in planned], root, python, gradlint) if planned else []
    finally:
        for sibling in written:
            sibling.unlink()
    by_target = {entry.get("target"): entry for entry in found}
    for fn, mutation, target in planned:
        result = by_target.get(target, {"result": {"status": "error", "summary": "no result"}})
        rows.append({"target": fn["target"], "mutation": mutation, "outcome": outcome(result),
                     "summary": (result.get("result") or {}).get("summary", "")})
    for fn in in_place:
        rows.extend(_mutate_in_place(root, fn, python, gradlint))
    return rows


def _mutate_in_place(root: Path, fn: dict, python: Path, gradlint: Path) -> list[dict]:
    """Mutants of a Function whose inputs come from the code that calls it: the original file
    is changed (and restored), so that its callers call the mutant; one run each."""
    path = root / fn["file"]
    original = path.read_text()
    rows = []
    try:
        for mutation in MUTATIONS:
            changed = mutate(original, fn["class"], mutation)
            if changed is None:
                continue
            path.write_text(changed)
            found = gradlint_run([fn["target"]], root, python, gradlint)
            result = found[0] if found else {"result": {"status": "error", "summary": "no result"}}
            rows.append({"target": fn["target"], "mutation": mutation, "outcome": outcome(result),
                         "summary": (result.get("result") or {}).get("summary", "")})
    finally:
        path.write_text(original)
    return rows


# -- report --------------------------------------------------------------------------------------

RAN = ("pass", "fail", "inconclusive", "warning")


def _backward_raised(mutant: dict) -> bool:
    """A wrong backward that makes torch raise (a gradient for a non-tensor input, a wrong
    shape): reported as ✗ "… in backward", pointing at backward — caught too."""
    return mutant["outcome"] == "error" and " in backward" in mutant.get("summary", "")


def _caught(mutant: dict) -> bool:
    return mutant["outcome"] == "fail" or _backward_raised(mutant)


def summarise(rows: list[dict]) -> dict:
    functions = [f for r in rows for f in r["functions"]]
    # abstract bases are not targets (only their subclasses run); the environment is not gradlint's
    correct = [f for f in functions if not f["by_design"] and f["outcome"] not in ("env", "abstract")]
    calls = [c for r in rows for c in r["calls"]]
    mutants = [m for r in rows for m in r["mutants"]]
    oc = Counter(f["outcome"] for f in correct)
    ran = [m for m in mutants if m["outcome"] in RAN or _backward_raised(m)]
    caught = [m for m in ran if _caught(m)]
    passed = oc["pass"] + oc["warning"]  # first-order gradients proved (a warning: second order / ≤1%)
    return {
        "functions": len(functions), "by_design": sum(1 for f in functions if f["by_design"]),
        "missing_dependency": sum(1 for f in functions if not f["by_design"] and f["outcome"] == "env"),
        "correct": len(correct), "function_outcomes": dict(oc),
        "passed": passed, "passed_pct": 100.0 * passed / max(1, len(correct)),
        "with_warning": oc["warning"], "false_alarms": oc["fail"] + oc["error"], "timeouts": oc["timeout"],
        "inconclusive": oc["inconclusive"], "skipped": oc["skipped"],
        "by_design_outcomes": dict(Counter(f["outcome"] for f in functions if f["by_design"])),
        "calls": len(calls), "call_outcomes": dict(Counter(c["outcome"] for c in calls)),
        "mutants": len(mutants), "mutants_ran": len(ran),
        "mutants_ran_pct": 100.0 * len(ran) / max(1, len(mutants)),
        "mutants_caught": len(caught),
        "mutants_caught_pct": 100.0 * len(caught) / max(1, len(ran)),
    }


def print_report(rows: list[dict]) -> None:
    print(f"{'package':<18} {'Functions':>9} {'design':>6} {'env':>4} {'✓':>4} {'⚠':>4} {'✗':>4} {'incon':>6} "
          f"{'skip':>5} {'calls':>6} {'✓':>4} {'✗':>4} {'mutants':>8} {'ran':>4} {'caught':>7} {'s':>6}")
    for r in rows:
        fs = r["functions"]
        f = Counter(x["outcome"] for x in fs if not x["by_design"])
        c = Counter(x["outcome"] for x in r["calls"])
        ran = [m for m in r["mutants"] if m["outcome"] in RAN or _backward_raised(m)]
        print(f"{r['package']:<18} {len(fs):>9} {sum(1 for x in fs if x['by_design']):>6} {f['env']:>4} "
              f"{f['pass']:>4} {f['warning']:>4} {f['fail'] + f['error']:>4} {f['inconclusive']:>6} "
              f"{f['skipped']:>5} {sum(c.values()):>6} {c['pass'] + c['warning']:>4} {c['fail'] + c['error']:>4} "
              f"{len(r['mutants']):>8} {len(ran):>4} {sum(1 for m in ran if _caught(m)):>7} "
              f"{r['seconds']:>6.1f}")
    s = summarise(rows)
    print()
    print(f"Functions: {s['functions']} ({s['by_design']} not derivatives by design, {s['missing_dependency']} "
          f"need a module the run interpreter lacks); correct and runnable here: {s['correct']}")
    print(f"  proved (first order ✓): {s['passed']} ({s['passed_pct']:.0f}%), of which {s['with_warning']} with a "
          f"⚠ warning; reported ✗ (false alarms): {s['false_alarms']}; timed out: {s['timeouts']}; "
          f"inconclusive: {s['inconclusive']}; skipped: {s['skipped']}")
    print(f"  not derivatives by design, reported as: {s['by_design_outcomes']}")
    print(f"gradcheck calls: {s['calls']}; {s['call_outcomes']}")
    print(f"wrong-backward mutants: {s['mutants']}; could run {s['mutants_ran']} ({s['mutants_ran_pct']:.0f}%); "
          f"caught {s['mutants_caught']} of those ({s['mutants_caught_pct']:.0f}%)")
    print("\nFunctions not proved:")
    for r in rows:
        for f in r["functions"]:
            if f["outcome"] != "pass":
                tag = f" [by design: {f['by_design']}]" if f["by_design"] else ""
                print(f"  {r['package']}: {f['target']}: {f['outcome']}: {f['summary'][:200]}{tag}")
    print("\ngradcheck calls not passed:")
    for r in rows:
        for c in r["calls"]:
            if c["outcome"] != "pass":
                print(f"  {r['package']}: {c['target']}: {c['outcome']}: {c['summary'][:200]}")
    print("\nMutants not caught:")
    for r in rows:
        for m in r["mutants"]:
            if not _caught(m):
                print(f"  {r['package']}: {m['target']} [{m['mutation']}]: {m['outcome']}: {m['summary'][:160]}")


def compare(rows: list[dict], before: list[dict]) -> None:
    """Outcomes of the same correct, runnable Functions and of the same mutants, before and now."""
    def key(package, item):
        return (package, item["target"], item.get("mutation"))

    old = {key(r["package"], f): f["outcome"] for r in before for f in r["functions"] + r["mutants"] + r["calls"]}
    correct = [(r["package"], f) for r in rows for f in r["functions"]
               if not f["by_design"] and f["outcome"] not in ("env", "abstract")]
    mutants = [(r["package"], m) for r in rows for m in r["mutants"]]
    calls = [(r["package"], c) for r in rows for c in r["calls"]]
    print("\nSame targets, before -> now:")
    for label, items in (("correct Functions", correct), ("gradcheck calls", calls), ("mutants", mutants)):
        was = Counter(old.get(key(p, f), "missing") for p, f in items)
        now = Counter(f["outcome"] for _p, f in items)
        print(f"  {label} ({len(items)}): before {dict(was)}; now {dict(now)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gradlint-corpus"))
    parser.add_argument("--only", default="", help="comma-separated package names")
    parser.add_argument("--no-mutants", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="write all rows as JSON here")
    parser.add_argument("--gradlint", type=Path, default=Path(sys.executable).parent / "gradlint",
                        help="the gradlint command to measure (default: this venv's)")
    parser.add_argument("--tag", default="current", help="scratch checkouts go to CACHE/runner/TAG")
    parser.add_argument("--report", type=Path, nargs="+", default=None, metavar="JSON",
                        help="print the report of earlier --out files instead of running (a later file's "
                             "package replaces an earlier one's)")
    parser.add_argument("--compare", type=Path, default=None, metavar="JSON",
                        help="an earlier --out file (e.g. of the previous version, --gradlint ... --tag "
                             "baseline): the same targets' outcomes then and now")
    args = parser.parse_args(argv)
    if args.report:
        merged: dict[str, dict] = {}
        for path in args.report:
            for row in json.loads(path.read_text())["rows"]:
                merged[row["package"]] = row
        rows = [merged[p[0]] for p in PACKAGES if p[0] in merged]
        for row in rows:  # NOT_A_DERIVATIVE may have grown since: judge again
            for f in row["functions"]:
                f["by_design"] = by_design(f["target"])
            designed = {f["target"] for f in row["functions"] if f["by_design"]}
            row["mutants"] = [m for m in row["mutants"] if m["target"] not in designed]
        print_report(rows)
        if args.compare:
            compare(rows, json.loads(args.compare.read_text())["rows"])
        if args.out:
            args.out.write_text(json.dumps({"rows": rows, "summary": summarise(rows)}, indent=2))
        return 0
    wanted = {n.strip().lower() for n in args.only.split(",") if n.strip()}
    selected = [p for p in PACKAGES if not wanted or p[0].lower() in wanted]
    python = run_venv(args.cache, [req for p in PACKAGES for req in p[2]])
    rows = []
    for name, version, _extra in selected:
        log(f"running {name}=={version} ...")
        try:
            rows.append(measure_package(args.cache, name, version, python, args.gradlint, not args.no_mutants,
                                        args.tag))
        except Exception as error:  # report and go on
            log(f"FAILED {name}=={version}: {error}")
    print_report(rows)
    if args.compare:
        compare(rows, json.loads(args.compare.read_text())["rows"])
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "summary": summarise(rows)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
