#!/usr/bin/env python3
"""The dynamic oracle: gradlint's static claims checked against real runs.

Each package of ``soundness_corpus.py`` that ships a CPU test suite gets a virtual
environment of its own (``--cache-dir``/oracle; torch 2.13.0 and pytest from a shared base
environment, the package's other dependencies beside them, the package's own downloaded
sources first on ``PYTHONPATH``). Its tests run with ``oracle_probe`` loaded, which records
at every ``gradcheck``/``gradgradcheck`` call and every custom ``Function.apply``/backward:
the inputs' dtypes and ``requires_grad``, how the inputs were passed, how many values
backward returned, and what it raised.

``compare`` then puts next to those records every static claim gradlint makes at the same
places:

- the **findings** that say something a run can refute: GL001 (a low-precision input that
  requires grad), GL002 (no input requires grad), GL003 (inputs not one argument), GL004
  (the number of gradients), GL005 (backward fails on unsaved tensors), GL022 (a gradient
  for a non-tensor input);
- the **facts** behind them: each gradcheck input whose dtype, ``requires_grad`` or count
  gradlint says it knows; each Function's number of forward inputs.

A claim a run contradicts is a bug in gradlint (the script exits 1 and lists it).

Usage::

    .venv/bin/python scripts/dynamic_oracle.py setup   --cache-dir DIR [--split tune]
    nice -n 10 .venv/bin/python scripts/dynamic_oracle.py record  --cache-dir DIR [--split tune]
    .venv/bin/python scripts/dynamic_oracle.py compare --cache-dir DIR [--split tune] [--markdown]
    .venv/bin/python scripts/dynamic_oracle.py fixed   --cache-dir DIR [--split held-out]

``fixed`` applies every ``--fix`` of gradlint to a copy of each package and runs the test
files the fixes touched (with the same environments): every fixed file must still run.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import real_code_accuracy as corpus  # noqa: E402
import soundness_corpus  # noqa: E402

BASE_REQUIREMENTS = ["torch==2.13.0", "pytest", "numpy", "scipy"]


@dataclass(frozen=True)
class Suite:
    """How to run a package's own tests on CPU."""

    deps: tuple[str, ...] = ()  # besides torch, pytest, numpy, scipy
    tests: tuple[str, ...] = ()  # paths under the package root; () = every test file
    pytest_args: tuple[str, ...] = ()
    source: str = "."  # what goes on PYTHONPATH ("src" for src layouts)
    extra_paths: tuple[str, ...] = ()  # more directories for PYTHONPATH (a tests' helpers)
    timeout: int = 420  # seconds of wall time for the whole run (records so far count)


TORCHVISION = "torchvision==0.28.0"  # the release made for torch 2.13

# Only packages whose published files hold tests that exercise Functions or gradcheck.
SUITES: dict[str, Suite] = {
    "xitorch": Suite(tests=("xitorch/_tests",)),
    "norse": Suite(deps=("nir", "nirtorch", TORCHVISION), tests=("norse/torch",),
                   pytest_args=("-k", "not cuda and not gpu")),
    "optimum-quanto": Suite(deps=("ninja", "safetensors", "huggingface_hub"), tests=("test/library", "test/tensor", "test/nn"),
                            pytest_args=("-k", "not cuda and not mps and not xpu")),
    "memcnn": Suite(deps=("SimpleITK", "tqdm", TORCHVISION), tests=("memcnn/models",)),
    "pytorch-finufft": Suite(deps=("finufft",), tests=("tests",)),
    "torchsparsegradutils": Suite(deps=("packaging",), tests=("torchsparsegradutils/tests",),
                                  pytest_args=("-k", "not cuda and not jax and not cupy")),
    "torchopt": Suite(deps=("optree", "typing-extensions", "graphviz"), tests=("tests",),
                      extra_paths=("tests",)),
    "torchlpc": Suite(deps=("numba",), tests=("tests",)),
    "deepinv": Suite(deps=(TORCHVISION, "matplotlib", "tqdm", "einops", "natsort", "h5py", "requests", "torchmetrics"),
                     tests=("deepinv/tests",)),
    "cola-ml": Suite(deps=("tqdm", "cola-plum-dispatch==0.1.4", "optree"), tests=("tests",)),
    "torchgeometry": Suite(tests=("test",)),
    "torch-interpol": Suite(tests=("interpol/tests", "tests")),
    "torchcomp": Suite(deps=("numba",), tests=("tests",)),
    "pylops": Suite(deps=("numba",), tests=("pytests",)),
    "qiskit-machine-learning": Suite(deps=("qiskit", "scikit-learn", "dill", "ddt"), tests=("test/connectors",)),
    "neuraloperator": Suite(deps=("tensorly", "tensorly-torch", "opt-einsum", "configmypy", "zarr", "h5py"),
                            tests=("neuralop",)),
    "hqq": Suite(deps=("tqdm", "huggingface_hub"), tests=("tests",)),
    "spikingjelly": Suite(deps=("tqdm", "matplotlib"), tests=("spikingjelly",)),
}
# a test file worth running mentions one of these
RELEVANT = re.compile(r"gradcheck|\.backward\(|autograd\.grad\b|\.apply\(|torch\.autograd")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def oracle_dir(cache: Path) -> Path:
    return cache / "oracle"


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def site_packages(venv: Path) -> Path:
    found = sorted((venv / "lib").glob("python3*/site-packages"))
    return found[0]


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python_of(venv)), "-m", "pip", "--disable-pip-version-check", "--quiet",
                           *args], capture_output=True, text=True)


