"""What the custom-op and torch.func rules (GL030-GL049) cost: lint time of the same files
with all rules and with those rules left out, measured in the same run.

    .venv/bin/python benchmarks/bench_custom_op_rules.py                # torch's own sources
    .venv/bin/python benchmarks/bench_custom_op_rules.py PATH --every 1 --repeat 3

Files are linted in-process (one fresh cache per file, as `gradlint check` does), in
alternating passes, timed in CPU time (process_time) so that other processes on a
shared machine weigh less. Prints the total time
of each side, the ratio, and the same for the files that mention torch.library or a
torch.func transform (the only ones where the rules do work: their text pre-check skips
the others).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from gradlint.analysis.custom_ops import MENTIONS_TORCH_LIBRARY
from gradlint.engine.linter import LintCache, LintOptions, lint_source
from gradlint.rules import ALL_RULES
from gradlint.rules.base import MENTIONS_FUNC_TRANSFORM

MINE = frozenset(rule.code for rule in ALL_RULES if "GL030" <= rule.code <= "GL049")
LIBRARY = re.compile(f"{MENTIONS_TORCH_LIBRARY.pattern}|{MENTIONS_FUNC_TRANSFORM.pattern}")


def _files(root: Path, every: int) -> list[tuple[Path, str]]:
    paths = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)[::every]
    return [(p, p.read_text(encoding="utf-8", errors="replace")) for p in paths]


def _pass(files: list[tuple[Path, str]], options: LintOptions) -> tuple[float, float]:
    """(seconds for all files, seconds for the files the pre-check lets through)."""
    total = matched = 0.0
    for _, text in files:
        start = time.process_time()
        lint_source(text, "x.py", options, LintCache())
        elapsed = time.process_time() - start
        total += elapsed
        if LIBRARY.search(text):
            matched += elapsed
    return total, matched


def main() -> None:
    import torch  # only to find its sources

    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", type=Path, default=Path(torch.__file__).parent)
    parser.add_argument("--every", type=int, default=4, help="take every N-th file")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    files = _files(args.root, args.every)
    everything = LintOptions()
    without = LintOptions(select=frozenset(r.code for r in ALL_RULES) - MINE)
    sums = {"with": [0.0, 0.0], "without": [0.0, 0.0]}
    for _ in range(args.repeat):
        for name, options in (("without", without), ("with", everything)):
            total, matched = _pass(files, options)
            sums[name][0] += total
            sums[name][1] += matched
    n_matched = sum(1 for _, text in files if LIBRARY.search(text))
    print(f"{len(files)} files from {args.root} ({n_matched} mention torch.library or torch.func), "
          f"{args.repeat} passes each")
    for label, index in (("all files", 0), ("files the pre-check lets through", 1)):
        base, mine = sums["without"][index], sums["with"][index]
        print(f"  {label}: without GL030-GL049 {base:.2f} s, with {mine:.2f} s, "
              f"ratio {mine / base if base else float('nan'):.3f}")


if __name__ == "__main__":
    main()
