"""What GL010-GL029 cost: lint time on real code with and without them, in one run.

Lints the Python files that mention `autograd.Function` or gradcheck under torch's own
`autograd/`, `nn/` and `testing/_internal/` (from the installed torch), or under the
directories given, in-process: first with rules GL000-GL009 (the baseline), then with
every rule, alternating, and prints the ratio; with `--per-rule`, also each new rule alone
on top of the baseline, to show which one costs what.

    .venv/bin/python benchmarks/bench_new_rules.py [DIR ...] [--repeat 3] [--per-rule]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from gradlint.engine.linter import LintOptions, lint_source
from gradlint.rules import ALL_RULES

BASELINE = frozenset(rule.code for rule in ALL_RULES if rule.code < "GL010")
NEW = [rule.code for rule in ALL_RULES if "GL010" <= rule.code < "GL030"]


def default_roots() -> list[Path]:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("torch is not installed here: give directories to lint")
    torch = Path(spec.origin).parent
    return [torch / "autograd", torch / "nn", torch / "testing" / "_internal"]


def sources(roots: list[Path]) -> list[tuple[str, str]]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "torch" in text and ("autograd.Function" in text or "gradcheck" in text):
                found.append((str(path), text))
    return found


def lint_all(files: list[tuple[str, str]], select: frozenset[str]) -> tuple[float, int]:
    options = LintOptions(select=select)
    start = time.perf_counter()
    count = 0
    for path, text in files:
        count += len(lint_source(text, path, options).findings)  # a fresh cache each time
    return time.perf_counter() - start, count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--per-rule", action="store_true")
    args = parser.parse_args()
    files = sources(args.roots or default_roots())
    lines = sum(text.count("\n") for _, text in files)
    print(f"{len(files)} files, {lines} lines (those that mention autograd.Function or gradcheck)",
          flush=True)
    everything = BASELINE | frozenset(NEW)
    base_times, all_times = [], []
    for _ in range(args.repeat):
        base_times.append(lint_all(files, BASELINE)[0])
        all_times.append(lint_all(files, everything)[0])
    base, full = statistics.median(base_times), statistics.median(all_times)
    print(f"GL000-GL009: {base:6.2f} s   all rules: {full:6.2f} s   ratio {full / base:.2f} "
          f"(median of {args.repeat})")
    if not args.per_rule:
        return 0
    print("\neach new rule on top of GL000-GL009 (one run each):")
    for code in NEW:
        seconds, count = lint_all(files, BASELINE | {code})
        print(f"  {code}: ratio {seconds / base:.2f}  ({count} findings in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
