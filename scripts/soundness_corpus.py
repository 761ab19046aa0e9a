#!/usr/bin/env python3
"""Real-code sets of issue 24: published packages this project had not used before.

Three pinned splits, fetched from PyPI (the sdist, which usually ships the tests; the wheel
when there is none) into ``--cache-dir`` and only read:

- ``tune``: the rules were tuned on these;
- ``held-out``: measured once, at the end, never looked at while tuning;
- ``held-out-2``: a second held-out set (2026-12-06), once both above were spent: releases
  named nowhere in ``scripts/*.py`` or ``benchmarks/*.md`` when chosen, measured once;
- ``held-out-3``: a third held-out set (2026-12-06), chosen the same way once ``held-out-2``
  was spent, measured once.

Subcommands::

    .venv/bin/python scripts/soundness_corpus.py fetch   --cache-dir DIR [--split tune]
    .venv/bin/python scripts/soundness_corpus.py lint    --cache-dir DIR --split tune --out F.json
    .venv/bin/python scripts/soundness_corpus.py fixes   --cache-dir DIR --split tune
    .venv/bin/python scripts/soundness_corpus.py list

``lint`` prints the findings by severity and writes them as JSON. ``fixes`` copies each
package, runs ``gradlint check --fix --unsafe-fixes`` on the copy, and checks each fixed
file: it still compiles, the fixed findings are gone and no new finding appeared (running
the fixed code is ``scripts/dynamic_oracle.py --fixed``).

The downloading itself is ``real_code_accuracy.download``/``extract`` (torch kept out
of sdist metadata builds).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_code_accuracy as corpus  # noqa: E402

# (PyPI name, exact version, split, what it has). F = custom autograd Function classes,
# gc = gradcheck/gradgradcheck calls, ops = torch.library custom ops; counted with grep
# in the downloaded files.
PACKAGES: list[tuple[str, str, str, str]] = [
    ("xitorch", "0.5.1", "tune", "7 F, 67 gc in tests (gradcheck/gradgradcheck helpers)"),
    ("norse", "1.1.0", "tune", "19 F (surrogate gradients), 71 test files"),
    ("brevitas", "0.13.4", "tune", "26 F (straight-through estimators), 1 custom op"),
    ("optimum-quanto", "0.2.7", "tune", "9 F, 23 custom ops, 54 test files"),
    ("torchsparsegradutils", "0.2.7", "tune", "6 F (sparse solves), 28 test files"),
    ("memcnn", "1.5.2", "tune", "9 F (invertible couplings), 25 test files"),
    ("pytorch-finufft", "0.1.0", "tune", "2 F, 6 gc in tests"),
    ("torchlpc", "0.7.2", "tune", "2 F, 4 gc in tests"),
    ("deepinv", "0.5.0", "tune", "14 F, 23 test files"),
    ("tad-mctc", "0.11.3", "tune", "10 F, 7 gc"),
    ("torchopt", "0.7.3", "tune", "7 F (implicit differentiation), 16 test files"),
    ("snntorch", "1.0.0", "tune", "20 F (spike surrogates)"),
    ("cola-ml", "0.0.7", "tune", "1 F, 26 test files"),
    ("torchgeometry", "0.1.2", "held-out", "55 gc in tests"),
    ("spikingjelly", "2.0.0", "held-out", "37 F, 14 custom ops"),
    ("torch-interpol", "0.2.6", "held-out", "6 F, 4 gc"),
    ("torchcomp", "0.2.1", "held-out", "1 F, 2 gc"),
    ("pylops", "2.8.0", "held-out", "1 F, 1 gc, 63 test files"),
    ("qiskit-machine-learning", "0.9.1", "held-out", "1 F, 1 gc, 80 test files"),
    ("dxtb", "0.4.0", "held-out", "8 F"),
    ("mrpro", "0.261015", "held-out", "5 F"),
    ("neuraloperator", "2.0.0", "held-out", "4 F, 42 test files"),
    ("hqq", "0.2.8.post1", "held-out", "3 F, 2 custom ops"),
    ("pytorch-tabnet", "4.1.0", "held-out", "4 F (sparsemax/entmax copies)"),
    ("diffsptk", "4.0.1", "held-out", "3 F"),
    ("philtorch", "0.7.0", "held-out-2", "5 F, 13 custom ops (8 custom_op, 5 C++), 19 gc, 35 test files"),
    ("jitfields", "0.1.0", "held-out-2", "15 F, 5 gc, 15 test files"),
    ("natten", "0.21.7", "held-out-2", "10 F, 16 custom ops (custom_op under an alias)"),
    ("pyepo", "2.2.7", "held-out-2", "8 F (perturbed/SPO+ optimisation layers), 20 test files"),
    ("mlstm-kernels", "2.0.6", "held-out-2", "18 F (Triton/torch mLSTM kernels)"),
    ("megablocks", "0.10.0", "held-out-2", "18 F (grouped GEMM, MoE permutes)"),
    ("pysiglib", "4.0.0", "held-out-2", "20 F (signature kernels) (wheel)"),
    ("rockpool", "3.1.0", "held-out-2", "9 F (spiking surrogates)"),
    ("mri-nufft", "1.5.1", "held-out-2", "2 F (NUFFT autodiff), 25 test files"),
    ("qtorch", "0.3.0", "held-out-2", "3 F (low-precision quantisers), 6 test files"),
    ("torch-householder", "1.0.1", "held-out-2", "2 F, 5 test files"),
    ("torch-points-kernels", "0.7.0", "held-out-2", "4 F (point-cloud kernels)"),
    ("torchdeq", "0.1.0", "held-out-2", "2 F (implicit layers)"),
    ("torchgpipe", "0.0.7", "held-out-2", "10 F (pipeline copies, checkpoint) (wheel)"),
    ("deepwave", "0.1.0", "held-out-3", "12 F (seismic wave propagation)"),
    ("torch-fem", "0.14.0", "held-out-3", "3 F (sparse solves, FEM), 21 test files"),
    ("torch-pme", "0.5.0", "held-out-3", "1 F (particle-mesh Ewald)"),
    ("neuromancer", "1.5.6", "held-out-3", "10 F (differentiable optimisation/control), 23 test files"),
    ("mpc", "0.0.6", "held-out-3", "2 F (differentiable MPC, LQR)"),
    ("fairchem-core", "2.24.0", "held-out-3", "36 F, 12 custom-op calls (equivariant atomistic nets) (wheel)"),
    ("openequivariance", "0.7.0", "held-out-3", "20 custom-op calls (equivariant tensor products)"),
    ("torchmd-net", "3.1.0", "held-out-3", "1 F, 67 custom-op calls (neighbour lists, molecular nets)"),
    ("nncf", "3.4.0", "held-out-3", "8 F (quantisation/pruning) (wheel)"),
    ("aqlm", "1.1.7", "held-out-3", "1 F, 18 custom-op calls (additive quantisation kernels)"),
    ("ring-flash-attn", "0.1.8", "held-out-3", "6 F (ring/zigzag attention), 8 test files"),
    ("normflows", "1.7.3", "held-out-3", "1 F (normalising flows), 24 test files"),
    ("torchode", "1.0.1", "held-out-3", "1 F (ODE solvers)"),
    ("native-sparse-attention-pytorch", "0.2.3", "held-out-3", "1 F (sparse attention, pure-PyTorch path)"),
]
SPLITS = ("tune", "held-out", "held-out-2", "held-out-3", "all")
SEVERITIES = ("error", "warning", "info", "hint")


def selected(split: str, only: str = "") -> list[tuple[str, str, str, str]]:
    wanted = {n.strip().lower() for n in only.split(",") if n.strip()}
    chosen = [p for p in PACKAGES if split == "all" or p[2] == split]
    if wanted:
        unknown = wanted - {p[0].lower() for p in PACKAGES}
        if unknown:
            raise SystemExit(f"unknown package(s): {', '.join(sorted(unknown))}")
        chosen = [p for p in chosen if p[0].lower() in wanted]
    return chosen


def fetch(cache: Path, packages) -> list[tuple[str, str, str, Path]]:
    """(name, version, kind, extracted root) of each package; failures are logged and
    left out."""
    roots = []
    for name, version, _split, _why in packages:
        try:
            archive, kind = corpus.download(name, version, cache)
            roots.append((name, version, kind, corpus.extract(archive, cache, name, version)))
        except Exception as error:  # report and go on
            corpus.log(f"FAILED {name}=={version}: {error}")
    return roots


def lint(cache: Path, packages, out: Path | None, jobs: int | None) -> dict:
    rows, findings = [], []
    for name, version, kind, root in fetch(cache, packages):
        files, lines = corpus.count_sources(root)
        corpus.log(f"checking {name}=={version} ({kind}, {files} files) ...")
        found, seconds = corpus.run_gradlint(root, jobs)
        for f in found:
            f["package"], f["version"] = name, version
            f["file"] = str((root / f["path"]).resolve())
        findings += found
        by = Counter(f["severity"] for f in found)
        rows.append(dict(package=name, version=version, kind=kind, files=files, lines=lines,
                         seconds=round(seconds, 1), **{s: by[s] for s in SEVERITIES}))
    result = {"packages": rows, "findings": findings}
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
    return result


def print_lint(result: dict) -> None:
    rows = result["packages"]
    print(f"{'package':<26}{'version':<14}{'files':>6}{'lines':>9}" +
          "".join(f"{s:>9}" for s in SEVERITIES))
    for r in rows:
        print(f"{r['package']:<26}{r['version']:<14}{r['files']:>6}{r['lines']:>9}" +
              "".join(f"{r[s]:>9}" for s in SEVERITIES))
    total_lines = sum(r["lines"] for r in rows)
    print(f"{'TOTAL':<40}{sum(r['files'] for r in rows):>6}{total_lines:>9}" +
          "".join(f"{sum(r[s] for r in rows):>9}" for s in SEVERITIES))
    by_code = Counter((f["code"], f["severity"]) for f in result["findings"])
    print("\nby code: " + ", ".join(f"{c} {s} {n}" for (c, s), n in sorted(by_code.items())))
    for f in sorted(result["findings"], key=lambda f: (f["package"], f["path"], f["line"])):
        print(f"{f['package']}: {f['path']}:{f['line']}:{f['column']}: {f['code']} "
              f"[{f['severity']}] {f['message']}")


def _double_star_calls(source: bytes) -> Counter:
    found: Counter = Counter()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            func = ast.unparse(node.func)
            for k in node.keywords:
                if k.arg is not None:
                    found[(func, k.arg)] += 1
    return found


def keywords_beside_double_star(old: bytes, new: bytes) -> list[tuple[int, str, str]]:
    """Keywords a fix added to calls that also pass ``**mapping``: (line, callee, keyword)."""
    added = _double_star_calls(new) - _double_star_calls(old)
    found = []
    for node in ast.walk(ast.parse(new)):
        if isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            func = ast.unparse(node.func)
            for k in node.keywords:
                if k.arg is not None and added[(func, k.arg)]:
                    added[(func, k.arg)] -= 1
                    found.append((node.lineno, func, k.arg))
    return found


def check_fixes(cache: Path, packages, jobs: int | None) -> list[dict]:
    """Apply every fix (safe and unsafe) to a copy of each package; report per fixed file
    whether it compiles, which findings went away and which appeared."""
    reports = []
    gradlint = corpus.gradlint_command()
    for name, version, _kind, root in fetch(cache, packages):
        with tempfile.TemporaryDirectory(prefix=f"fixes-{name}-") as tmp:
            copy = Path(tmp) / root.name
            shutil.copytree(root, copy, symlinks=True)
            before, _ = corpus.run_gradlint(copy, jobs)
            fixable = [f for f in before if f.get("fix")]
            if not fixable:
                reports.append(dict(package=name, version=version, fixed_files=0, problems=[]))
                continue
            originals = {f["path"]: (copy / f["path"]).read_bytes() for f in fixable}
            subprocess.run([*gradlint, "check", "--fix", "--unsafe-fixes", "--exit-zero",
                            "--no-cache", "."], cwd=copy, capture_output=True)
            after, _ = corpus.run_gradlint(copy, jobs)
            problems = []
            for path, old in originals.items():
                new = (copy / path).read_bytes()
                if new == old:
                    problems.append(f"{path}: a fix was offered but the file is unchanged")
                    continue
                try:
                    compile(new, str(copy / path), "exec", dont_inherit=True)
                except (SyntaxError, ValueError) as error:
                    problems.append(f"{path}: the fixed file does not compile: {error}")
                    continue
                for line, func, keyword in keywords_beside_double_star(old, new):
                    problems.append(f"{path}:{line}: the fix adds `{keyword}=` to a call of "
                                    f"`{func}` that also passes **kwargs (TypeError if they "
                                    f"hold it too)")
            old_keys = Counter((f["path"], f["code"], f["message"]) for f in before)
            for f in after:
                key = (f["path"], f["code"], f["message"])
                if old_keys[key]:
                    old_keys[key] -= 1
                    if f.get("fix") and key in {(g["path"], g["code"], g["message"]) for g in fixable}:
                        problems.append(f"{f['path']}:{f['line']}: {f['code']} still there after its fix")
                else:
                    problems.append(f"{f['path']}:{f['line']}: new finding after --fix: "
                                    f"{f['code']} {f['message']}")
            reports.append(dict(package=name, version=version, fixed_files=len(originals),
                                fixes=len(fixable), problems=problems))
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("fetch", "lint", "fixes", "list"))
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/gradlint-soundness"))
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--only", default="", help="comma-separated package names")
    parser.add_argument("--out", type=Path, help="lint: JSON file for the findings")
    parser.add_argument("-j", "--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    packages = selected(args.split, args.only)
    if args.command == "list":
        for name, version, split, why in packages:
            print(f"{name}=={version}\t{split}\t{why}")
        return 0
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    if args.command == "fetch":
        roots = fetch(args.cache_dir, packages)
        for name, version, kind, root in roots:
            print(f"{name}=={version}\t{kind}\t{root}")
        return 0 if len(roots) == len(packages) else 1
    if args.command == "lint":
        print_lint(lint(args.cache_dir, packages, args.out, args.jobs))
        return 0
    reports = check_fixes(args.cache_dir, packages, args.jobs)
    bad = 0
    for r in reports:
        print(f"{r['package']}=={r['version']}: {r.get('fixes', 0)} fixes in "
              f"{r['fixed_files']} files, {len(r['problems'])} problems")
        for p in r["problems"]:
            print("   " + p)
        bad += len(r["problems"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
