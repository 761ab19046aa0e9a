#!/usr/bin/env python3
"""Measure gradlint on real published code.

Downloads a fixed list of PyPI packages (pinned to exact versions) that contain custom
``torch.autograd.Function`` subclasses, ``gradcheck``/``gradgradcheck`` calls and/or
``torch.library`` custom operators,
extracts them, runs ``gradlint check --format json --exit-zero`` on each, prints a table
(package, version, files, .py lines, seconds, findings by code and severity) and writes
every finding as JSON to ``--out``.

Nothing is installed and nothing downloaded is imported or run by gradlint: packages are
fetched with ``pip download --no-deps`` (the sdist, which usually ships the tests; the
wheel when there is no usable sdist) and only read.

Usage (stdlib only; run it with the venv's python so that gradlint is found)::

    .venv/bin/python scripts/real_code_accuracy.py                  # all packages
    .venv/bin/python scripts/real_code_accuracy.py --torch          # plus torch's sources
    .venv/bin/python scripts/real_code_accuracy.py --only entmax,kornia --out /tmp/f.json

Downloading an sdist makes pip prepare its metadata (it runs the build backend's
metadata hook). To keep torch out of that, pip is given a constraint that no torch
version satisfies (``PIP_CONSTRAINT``, which build environments inherit); an sdist
whose build needs torch is then retried without build isolation (the venv's torch is
used), and finally its wheel is downloaded instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

# (PyPI name, exact version, why it is here). Every one was checked to contain custom
# autograd Functions, gradcheck/gradgradcheck calls and/or custom ops in the files downloaded.
PACKAGES: list[tuple[str, str, str]] = [
    # name, version, what it has (F = custom autograd Function classes, gc = gradcheck calls)
    ("gpytorch", "1.15.2", "F in functions/, gc in test/"),
    ("linear_operator", "0.6.1", "F in functions/"),
    ("entmax", "1.3", "F (entmax15/sparsemax/bisection), gc in tests (wheel only)"),
    ("torchdiffeq", "0.2.5", "F (adjoint, event handling)"),
    ("torchsde", "0.2.6", "F (adjoint), gc"),
    ("kornia", "0.9.0", "F (few)"),
    ("kornia", "0.5.11", "~80 gc in test/ (the newest sdists no longer ship test/)"),
    ("timm", "1.0.31", "F in layers/activations_me.py"),
    ("fairscale", "0.4.13", "many F (pipe, checkpoint, moe, sync_batchnorm)"),
    ("bitsandbytes", "0.50.2", "F (MatMul8bitLt, MatMul4Bit) (wheel)"),
    ("pyro-ppl", "1.9.2", "F in ops/"),
    ("botorch", "0.18.1", "F"),
    ("torch-geometric", "2.8.1", "F"),
    ("sparsemax", "0.1.9", "F, gc"),
    ("e3nn", "0.6.0", "F, gc in tests"),
    ("geomloss", "0.3.1", "F"),
    ("pykeops", "2.3", "F (GenredAutograd, KernelSolve), gc in tests"),
    ("theseus-ai", "0.2.3", "many F"),
    ("pypose", "0.9.5", "~30 Lie-group F"),
    ("qpth", "0.0.18", "F (QPFunction)"),
    ("torch-harmonics", "0.9.3", "~20 F (wheel)"),
    ("liger-kernel", "0.8.5", "~110 Triton F"),
    ("deepspeed", "0.19.8", "~50 F (large)"),
    ("pytorch-wavelets", "1.3.0", "~13 F, ~20 gc in tests"),
    ("roma", "1.8.0", "F, ~10 gc in tests"),
    ("torchani", "2.9.0", "F, gc in tests"),
    ("cvxpylayers", "0.1.6", "F, gc in package tests"),
    ("cvxpylayers", "1.2.0", "F (torch/jax/mlx layers)"),
    ("fla-core", "0.6.0", "~100 Triton F (flash-linear-attention)"),
    ("xformers", "0.0.35", "~20 F"),
    ("transformers", "5.25.0", "~25 F in models/ (large)"),
    ("monai", "1.6.1", "F in networks/layers (wheel)"),
    ("torchao", "0.18.0", "~45 F (wheel)"),
    ("gsplat", "1.5.3", "F (wheel)"),
    ("nerfacc", "0.5.3", "F (wheel)"),
    ("torch-struct", "0.5", "F (semirings)"),
    ("torchkbnufft", "1.5.2", "F"),
    ("signatory", "1.2.6.1.9.0", "F"),
    # custom operators (torch.library); torchao, xformers, deepspeed, torch-harmonics and
    # bitsandbytes above have them too
    ("quack-kernels", "0.6.5", "~30 torch.library.custom_op (CuTe DSL kernels), register_fake"),
]

DEFAULT_TORCH = Path(__file__).resolve().parent.parent / ".venv/lib/python3.11/site-packages/torch"

# Mirrors gradlint/engine/files.py, so that the counts match what gradlint reads.
SKIPPED_DIRECTORIES = frozenset({
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "__pycache__",
    "node_modules", "build", "dist", "_build", "buck-out", ".eggs", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".gradlint_cache", "site-packages", ".ipynb_checkpoints",
    ".direnv", "__pypackages__",
})

CODES = ("GL000", "GL001", "GL002", "GL003", "GL004", "GL005")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip", ".whl")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def archives_in(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.name.endswith(ARCHIVE_SUFFIXES))


def pip_download(name: str, version: str, dest: Path, extra: list[str],
                 env: dict[str, str]) -> tuple[bool, str]:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
           "--no-deps", "-d", str(dest), *extra, f"{name}=={version}"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return proc.returncode == 0 and bool(archives_in(dest)), " | ".join(tail)


def configured_constraints() -> list[str]:
    """Constraint files from pip's configuration and environment."""
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                          capture_output=True, text=True)
    files = []
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.rsplit(".", 1)[-1] == "constraint":
            files += value.strip().strip("'\"").split()
    files += os.environ.get("PIP_CONSTRAINT", "").split()
    return list(dict.fromkeys(files))


