"""Every finding (code, range, message, fix) on a fixed set of files, one JSON line per file:
to compare two versions of gradlint byte for byte after a change meant only for speed.

    python scripts/dump_findings.py OUT [--gradlint-src DIR] [--sizes 400,3000] [--exhaustive]

The files: every shape of benchmarks/shapes.py at each size (generated the same way each
time), examples/, tests/fixtures/, and each rule's VALID/INVALID examples, alone and padded
with unrelated code (so that the partial parse is exercised). ``--gradlint-src DIR`` lints
with the ``gradlint`` package in DIR (an older commit: ``git archive COMMIT gradlint
tests/fixtures | tar -x -C DIR``, its rule fixtures included); ``--exhaustive`` with every shortcut off. Then ``cmp`` the two outputs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PADDING = "".join(f"\n\ndef unrelated_{i}(value, scale=2):\n    return value * scale + {i}\n"
                  for i in range(10))


def files(sizes: list[int]) -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from shapes import SHAPES, generate, suffix

    found = [(f"{shape}-{lines}{suffix(shape)}", generate(shape, lines))
             for shape in SHAPES for lines in sizes]
    for directory in ("examples", "tests/fixtures"):
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix in (".py", ".ipynb") and path.is_file() and "rules" not in path.parts:
                found.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    from gradlint.rules import ALL_RULES

    for rule in ALL_RULES:
        for name, code in _examples(rule):
            found.append((f"{name}.py", code))
            found.append((f"{name}-padded.py", code + PADDING))
    return found


def _examples(rule) -> list[tuple[str, str]]:
    """(name, code) of every example of ``rule``: its class's and its fixtures (since the
    rules took their long tail to tests/fixtures/rules), or its class's alone before."""
    try:
        from gradlint.rules.examples import all_examples
    except ImportError:
        return [(f"{rule.code}-{index}", textwrap.dedent(example.code).lstrip("\n"))
                for index, example in enumerate([*rule.VALID, *rule.INVALID])]
    return [(example.id, example.code if example.path else
             textwrap.dedent(example.code).lstrip("\n")) for example in all_examples(rule)]


def findings_of(name: str, text: str, exhaustive: bool) -> list:
    from gradlint.engine.linter import LintOptions, lint_source

    if name.endswith(".ipynb"):
        from gradlint.engine.notebooks import lint_cells, read_notebook

        try:
            notebook = read_notebook(text)
        except Exception as error:  # noqa: BLE001 (a fixture of a broken notebook)
            return [f"unreadable: {type(error).__name__}"]
        return lint_cells(notebook.python_cells, name, LintOptions())
    return lint_source(text, name, LintOptions(), exhaustive=exhaustive).findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--gradlint-src", type=Path)
    parser.add_argument("--sizes", default="400,3000")
    parser.add_argument("--exhaustive", action="store_true")
    args = parser.parse_args()
    if args.gradlint_src:
        sys.path.insert(0, str(args.gradlint_src.resolve()))
    else:
        sys.path.insert(0, str(ROOT))
    total = 0
    with args.out.open("w", encoding="utf-8") as out:
        for name, text in files([int(s) for s in args.sizes.split(",") if s]):
            found = findings_of(name, text, args.exhaustive)
            total += len(found)
            rows = [dataclasses.asdict(f) if dataclasses.is_dataclass(f) else f for f in found]
            out.write(json.dumps({"file": name, "findings": rows}, ensure_ascii=False, default=str,
                                 sort_keys=True) + "\n")
    print(f"{total} findings written to {args.out}")


if __name__ == "__main__":
    main()
