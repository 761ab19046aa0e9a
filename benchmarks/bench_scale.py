"""How does `gradlint check` scale: big trees, re-runs, big files, memory, other linters?

Every figure is a ratio to a bare ``libcst.parse_module`` of the same files, measured in
the same run, the same way: a fresh ``python`` process that imports libcst, reads the files
and parses each one, timed by wall clock like the `gradlint check` process it is compared
with (the median of ``--rounds`` runs each, interleaved). Printed: the ratio of wall times,
and as a note the ratio of CPU times (user + system of the whole process tree, workers
included): on a shared, loaded machine the CPU ratio is the steadier one, while the wall
ratio shows what parallel workers gain. Rows (issue 15's table):

  torch/nn cold            `gradlint check --cache-dir EMPTY` on torch 2.13's torch/nn
  torch/nn re-run          the same command again (answered from the cache)
  torch cold               the whole torch package, with the peak RSS of the process tree
                           (the sum over its processes; and their proportional set size
                           then, which counts the pages they share after fork() once)
  autograd tree cold       a generated tree where every file holds Functions and gradcheck
                           calls (>= 200 k lines): the speed without the text pre-check
  50k-line file cold       one generated 50,000-line file of autograd code
  TorchFix / Fixit         on torch/nn (``--linters-venv``: a throw-away venv with both)

Each gradlint row also checks that the findings equal those of `--no-cache` runs (the
exhaustive comparison is a test: tests/test_scale.py).

Run: .venv/bin/python benchmarks/bench_scale.py [--rounds 3] [--only nn,torch,...]
        [--linters-venv /tmp/linters]   (python -m venv /tmp/linters &&
                                          /tmp/linters/bin/pip install torchfix==0.7.0 fixit==2.2.1)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from autograd_corpus import module  # noqa: E402

PYTHON = sys.executable
GRADLINT = str(Path(PYTHON).parent / "gradlint")
HAS_CACHE = True  # False for a gradlint from before the cache (--gradlint, for a before/after)
TORCH = Path(__import__("importlib.util").util.find_spec("torch").origin).parent  # no torch import

BARE_PARSE = r"""
import sys, time, libcst
files = [line for line in open(sys.argv[1]).read().splitlines() if line]
start = time.perf_counter()
for name in files:
    with open(name, "rb") as handle:
        data = handle.read()
    try:
        libcst.parse_module(data)
    except Exception:
        pass
print(time.perf_counter() - start)
"""

BARE_AST = r"""
import sys, time, ast, warnings
warnings.simplefilter("ignore")
files = [line for line in open(sys.argv[1]).read().splitlines() if line]
start = time.perf_counter()
for name in files:
    with open(name, "rb") as handle:
        data = handle.read()
    try:
        ast.parse(data)
    except Exception:
        pass
print(time.perf_counter() - start)
"""


def python_files(root: Path) -> list[str]:
    if root.is_file():
        return [str(root)]
    found = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        found += [os.path.join(directory, f) for f in sorted(files) if f.endswith((".py", ".pyi"))]
    return found


class TreeMemory:
    """Peak RSS of a process and all its descendants (sampled from /proc)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak_total = 0
        self.peak_pss = 0  # the same, proportional: pages shared after fork() counted once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        pids, frontier = [self.pid], [self.pid]
        while frontier:
            parent = frontier.pop()
            try:
                children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
            except OSError:
                continue
            for child in children:
                pids.append(int(child))
                frontier.append(int(child))
        return pids

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for pid in self._tree():
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1]) * 1024
                except OSError:
                    pass
            if total > self.peak_total:
                self.peak_total = total
                self.peak_pss = max(self.peak_pss, self._pss())
            self._stop.wait(0.02)

    def _pss(self) -> int:
        total = 0
        for pid in self._tree():
            try:
                for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


PSS: dict[str, int] = {}  # the proportional set size of the process tree at its RSS peak
CPU: dict[str, float] = {}  # CPU seconds of the last command timed (its whole process tree)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path | None = None, memory: bool = False) -> tuple[float, str, int]:
    """Wall seconds, stdout and peak RSS of ``command``; its CPU seconds (user + system, its
    workers included) go to CPU["last"]: on a shared machine, wall time depends on the load,
    CPU time much less."""
    cpu_before = _children_cpu()
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    sampler = TreeMemory(process.pid) if memory else None
    out, err = process.communicate()
    elapsed = time.perf_counter() - start
    CPU["last"] = _children_cpu() - cpu_before
    if sampler is not None:
        sampler.stop()
    if process.returncode not in (0, 1):
        raise SystemExit(f"{command[:3]} failed ({process.returncode}): {err.decode()[-2000:]}")
    PSS["last"] = sampler.peak_pss if sampler else 0
    return elapsed, out.decode(), sampler.peak_total if sampler else 0


def bare(script: str, listing: Path) -> float:
    elapsed = timed([PYTHON, "-c", script, str(listing)])[0]
    CPU["bare"] = CPU["last"]
    return elapsed


def findings_of(output: str) -> list:
    return sorted(json.dumps(f, sort_keys=True) for f in json.loads(output))