def make_venv(path: Path) -> None:
    if not python_of(path).exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)


def setup(cache: Path, packages) -> dict[str, str]:
    """A base environment with torch, and one per package beside it. Returns the status."""
    root = oracle_dir(cache)
    base = root / "base"
    make_venv(base)
    if not (base / ".ready").exists():
        done = pip(base, "install", *BASE_REQUIREMENTS)
        if done.returncode:
            raise SystemExit(f"cannot set up the base environment:\n{done.stderr[-2000:]}")
        (base / ".ready").write_text("ok\n")
    constraints = root / "constraints.txt"
    constraints.write_text("torch==2.13.0\n")
    status = {}
    for name, version, _split, _why in packages:
        suite = SUITES.get(name)
        if suite is None:
            status[name] = "no CPU test suite in the published files"
            continue
        venv = root / "venvs" / name
        ready = venv / ".ready"
        wanted = "ok " + " ".join(suite.deps)
        if ready.exists() and ready.read_text().strip() == wanted:
            status[name] = "ok"
            continue
        make_venv(venv)
        (site_packages(venv) / "gradlint_oracle_base.pth").write_text(str(site_packages(base)) + "\n")
        if suite.deps:
            done = pip(venv, "install", "-c", str(constraints), *suite.deps)
            if done.returncode:
                status[name] = "deps failed: " + " ".join(done.stderr.strip().splitlines()[-2:])[:300]
                log(f"{name}: {status[name]}")
                continue
        ready.write_text(wanted + "\n")
        status[name] = "ok"
    return status


def test_files(root: Path, suite: Suite) -> list[str]:
    chosen = []
    for entry in suite.tests or (".",):
        base = root / entry
        if base.is_file():
            chosen.append(entry)
            continue
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if not (path.name.startswith("test") or path.name.endswith("_test.py")):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if RELEVANT.search(text):
                chosen.append(str(path.relative_to(root)))
    return chosen


def run_suite(name: str, root: Path, suite: Suite, venv: Path, out: Path,
              files: list[str] | None = None) -> dict:
    files = test_files(root, suite) if files is None else files
    if out.exists():
        out.unlink()
    if not files:
        return {"package": name, "files": 0, "status": "no relevant test files"}
    env = dict(os.environ, GRADLINT_ORACLE_OUT=str(out), CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(HERE), str(root / suite.source),
                                           *(str(root / p) for p in suite.extra_paths)]),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               MPLBACKEND="Agg", NUMBA_CACHE_DIR=str(out.parent / "numba-cache"))
    cmd = ["nice", "-n", "10", str(python_of(venv)), "-m", "pytest", "-q", "-p", "oracle_probe",
           "-p", "no:cacheprovider", "--continue-on-collection-errors", "--rootdir", str(root),
           "-o", "addopts=", "--import-mode=prepend", *suite.pytest_args, *files]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                              timeout=suite.timeout)
        tail = (proc.stdout.strip().splitlines() or [""])[-1]
        status = f"exit {proc.returncode}: {tail[:200]}"
    except subprocess.TimeoutExpired:
        status = f"stopped after {suite.timeout} s (the records so far count)"
    return {"package": name, "files": len(files), "status": status,
            "seconds": round(time.monotonic() - started, 1)}