def download(name: str, version: str, cache: Path) -> tuple[Path, str]:
    """The archive of ``name==version`` in the cache (downloaded when missing), and
    its kind: 'sdist' or 'wheel'."""
    dest = cache / "downloads" / f"{name}-{version}"
    found = archives_in(dest)
    if found:
        return found[0], ("wheel" if found[0].suffix == ".whl" else "sdist")
    dest.mkdir(parents=True, exist_ok=True)
    constraint = cache / "no-torch-constraints.txt"
    # No torch version satisfies this: an isolated build that needs torch fails
    # instead of downloading it.
    constraint.write_text("torch<0\n")
    # Keep the constraint files pip is already configured with (PIP_CONSTRAINT replaces
    # them otherwise); several files are separated by whitespace.
    env = dict(os.environ, PIP_CONSTRAINT=" ".join([*configured_constraints(), str(constraint)]))
    attempts = [
        ("sdist", ["--no-binary", ":all:"]),
        ("sdist", ["--no-binary", ":all:", "--no-build-isolation"]),
        ("wheel", ["--only-binary", ":all:"]),
    ]
    errors = []
    for kind, extra in attempts:
        ok, tail = pip_download(name, version, dest, extra, env)
        if ok:
            return archives_in(dest)[0], kind
        errors.append(f"{' '.join(extra)}: {tail}")
        for leftover in dest.iterdir():  # a partial download
            if leftover.is_file():
                leftover.unlink()
    raise RuntimeError(f"cannot download {name}=={version}:\n  " + "\n  ".join(errors))


