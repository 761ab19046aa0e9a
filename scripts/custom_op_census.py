#!/usr/bin/env python3
"""How much custom-op and torch.func code gradlint's models see in real code.

For torch's installed sources and the packages of ``real_code_accuracy.py`` (already
downloaded into its cache), reads every file gradlint would check that mentions
``torch.library`` or a ``torch.func`` transform (the rules' own text pre-checks), builds
the engine's view of it (``view_module``, the view the rules run on) and counts, with
gradlint's own models (``gradlint/analysis/custom_ops.py`` and ``func_transforms.py``):

* the custom ops (``custom_op`` / ``triton_op`` / ``define``), and those whose signature
  is known (parameters from the function's annotations or from a schema string);
* their registrations, and those resolved to a function of the module (a def or a
  lambda), by kind: backward / setup_context / fake / kernel+impl / vmap;
* the ``Function.apply`` calls run under a torch.func transform, found block by block
  in the blocks GL039-GL041 analyse.

Usage (the venv's python; nothing is downloaded: run real_code_accuracy.py first)::

    .venv/bin/python scripts/custom_op_census.py                 # torch + all packages
    .venv/bin/python scripts/custom_op_census.py --only quack-kernels --no-torch
    .venv/bin/python scripts/custom_op_census.py --paths some/dir  # any directories
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gradlint.analysis.custom_ops import MENTIONS_TORCH_LIBRARY, custom_ops
from gradlint.analysis.source import SourceDecodeError
from gradlint.engine.config import ConfigResolver
from gradlint.engine.files import discover, read_text
from gradlint.engine.linter import MAX_SOURCE_CHARS, LintCache, view_module
from gradlint.engine.prefilter import Code
from gradlint.rules.base import CODE_PATTERNS, MENTIONS_FUNC_TRANSFORM
from gradlint.rules.transforms.gl039_function_under_torch_func_without_setup_context import (
    FunctionUnderTorchFuncWithoutSetupContext as TransformRule)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_code_accuracy  # noqa: E402  (the package list and its cache layout)

KINDS = ("backward", "setup_context", "fake", "kernel+impl", "vmap")
_KIND = {"backward": "backward", "setup_context": "setup_context", "fake": "fake",
         "kernel": "kernel+impl", "impl": "kernel+impl", "vmap": "vmap"}


@dataclass
class Census:
    files: int = 0  # files that mention torch.library or a torch.func transform
    unreadable: int = 0
    files_with_ops: int = 0
    ops: Counter = field(default_factory=Counter)  # by style
    known_signature: int = 0
    registrations: Counter = field(default_factory=Counter)  # by kind
    resolved: Counter = field(default_factory=Counter)  # by kind
    transformed_applies: int = 0

    def add(self, other: Census) -> None:
        for name in ("files", "unreadable", "files_with_ops", "known_signature",
                     "transformed_applies"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.ops.update(other.ops)
        self.registrations.update(other.registrations)
        self.resolved.update(other.resolved)


def mentions(text: str) -> bool:
    """The engine parses a file only when it mentions torch; the custom-op and torch.func
    rules look only at files matching their pre-checks."""
    return "torch" in text and bool(
        MENTIONS_TORCH_LIBRARY.search(text) or MENTIONS_FUNC_TRANSFORM.search(text))


def census_of_text(text: str) -> Census:
    """The counts for one module's source (zero when it does not mention either API)."""
    census = Census()
    if len(text) > MAX_SOURCE_CHARS or not mentions(text):
        return census
    census.files = 1
    view = view_module(text, LintCache())
    ops = custom_ops(view.context)
    census.files_with_ops = int(bool(ops))
    for op in ops:
        census.ops[op.style] += 1
        census.known_signature += op.params is not None
        for registration in op.registrations:
            kind = _KIND[registration.kind]
            census.registrations[kind] += 1
            census.resolved[kind] += registration.function is not None
    seen: set[int] = set()
    aliases = view.aliases_of(TransformRule.requires_aliases_of)
    # the rule's pre-check (about code only when the rule says so)
    in_code = TransformRule.requires_in_code or TransformRule.requires in CODE_PATTERNS
    for position, (block, _) in enumerate(view.good):
        if Code(block.text).matches(TransformRule.requires, in_code) or any(a in block.text for a in aliases):
            for use in view.analysis(position).transformed_applies:
                seen.add(id(use.apply))
    census.transformed_applies = len(seen)
    return census


def census_of_tree(root: Path) -> Census:
    census = Census()
    for path in discover([root], ConfigResolver(root)):
        try:
            text = read_text(path)
        except (OSError, SourceDecodeError):
            census.unreadable += 1
            continue
        census.add(census_of_text(text))
    return census


def package_roots(cache: Path, only: set[str]) -> list[tuple[str, Path]]:
    roots = []
    for name, version, _ in real_code_accuracy.PACKAGES:
        if only and name.lower() not in only:
            continue
        downloads = cache / "downloads" / f"{name}-{version}"
        archives = real_code_accuracy.archives_in(downloads)
        if not archives:
            raise SystemExit(f"{name}=={version} is not in {cache}: run "
                             "scripts/real_code_accuracy.py first")
        roots.append((f"{name} {version}",
                      real_code_accuracy.extract(archives[0], cache, name, version)))
    return roots


def row(label: str, c: Census) -> str:
    ops = sum(c.ops.values())
    styles = " / ".join(str(c.ops[s]) for s in ("custom_op", "define", "triton_op"))
    resolved = sum(c.resolved.values())
    kinds = " / ".join(f"{c.resolved[k]}" for k in KINDS)
    return (f"| {label} | {c.files} | {c.files_with_ops} | {ops} ({styles}) | "
            f"{c.known_signature} | {resolved} of {sum(c.registrations.values())} ({kinds}) | "
            f"{c.transformed_applies} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gradlint-corpus"))
    parser.add_argument("--torch-path", type=Path, default=real_code_accuracy.DEFAULT_TORCH)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated package names")
    parser.add_argument("--no-packages", action="store_true")
    parser.add_argument("--paths", nargs="*", type=Path, default=[],
                        help="count these directories instead (one row each)")
    parser.add_argument("-v", "--verbose", action="store_true", help="one row per package too")
    args = parser.parse_args(argv)

    rows: list[tuple[str, Census]] = []
    if args.paths:
        rows = [(str(p), census_of_tree(p)) for p in args.paths]
    else:
        if not args.no_torch:
            rows.append(("torch 2.13 sources", census_of_tree(args.torch_path)))
        if not args.no_packages:
            only = {n.strip().lower() for n in args.only.split(",") if n.strip()}
            total = Census()
            for label, root in package_roots(args.cache, only):
                one = census_of_tree(root)
                if args.verbose:
                    rows.append((label, one))
                total.add(one)
            rows.append(("packages (corpus + quack-kernels)", total))

    print("| | files read | files with ops | ops (`custom_op` / `define` / `triton_op`) "
          "| ops with a known signature | registrations resolved to a def (backward / "
          "setup_context / fake / kernel+impl / vmap) | `Function.apply` under `torch.func` |")
    print("|---|---|---|---|---|---|---|")
    for label, census in rows:
        print(row(label, census))
    unreadable = sum(c.unreadable for _, c in rows)
    if unreadable:
        print(f"\n{unreadable} files could not be read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