def read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a stopped run
        if record.get("kind") != "counts":
            records.append(record)
    return records


# -- the static side -----------------------------------------------------------------------
@dataclass
class StaticCall:
    file: str
    start: int
    end: int
    variant: str
    inputs: list[dict] | None  # per input: {"dtype", "requires_grad"} known facts, or None


@dataclass
class StaticFunction:
    file: str
    name: str
    forward_line: int | None  # line of the `def` (decorators excluded)
    backward_lines: tuple[int, int] | None  # first/last line of backward (decorators included)
    inputs: tuple[int, int] | None  # (required, total) forward inputs, or None: unknown


@dataclass
class StaticModel:
    calls: list[StaticCall] = field(default_factory=list)
    functions: list[StaticFunction] = field(default_factory=list)


def static_model(path: Path) -> StaticModel:
    """gradlint's facts about the file: gradcheck calls and their inputs, Functions."""
    from gradlint.analysis.fact_types import TensorFact
    from gradlint.analysis.gradcheck_calls import input_elements
    from gradlint.engine.linter import LintCache, view_module

    model = StaticModel()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return model
    if "torch" not in text:
        return model
    view = view_module(text, LintCache(), path=str(path))
    for position in range(len(view.good)):
        analysis = view.analysis(position)
        for call in analysis.gradcheck_calls:
            lines = view.lines_of(call.node, call.site)
            if lines is None:
                continue
            elements = input_elements(call, analysis.evaluator)
            facts = None
            if elements is not None:
                facts = []
                for element in elements:
                    fact = element.fact
                    if isinstance(fact, TensorFact):
                        facts.append({"dtype": fact.dtype, "requires_grad": fact.requires_grad})
                    else:
                        facts.append({"dtype": None, "requires_grad": None,
                                      "kind": type(fact).__name__})
            model.calls.append(StaticCall(str(path), lines[0], lines[1], call.variant, facts))
        for function in analysis.autograd_functions:
            forward = function.forward
            backward = function.backward
            forward_line = backward_lines = None
            if forward is not None and getattr(forward, "node", None) is not None:
                span = view.lines_of(forward.node.name, function.site)
                forward_line = span[0] if span else None
            if backward is not None and getattr(backward, "node", None) is not None:
                span = view.lines_of(backward.node, function.site)
                if span is not None and backward.node.decorators:  # co_firstlineno is theirs
                    first = view.lines_of(backward.node.decorators[0], function.site)
                    span = (min(span[0], first[0]) if first else span[0], span[1])
                backward_lines = span
            inputs = function.forward_inputs()
            counted = None if inputs is None else (inputs[1], len(inputs[0]))
            model.functions.append(StaticFunction(str(path), function.name, forward_line,
                                                  backward_lines, counted))
    return model


def lint_findings(root: Path) -> list[dict]:
    found, _ = corpus.run_gradlint(root, 1)
    for f in found:
        f["file"] = str((root / f["path"]).resolve())
    return found


# -- comparing -------------------------------------------------------------------------------
LOW = {"float32", "float16", "bfloat16", "complex64", "complex32"}


@dataclass
class Verdicts:
    confirmed: Counter = field(default_factory=Counter)
    contradicted: list[str] = field(default_factory=list)
    contradicted_by: Counter = field(default_factory=Counter)
    unexercised: Counter = field(default_factory=Counter)
    not_checkable: Counter = field(default_factory=Counter)
    facts_confirmed: Counter = field(default_factory=Counter)

    def contradict(self, what: str, where: str, detail: str) -> None:
        self.contradicted_by[what] += 1
        self.contradicted.append(f"{what} {where}: {detail}")


def _runs_at(records: list[dict], kind: str, file: str, start: int, end: int) -> list[dict]:
    return [r for r in records if r["kind"] == kind and r.get("file") == file
            and r.get("line") is not None and start <= r["line"] <= end]


def _backward_runs(records: list[dict], function: StaticFunction) -> list[dict]:
    if function.backward_lines is None:
        return []
    start, end = function.backward_lines
    return _runs_at(records, "backward", function.file, start, end)


