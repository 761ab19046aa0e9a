"""Does `gradlint check` cost linear time on files of every shape?

For each shape of benchmarks/shapes.py, at two sizes (``--sizes``, default 4,000 and 8,000
lines) and optionally a big one (``--big``, e.g. 50000), in one run:

- ``gradlint check --no-cache -j 1`` on the file, in a fresh process, and a bare
  ``libcst.parse_module`` of the same code in another fresh process (a notebook's code
  cells joined, IPython lines blanked). Both are timed by CPU time (user + system of the
  whole process, interpreter start and imports included), steadier than wall time on a
  shared machine; wall times are printed with the load average.
- ``ratio``: gradlint's process CPU / the bare parse's process CPU (issue 26: <= 2x at 8,000
  and at 50,000 lines).
- ``doubling``: the CPU of the lint itself (after the interpreter and gradlint's imports)
  at the larger size over the smaller (<= 2.3x); also per rule and per phase.
- per phase (in the gradlint process): libcst parsing, the rules' ``check`` (the analysis they
  ask for included: a model several rules share is paid by the first rule that asks), the
  positions of findings, and the rest (reading, pre-checks, the module context, output).

``--text`` measures the default text output instead of ``--format json``: its summary also
counts what ``--fix`` would apply ("N fixable"), which costs a second lint of a file with
fixes (the lint of the fixed text that verifies them); JSON output does not count them.

``--gradlint-src DIR`` measures another gradlint: DIR holds its ``gradlint`` package (a
copy of an older commit's, for a before/after: ``git archive COMMIT gradlint | tar -x -C DIR``).
``--timeout`` gives up on a run after that many wall seconds (printed as ``> T``).

Run: .venv/bin/python benchmarks/bench_shapes.py [--shapes all] [--sizes 4000,8000]
        [--big 50000] [--rules] [--text] [--gradlint-src DIR] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from shapes import SHAPES, generate, suffix  # noqa: E402

PYTHON = sys.executable


# -- the child processes -----------------------------------------------------------------
def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def notebook_code(raw: str) -> str:
    """A notebook's code cells joined, IPython lines (magics, shell escapes) blanked: about
    the text gradlint parses."""
    cells = json.loads(raw)["cells"]
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"]
        text = "".join(source) if isinstance(source, list) else source
        for line in text.splitlines():
            lines.append("" if line.lstrip().startswith(("%", "!")) else line)
    return "\n".join(lines) + "\n"


def child_parse(path: str) -> dict:
    import libcst

    start = time.process_time()
    data = Path(path).read_text(encoding="utf-8")
    if path.endswith(".ipynb"):
        data = notebook_code(data)
    libcst.parse_module(data)
    return {"cpu_total": _cpu(), "cpu_work": time.process_time() - start}


class Timings:
    """CPU seconds per rule and per phase, by wrapping what the engine calls. Each second
    is counted once: the cyclic collector's runs as "gc" wherever they happen, parsing and
    positions as such even when a rule asks for them, a rule's ``check`` for the rest of
    its time (the analysis it asks for included)."""

    def __init__(self) -> None:
        self.rules: dict[str, float] = {}
        self.phases: dict[str, float] = {"parse": 0.0, "positions": 0.0, "gc": 0.0}
        self._counted = 0.0  # seconds already given to a phase (rules leave them out)
        self._collecting = 0.0

    def _phase(self, name: str, function):
        def timed(*args, **kwargs):
            counted = self._counted
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.process_time() - start - (self._counted - counted)
                self.phases[name] += spent
                self._counted += spent

        return timed

    def _on_collection(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._collecting = time.process_time()
        else:
            spent = time.process_time() - self._collecting
            self.phases["gc"] += spent
            self._counted += spent

    def install(self) -> None:
        import gc

        import libcst

        from gradlint.engine import blocks
        from gradlint.rules import RULES_BY_CODE

        libcst.parse_module = self._phase("parse", libcst.parse_module)
        blocks.ParsedBlock._resolve_positions = self._phase(
            "positions", blocks.ParsedBlock._resolve_positions)
        gc.callbacks.append(self._on_collection)
        for code, rule in RULES_BY_CODE.items():
            if not rule.engine_level:
                rule.check = self._timed(code, rule.check)

    def _timed(self, code: str, check):
        timings = self

        def timed_check(rule, block):
            results = iter(check(rule, block))
            while True:
                counted = timings._counted
                start = time.process_time()
                try:
                    report = next(results)
                except StopIteration:
                    return
                finally:
                    spent = time.process_time() - start - (timings._counted - counted)
                    timings.rules[code] = timings.rules.get(code, 0.0) + spent
                    timings._counted += spent
                yield report

        return timed_check


def child_check(path: str, src: str | None, timings: bool, text: bool = False) -> dict:
    if src:
        sys.path.insert(0, src)
    import io
    from contextlib import redirect_stdout

    start = time.process_time()
    from gradlint.cli.main import main

    recorder = Timings() if timings else None
    if recorder is not None:
        recorder.install()
    imported = time.process_time()
    out = io.StringIO()
    output = ["--no-color"] if text else ["--format", "json"]
    with redirect_stdout(out):
        status = main(["check", "--no-cache", "-j", "1", *output, "--exit-zero", path])
    lint = time.process_time() - imported
    codes: dict[str, int] = {}
    if text:  # `path:[cell N:]line:column: CODE message`, one line each (hints included, as in JSON)
        findings = [re.search(r": (GL\d+) ", line).group(1)  # type: ignore[union-attr]
                    for line in out.getvalue().splitlines() if line.startswith(path + ":")]
    else:
        findings = [finding["code"] for finding in json.loads(out.getvalue() or "[]")]
    for code in findings:
        codes[code] = codes.get(code, 0) + 1
    result = {"cpu_total": _cpu(), "cpu_lint": lint, "cpu_import": imported - start,
              "status": status, "findings": len(findings), "codes": codes}
    if recorder is not None:
        result["rules"] = recorder.rules
        result["phases"] = dict(recorder.phases, rules=sum(recorder.rules.values()))
    return result


# -- the parent ----------------------------------------------------------------------------
def run_child(args: list[str], timeout: float | None) -> tuple[dict | None, float]:
    start = time.perf_counter()
    try:
        done = subprocess.run([PYTHON, __file__, *args], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{args}: failed\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1]), time.perf_counter() - start


def load() -> str:
    return "load %.1f" % os.getloadavg()[0]


def measure(shape: str, lines: int, workdir: Path, src: str | None, rules: bool,
            timeout: float | None, text: bool = False) -> dict:
    path = workdir / f"{shape}_{lines}{suffix(shape)}"
    path.write_text(generate(shape, lines), encoding="utf-8")
    parse, parse_wall = run_child(["--child-parse", str(path)], None)
    args = ["--child-check", str(path)] + (["--src", src] if src else []) + (["--timings"] if rules else []) \
        + (["--text"] if text else [])
    check, wall = run_child(args, timeout)
    assert parse is not None
    return {"shape": shape, "lines": lines, "parse": parse, "parse_wall": parse_wall,
            "check": check, "wall": wall, "load": os.getloadavg()[0], "timeout": timeout}


def _fmt(seconds: float | None) -> str:
    return f"{seconds:7.2f}s" if seconds is not None else "    -   "


def report(rows: list[dict], rules: bool) -> None:
    print(f"{'shape':<14} {'lines':>6} {'parse':>8} {'gradlint':>9} {'ratio':>7} {'lint':>8} "
          f"{'doubling':>8}  {'findings':>8}  phases: parse / rules / positions / gc / other  wall, load")
    by_shape: dict[str, list[dict]] = {}
    for row in rows:
        by_shape.setdefault(row["shape"], []).append(row)
    for shape, results in by_shape.items():
        previous = None
        for row in results:
            check, parse = row["check"], row["parse"]
            if check is None:
                print(f"{shape:<14} {row['lines']:>6} {parse['cpu_total']:7.2f}s "
                      f"> {row['timeout']:.0f}s wall (gave up)  {load()}")
                previous = None
                continue
            ratio = check["cpu_total"] / parse["cpu_total"]
            doubling = ""
            if previous is not None and previous["lines"] * 2 == row["lines"]:
                doubling = f"{check['cpu_lint'] / previous['check']['cpu_lint']:.2f}x"
            phases = check.get("phases")
            phase_text = ""
            if phases:
                other = check["cpu_lint"] - sum(phases.values())
                phase_text = (f"{phases['parse']:.2f} / {phases['rules']:.2f} / "
                              f"{phases['positions']:.2f} / {phases.get('gc', 0):.2f} / {other:.2f}")
            print(f"{shape:<14} {row['lines']:>6} {parse['cpu_total']:7.2f}s {check['cpu_total']:8.2f}s "
                  f"{ratio:6.2f}x {check['cpu_lint']:7.2f}s {doubling:>8}  {check['findings']:>8}  "
                  f"{phase_text:<42} {row['wall']:6.1f}s, load {row['load']:.1f}")
            previous = row
        if rules:
            _rule_lines(results)


def _rule_lines(results: list[dict]) -> None:
    done = [r for r in results if r["check"] is not None and "rules" in r["check"]]
    if not done:
        return
    largest = done[-1]["check"]["rules"]
    top = sorted(largest, key=largest.get, reverse=True)[:8]
    cells = []
    for code in top:
        times = [r["check"]["rules"].get(code, 0.0) for r in done]
        text = f"{code} " + "/".join(f"{t:.2f}" for t in times) + "s"
        pairs = [(a, b) for a, b in zip(done, done[1:]) if a["lines"] * 2 == b["lines"]]
        if pairs and times[-1] >= 0.05:
            a, b = pairs[-1]
            before = a["check"]["rules"].get(code, 0.0)
            if before > 0:
                text += f" ({b['check']['rules'].get(code, 0.0) / before:.1f}x)"
        cells.append(text)
    print("    rules: " + ", ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="all", help="comma-separated: " + ",".join(SHAPES))
    parser.add_argument("--sizes", default="4000,8000", help="lines, comma-separated")
    parser.add_argument("--big", type=int, default=0, help="also one file of this many lines per shape")
    parser.add_argument("--rules", action="store_true", help="time each rule and phase")
    parser.add_argument("--text", action="store_true",
                        help="measure the default text output, which also counts the fixes (a second lint)")
    parser.add_argument("--gradlint-src", help="a directory holding the gradlint package to measure")
    parser.add_argument("--timeout", type=float, default=None, help="wall seconds per gradlint run")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--child-parse", help=argparse.SUPPRESS)
    parser.add_argument("--child-check", help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    parser.add_argument("--timings", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_parse:
        print(json.dumps(child_parse(args.child_parse)))
        return
    if args.child_check:
        print(json.dumps(child_check(args.child_check, args.src, args.timings, args.text)))
        return
    shapes = list(SHAPES) if args.shapes == "all" else args.shapes.split(",")
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([args.big] if args.big else [])
    src = str(Path(args.gradlint_src).resolve()) if args.gradlint_src else None
    print(f"# bench_shapes: {' '.join(sys.argv[1:])}; {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{load()}; gradlint from {src or 'this venv'}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gradlint-bench-shapes-") as workdir:
        for shape in shapes:
            for lines in sizes:
                rows.append(measure(shape, lines, Path(workdir), src, args.rules, args.timeout, args.text))
                row = rows[-1]
                check = row["check"]
                print(f"  ({shape} {lines}: "
                      + (f"{check['cpu_total']:.2f}s cpu" if check else "gave up")
                      + f", parse {row['parse']['cpu_total']:.2f}s)", file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    report(rows, args.rules)


if __name__ == "__main__":
    main()