def extract(archive: Path, cache: Path, name: str, version: str) -> Path:
    """Extract once; returns the directory holding the package's files."""
    target = cache / "extracted" / f"{name}-{version}"
    marker = target / ".extracted"
    if not marker.exists():
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        if archive.name.endswith((".zip", ".whl")):
            with zipfile.ZipFile(archive) as zf:
                for member in zf.infolist():
                    dest = (target / member.filename).resolve()
                    if not str(dest).startswith(str(target.resolve())):
                        raise RuntimeError(f"unsafe path in {archive}: {member.filename}")
                zf.extractall(target)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(target, filter="data")
        marker.write_text(archive.name + "\n")
    entries = [p for p in target.iterdir() if p.name != ".extracted"]
    # An sdist has one top-level directory; use it so that paths are short.
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return target


def count_sources(root: Path) -> tuple[int, int]:
    files = lines = 0
    for directory, subdirs, names in os.walk(root):
        base = Path(directory)
        subdirs[:] = sorted(
            s for s in subdirs
            if s not in SKIPPED_DIRECTORIES and not s.endswith(".egg-info")
            and not (base / s / "pyvenv.cfg").is_file())
        for n in names:
            if n.endswith((".py", ".pyi")):
                files += 1
                try:
                    with open(base / n, "rb") as fh:
                        lines += sum(1 for _ in fh)
                except OSError:
                    pass
    return files, lines


def gradlint_command() -> list[str]:
    exe = Path(sys.executable).with_name("gradlint")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "gradlint"]


def run_gradlint(root: Path, jobs: int | None) -> tuple[list[dict], float]:
    cmd = [*gradlint_command(), "check", "--format", "json", "--exit-zero", "--no-color"]
    if jobs:
        cmd += ["-j", str(jobs)]
    cmd.append(".")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"gradlint exited {proc.returncode} on {root}:\n{proc.stderr[-2000:]}")
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError as error:
        raise RuntimeError(f"gradlint printed no JSON on {root}: {error}\n{proc.stdout[:500]}")
    return findings, elapsed


def summarise(findings: list[dict]) -> dict[str, str]:
    by = Counter((f["code"], f["severity"]) for f in findings)
    cells = {}
    for code in CODES:
        parts = []
        for severity, letter in (("error", "e"), ("warning", "w"), ("info", "i"), ("hint", "h")):
            if by[(code, severity)]:
                parts.append(f"{by[(code, severity)]}{letter}")
        cells[code] = "".join(parts) or "-"
    other = sorted({c for c, _ in by} - set(CODES))
    for code in other:
        cells[code] = str(sum(n for (c, _), n in by.items() if c == code))
    return cells