def compare(records: list[dict], findings: list[dict], models: dict[str, StaticModel],
            verdicts: Verdicts) -> None:
    calls = [c for m in models.values() for c in m.calls]
    functions = [f for m in models.values() for f in m.functions]
    # facts: gradcheck inputs
    for call in calls:
        runs = [r for r in _runs_at(records, "gradcheck", call.file, call.start, call.end)
                if r["variant"] == call.variant]  # (not gradgradcheck's inner gradcheck)
        if not runs:
            verdicts.unexercised["gradcheck call"] += 1
            continue
        where = f"{call.file}:{call.start}"
        for run in runs:
            inputs = run.get("inputs")
            if call.inputs is None or inputs is None:
                continue
            if len(call.inputs) != len(inputs):
                verdicts.contradict("fact:input-count", where,
                                    f"static {len(call.inputs)} inputs, run {len(inputs)}")
                continue
            verdicts.facts_confirmed["input-count"] += 1
            for index, (static, actual) in enumerate(zip(call.inputs, inputs)):
                if actual.get("type") != "tensor":
                    if static.get("dtype") or static.get("requires_grad") is not None:
                        verdicts.contradict("fact:tensor", where,
                                            f"input #{index}: static tensor fact, run {actual}")
                    continue
                if static.get("dtype") is not None:
                    if static["dtype"] != actual["dtype"]:
                        verdicts.contradict("fact:dtype", where, f"input #{index}: static "
                                            f"{static['dtype']}, run {actual['dtype']}")
                    else:
                        verdicts.facts_confirmed["dtype"] += 1
                if static.get("requires_grad") is not None:
                    if static["requires_grad"] != actual["requires_grad"]:
                        verdicts.contradict("fact:requires_grad", where, f"input #{index}: static "
                                            f"{static['requires_grad']}, run {actual['requires_grad']}")
                    else:
                        verdicts.facts_confirmed["requires_grad"] += 1
    # facts: the number of forward inputs, at every apply of a known Function
    by_forward = {(f.file, f.forward_line): f for f in functions if f.forward_line is not None}
    for run in (r for r in records if r["kind"] == "apply"):
        function = _function_of_apply(run, by_forward)
        if function is None or function.inputs is None:
            continue
        required, total = function.inputs
        count = run["positional"] + len(run["keywords"])
        if not required <= count <= total:
            verdicts.contradict("fact:forward-inputs", f"{function.file}:{function.forward_line}",
                                f"{function.name}: static {required}..{total} inputs, "
                                f"applied with {count} at {run['file']}:{run['line']}")
        else:
            verdicts.facts_confirmed["forward-inputs"] += 1
    # findings
    for finding in findings:
        code, file, line = finding["code"], finding["file"], finding["line"]
        where = f"{file}:{line}"
        if code in ("GL001", "GL002", "GL003"):
            call = next((c for c in calls if c.file == file and c.start <= line <= c.end), None)
            runs = [] if call is None else [
                r for r in _runs_at(records, "gradcheck", file, call.start, call.end)
                if r["variant"] == call.variant]
            if not runs:
                verdicts.unexercised[code] += 1
                continue
            refuting = [r for r in runs if not _gradcheck_claim_holds(code, r)]
            if refuting:
                verdicts.contradict(code, where, f"{finding['message'][:100]} | run: "
                                    f"{json.dumps(refuting[0].get('inputs'))[:200]}")
            else:
                verdicts.confirmed[code] += 1
        elif code in ("GL004", "GL005", "GL022"):
            function = next((f for f in functions if f.file == file and f.backward_lines
                             and f.backward_lines[0] <= line <= f.backward_lines[1]), None)
            runs = [] if function is None else _backward_runs(records, function)
            if not runs:
                verdicts.unexercised[code] += 1
                continue
            refuting = [r for r in runs if not _backward_claim_holds(finding, r)]
            if refuting:
                verdicts.contradict(f"{code}:{finding['severity']}", where,
                                    f"{finding['message'][:100]} | run: {json.dumps(refuting[0])[:200]}")
            else:
                verdicts.confirmed[code] += 1
        else:
            verdicts.not_checkable[code] += 1


