"""Findings with every speed-up on vs off (text pre-checks, file prefilter, caches, fast
tree walk) on a tree of real code: prints every file where they differ.

    python scripts/compare_speedups.py DIR [--max-lines N] [--only-mentioning WORD ...]

Exit status 1 when a file differs. (The suite's tests/test_scale.py does the same on a
compact corpus; this is for large trees such as the real-code corpus.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradlint.engine.linter import lint_source  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--max-lines", type=int, default=20000)
    parser.add_argument("--only-mentioning", nargs="*", default=[],
                        help="compare only files containing one of these words (a superset of what "
                             "the rules look for keeps the run short)")
    args = parser.parse_args()
    started = time.monotonic()
    files = compared = with_findings = differing = 0
    codes: dict[str, int] = {}
    for path in sorted(args.root.rglob("*.py")):
        files += 1
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if text.count("\n") > args.max_lines:
            continue
        if args.only_mentioning and not any(word in text for word in args.only_mentioning):
            continue
        compared += 1
        fast = lint_source(text, str(path)).findings
        reference = lint_source(text, str(path), exhaustive=True).findings
        with_findings += bool(reference)
        for finding in reference:
            codes[finding.code] = codes.get(finding.code, 0) + 1
        if fast != reference:
            differing += 1
            only_fast = [f for f in fast if f not in reference]
            only_reference = [f for f in reference if f not in fast]
            print(f"DIFFERS {path}: only fast {[(f.code, f.line) for f in only_fast]}, "
                  f"only exhaustive {[(f.code, f.line) for f in only_reference]}", flush=True)
    print(f"{files} files, {compared} compared, {with_findings} with findings, {differing} differ "
          f"({time.monotonic() - started:.0f} s); findings by code: {dict(sorted(codes.items()))}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