def measure(name: str, target: Path, rounds: int, workdir: Path, rows: list, memory: bool = False,
            rerun: bool = False) -> None:
    files = python_files(target)
    listing = workdir / f"{name.replace('/', '_')}.files"
    listing.write_text("\n".join(files))
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    parse, cold, warm, peak, peak_pss = [], [], [], 0, 0
    parse_cpu, cold_cpu, warm_cpu = [], [], []
    reference = None
    for round_ in range(rounds):
        parse.append(bare(BARE_PARSE, listing))
        parse_cpu.append(CPU["bare"])
        cache = workdir / f"cache-{name.replace('/', '_')}-{round_}"
        command = [GRADLINT, "check", "--format", "json", "--exit-zero", str(target)]
        if HAS_CACHE:
            command[2:2] = ["--cache-dir", str(cache)]
        elapsed, out, tree_peak = timed(command, memory=memory)
        cold.append(elapsed)
        cold_cpu.append(CPU["last"])
        if tree_peak > peak:
            peak, peak_pss = tree_peak, PSS["last"]
        if reference is None:
            sequential = [GRADLINT, "check", "--format", "json", "--exit-zero", "-j", "1", str(target)]
            if HAS_CACHE:
                sequential.insert(2, "--no-cache")
            reference = findings_of(timed(sequential)[1])
        if findings_of(out) != reference:
            raise SystemExit(f"{name}: the parallel run's findings differ from the sequential --no-cache run")
        if rerun:
            elapsed, out, _ = timed(command)
            warm.append(elapsed)
            warm_cpu.append(CPU["last"])
            if findings_of(out) != reference:
                raise SystemExit(f"{name}: the cached re-run's findings differ")
        shutil.rmtree(cache, ignore_errors=True)
    base = statistics.median(parse)
    base_cpu = statistics.median(parse_cpu)
    ast_s = bare(BARE_AST, listing)
    label = f"{name} ({len(files)} files, {lines / 1000:.0f} k lines, {len(reference)} findings)"
    rows.append((f"{label}, cold", statistics.median(cold), base,
                 f"cpu {statistics.median(cold_cpu) / base_cpu:.3f}x; ast.parse: {ast_s / base:.2f}x"
                 + (f"; peak RSS {peak / 2 ** 20:.0f} MB (PSS {peak_pss / 2 ** 20:.0f} MB)"
                    if memory else "")))
    if rerun:
        rows.append((f"{name}, re-run with nothing changed", statistics.median(warm), base,
                     f"cpu {statistics.median(warm_cpu) / base_cpu:.3f}x"))


def other_linter(name: str, command: list[str], target: Path, workdir: Path, rows: list) -> None:
    copy = workdir / "linted" / target.name  # outside any .gitignore'd venv (Fixit skips those)
    if not copy.exists():
        shutil.copytree(target, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy
    listing = workdir / "linter.files"
    listing.write_text("\n".join(python_files(target)))
    base = bare(BARE_PARSE, listing)
    base_cpu = CPU["bare"]
    before = _children_cpu()
    start = time.perf_counter()
    subprocess.run(command + [str(target)], capture_output=True)
    rows.append((f"{name} on {target.name}", time.perf_counter() - start, base,
                 f"cpu {(_children_cpu() - before) / base_cpu:.3f}x"))


def generated_tree(directory: Path, files: int, lines_per_file: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(files):  # distinct files (a cache shared across files gains nothing)
        (directory / f"ops_{index:04d}.py").write_text(module(lines_per_file, start=index * 1000))
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="nn,torch,tree,big,linters",
                        help="comma-separated rows: nn, torch, tree, big, linters")
    parser.add_argument("--linters-venv", type=Path, help="a venv with torchfix and fixit installed")
    parser.add_argument("--gradlint", help="the gradlint command to measure (default: this venv's)")
    args = parser.parse_args()
    global GRADLINT, HAS_CACHE
    if args.gradlint:
        GRADLINT = args.gradlint
    HAS_CACHE = "--no-cache" in subprocess.run([GRADLINT, "check", "--help"], capture_output=True,
                                               text=True).stdout
    only = set(args.only.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="gradlint-bench-scale-"))
    rows: list = []
    try:
        if "nn" in only:
            measure("torch/nn", TORCH / "nn", args.rounds, workdir, rows, rerun=True)
        if "torch" in only:
            measure("torch", TORCH, max(1, args.rounds // 3), workdir, rows, memory=True, rerun=True)
        if "tree" in only:
            tree = generated_tree(workdir / "autograd_tree", 250, 800)
            measure("autograd tree", tree, max(1, args.rounds // 3), workdir, rows, memory=True)
        if "big" in only:
            big = workdir / "big_module.py"
            big.write_text(module(50000))
            measure("50k-line file", big, 1, workdir, rows)
        if "linters" in only and args.linters_venv:
            bin_dir = args.linters_venv / "bin"
            other_linter("TorchFix 0.7", [str(bin_dir / "torchfix")], TORCH / "nn", workdir, rows)
            other_linter("Fixit 2", [str(bin_dir / "fixit"), "lint"], TORCH / "nn", workdir, rows)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{'work (one run; ratio to a bare libcst.parse_module of the same files)':<78} "
          f"{'gradlint':>9} {'parse':>8} {'ratio':>7}")
    for label, seconds, base, note in rows:
        print(f"{label:<78} {seconds:8.2f}s {base:7.2f}s {seconds / base:6.3f}x  {note}")


if __name__ == "__main__":
    main()