def _function_of_apply(run: dict, by_forward: dict) -> StaticFunction | None:
    file, line = run.get("forward_file"), run.get("forward_line")
    if file is None or line is None:
        return None
    # co_firstlineno is the first decorator's line; the static line is the `def`'s
    for offset in range(0, 4):
        function = by_forward.get((file, line + offset))
        if function is not None:
            return function
    return None


def _gradcheck_claim_holds(code: str, run: dict) -> bool:
    inputs = run.get("inputs") or []
    tensors = [i for i in inputs if i.get("type") == "tensor"]
    if code == "GL001":
        return any(t["requires_grad"] and t["dtype"] in LOW for t in tensors)
    if code == "GL002":
        return not any(t["requires_grad"] for t in tensors)
    limit = 3 if run["variant"] == "gradgradcheck" else 2
    # GL003: inputs spread over arguments, settings passed positionally, or an inputs
    # value gradcheck cannot take as one argument
    return run["positional"] > limit or run["outcome"].get("type") == "TypeError" or \
        run["inputs_type"] not in ("tuple", "list", "Tensor")


def _backward_claim_holds(finding: dict, run: dict) -> bool:
    outcome = run["outcome"]
    inputs = run.get("inputs")
    code = finding["code"]
    if code == "GL005":
        return outcome.get("type") in ("NameError", "UnboundLocalError", "ValueError",
                                       "IndexError", "AttributeError", "TypeError")
    if outcome.get("type") != "returned" or inputs is None:
        return True  # nothing to refute with
    count, nones = outcome["count"], outcome["none"]
    if code == "GL004":
        if finding["severity"] == "hint" or "extra" in finding["message"] or count > len(inputs):
            return count > len(inputs)
        return count != len(inputs)
    # GL022: a gradient at a position whose input is not a tensor
    match = re.search(r"position (\d+)", finding["message"])
    if not match:
        return True
    position = int(match.group(1)) - 1
    if position >= len(inputs) or position >= count:
        return False
    return inputs[position].get("type") != "tensor" and not nones[position]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("setup", "record", "compare", "fixed"))
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/gradlint-soundness"))
    parser.add_argument("--split", choices=soundness_corpus.SPLITS, default="tune")
    parser.add_argument("--only", default="")
    parser.add_argument("--markdown", action="store_true", help="compare: a table for benchmarks/")
    parser.add_argument("--json", type=Path, help="compare: write the verdicts here")
    parser.add_argument("--keep", action="store_true",
                        help="record: skip the packages that have records already")
    args = parser.parse_args(argv)
    packages = [p for p in soundness_corpus.selected(args.split, args.only) if p[0] in SUITES]
    cache = args.cache_dir
    roots = {name: root for name, _v, _k, root in soundness_corpus.fetch(cache, packages)}
    records_dir = oracle_dir(cache) / "records"
    records_dir.mkdir(parents=True, exist_ok=True)
    if args.command == "setup":
        for name, status in setup(cache, packages).items():
            print(f"{name}: {status}")
        return 0
    if args.command == "record":
        setup(cache, packages)
        for name, _version, _split, _why in packages:
            venv = oracle_dir(cache) / "venvs" / name
            if not (venv / ".ready").exists() or name not in roots:  # (setup said why)
                print(f"{name}: not set up")
                continue
            if args.keep and (records_dir / f"{name}.jsonl").exists():
                continue
            log(f"running {name}'s tests ...")
            result = run_suite(name, roots[name], SUITES[name], venv, records_dir / f"{name}.jsonl")
            print(f"{name}: {result['files']} test files, {result.get('seconds', 0)} s, {result['status']}")
        return 0
    if args.command == "fixed":
        return run_fixed(cache, packages, roots)
    return run_compare(packages, roots, records_dir, args)