def print_table(rows: list[dict]) -> None:
    codes = list(CODES) + sorted({c for r in rows for c in r["cells"]} - set(CODES))
    header = ["package", "version", "from", "files", ".py lines", "seconds", *codes]
    table = [header]
    for r in rows:
        table.append([r["package"], r["version"], r["kind"], str(r["files"]), str(r["lines"]),
                      f"{r['seconds']:.1f}", *(r["cells"].get(c, "-") for c in codes)])
    totals = ["TOTAL", "", "", str(sum(r["files"] for r in rows)),
              str(sum(r["lines"] for r in rows)), f"{sum(r['seconds'] for r in rows):.1f}"]
    all_findings = [f for r in rows for f in r["findings"]]
    cells = summarise(all_findings)
    totals += [cells.get(c, "-") for c in codes]
    table.append(totals)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        if i == len(table) - 1:
            print("  ".join("-" * w for w in widths))
        print("  ".join(cell.ljust(w) if j < 3 else cell.rjust(w)
                        for j, (cell, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("\ncells: <n>e = errors, <n>w = warnings, <n>i = infos, <n>h = hints, '-' = none")
    lines = sum(r["lines"] for r in rows)
    if lines:
        by_severity = Counter(f["severity"] for f in all_findings)
        rates = ", ".join(f"{severity} {1000 * by_severity[severity] / lines:.4f}"
                          for severity in ("error", "warning", "info", "hint"))
        print(f"findings per 1,000 lines ({lines:,} lines): {rates}; "
              f"all {1000 * len(all_findings) / lines:.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gradlint-corpus"),
                        help="download/extract directory (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/gradlint-corpus/findings.json"),
                        help="JSON file for all findings (default: %(default)s)")
    parser.add_argument("--torch", action="store_true",
                        help="also check torch's installed sources")
    parser.add_argument("--torch-path", type=Path, default=DEFAULT_TORCH,
                        help="torch sources for --torch (default: %(default)s)")
    parser.add_argument("--only", default="",
                        help="comma-separated package names to run (default: all)")
    parser.add_argument("--skip-packages", action="store_true",
                        help="run no package (with --torch: torch only)")
    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help="passed to gradlint -j (default: gradlint's own choice)")
    parser.add_argument("--list", action="store_true", help="print the package list and exit")
    args = parser.parse_args(argv)

    if args.list:
        for name, version, why in PACKAGES:
            print(f"{name}=={version}\t{why}")
        return 0

    wanted = {n.strip().lower() for n in args.only.split(",") if n.strip()}
    selected = [] if args.skip_packages else [
        p for p in PACKAGES if not wanted or p[0].lower() in wanted]
    unknown = wanted - {p[0].lower() for p in PACKAGES}
    if unknown:
        parser.error(f"unknown package(s): {', '.join(sorted(unknown))}")

    args.cache.mkdir(parents=True, exist_ok=True)
    rows, failures = [], []
    for name, version, _why in selected:
        try:
            archive, kind = download(name, version, args.cache)
            root = extract(archive, args.cache, name, version)
            files, lines = count_sources(root)
            log(f"checking {name}=={version} ({kind}, {files} files) ...")
            findings, seconds = run_gradlint(root, args.jobs)
        except Exception as error:  # report and go on with the others
            failures.append(f"{name}=={version}: {error}")
            log(f"FAILED {name}=={version}: {error}")
            continue
        for f in findings:
            f["package"], f["version"] = name, version
            f["file"] = str((root / f["path"]).resolve())
        rows.append(dict(package=name, version=version, kind=kind, files=files, lines=lines,
                         seconds=seconds, findings=findings, cells=summarise(findings)))

    if args.torch:
        root = args.torch_path
        version = "?"
        version_file = root / "version.py"
        if version_file.is_file():
            for line in version_file.read_text().splitlines():
                if line.startswith("__version__"):
                    version = line.split("=", 1)[1].strip().strip("'\"")
        files, lines = count_sources(root)
        log(f"checking torch {version} sources ({files} files) ...")
        try:
            findings, seconds = run_gradlint(root, args.jobs)
        except Exception as error:
            failures.append(f"torch: {error}")
        else:
            for f in findings:
                f["package"], f["version"] = "torch (installed)", version
                f["file"] = str((root / f["path"]).resolve())
            rows.append(dict(package="torch (installed)", version=version, kind="site-pkgs",
                             files=files, lines=lines, seconds=seconds, findings=findings,
                             cells=summarise(findings)))

    print_table(rows)
    all_findings = [f for r in rows for f in r["findings"]]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=args.out.parent, delete=False,
                                     suffix=".tmp") as fh:
        json.dump({
            "packages": [{k: r[k] for k in ("package", "version", "kind", "files", "lines",
                                            "seconds")} for r in rows],
            "failures": failures,
            "findings": all_findings,
        }, fh, indent=2)
    os.replace(fh.name, args.out)
    print(f"\n{len(all_findings)} findings written to {args.out}")
    for f in sorted(all_findings, key=lambda f: (f["package"], f["path"], f["line"])):
        print(f"{f['package']}: {f['path']}:{f['line']}:{f['column']}: {f['code']} "
              f"[{f['severity']}] {f['message']}")
    if failures:
        print("\nFAILURES:")
        for failure in failures:
            print("  " + failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