def run_compare(packages, roots, records_dir: Path, args) -> int:
    rows = []
    total = Verdicts()
    for name, version, _split, _why in packages:
        records = read_records(records_dir / f"{name}.jsonl")
        if name not in roots:
            continue
        root = roots[name]
        findings = lint_findings(root)
        files = {r["file"] for r in records if r.get("file")} | \
                {r["forward_file"] for r in records if r.get("forward_file")} | \
                {f["file"] for f in findings}
        models = {f: static_model(Path(f)) for f in sorted(files)
                  if f.startswith(str(root.resolve())) and f.endswith(".py")}
        verdicts = Verdicts()
        compare(records, findings, models, verdicts)
        kinds = Counter(r["kind"] for r in records)
        rows.append((name, version, kinds, verdicts))
        for attr in ("confirmed", "unexercised", "not_checkable", "facts_confirmed", "contradicted_by"):
            getattr(total, attr).update(getattr(verdicts, attr))
        total.contradicted += verdicts.contradicted
    print_compare(rows, total, args.markdown)
    if args.json:
        args.json.write_text(json.dumps([{
            "package": n, "version": v, "records": dict(k), "confirmed": dict(x.confirmed),
            "contradicted": x.contradicted, "unexercised": dict(x.unexercised),
            "not_checkable": dict(x.not_checkable), "facts_confirmed": dict(x.facts_confirmed)}
            for n, v, k, x in rows], indent=1))
    return 1 if total.contradicted else 0


def print_compare(rows, total: Verdicts, markdown: bool) -> None:
    header = ["package", "gradcheck runs", "apply runs", "backward runs", "facts confirmed",
              "findings confirmed", "unexercised", "not checkable", "contradicted"]
    lines = []
    for name, version, kinds, v in rows:
        lines.append([f"{name} {version}", str(kinds["gradcheck"]), str(kinds["apply"]),
                      str(kinds["backward"]), str(sum(v.facts_confirmed.values())),
                      str(sum(v.confirmed.values())), str(sum(v.unexercised.values())),
                      str(sum(v.not_checkable.values())), str(len(v.contradicted))])
    lines.append(["TOTAL", *(str(sum(int(line[i]) for line in lines)) for i in range(1, 4)),
                  str(sum(total.facts_confirmed.values())), str(sum(total.confirmed.values())),
                  str(sum(total.unexercised.values())), str(sum(total.not_checkable.values())),
                  str(len(total.contradicted))])
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 1))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
        for line in [header, *lines]:
            print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                            for i, (c, w) in enumerate(zip(line, widths))))
    print(f"\nfacts confirmed by kind: {dict(total.facts_confirmed)}")
    print(f"findings confirmed by code: {dict(total.confirmed)}")
    print(f"findings at sites no test ran: {dict(total.unexercised)}")
    print(f"findings the oracle cannot check: {dict(total.not_checkable)}")
    print(f"contradicted: {len(total.contradicted)} {dict(total.contradicted_by)}")
    for line in total.contradicted:
        print("  CONTRADICTED " + line)


def run_fixed(cache: Path, packages, roots) -> int:
    """Apply every fix to a copy; run the test files whose fixes changed them."""
    gradlint = corpus.gradlint_command()
    failures = 0
    for name, _version, _split, _why in packages:
        venv = oracle_dir(cache) / "venvs" / name
        if name not in roots or not (venv / ".ready").exists():
            continue
        root = roots[name]
        with tempfile.TemporaryDirectory(prefix=f"fixed-{name}-") as tmp:
            copy = Path(tmp) / root.name
            shutil.copytree(root, copy, symlinks=True)
            before = {p: p.read_bytes() for p in copy.rglob("*.py")}
            subprocess.run([*gradlint, "check", "--fix", "--unsafe-fixes", "--exit-zero",
                            "--no-cache", "."], cwd=copy, capture_output=True)
            changed = [p for p, data in before.items() if p.read_bytes() != data]
            tests = [str(p.relative_to(copy)) for p in changed
                     if p.name.startswith("test") or p.name.endswith("_test.py")]
            if not changed:
                print(f"{name}: no fix")
                continue
            for path in changed:
                try:
                    ast.parse(path.read_bytes())
                except SyntaxError as error:
                    failures += 1
                    print(f"{name}: {path.relative_to(copy)} does not parse after --fix: {error}")
            if not tests:
                print(f"{name}: {len(changed)} fixed files, none of them a test file "
                      f"(the package's tests run the fixed code)")
                tests = test_files(copy, SUITES[name])
            out = Path(tmp) / "records.jsonl"
            result = run_suite(name, copy, SUITES[name], venv, out, tests)
            print(f"{name}: {len(changed)} fixed files; their tests: {result['status']}")
            if "exit 0" not in result["status"]:
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
