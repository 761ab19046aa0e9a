#!/usr/bin/env python3
"""GL045-GL047 (the torch.compile triggers) on real published code: every finding, per package;
with ``--run``, also ``options.compile`` on the real setup_context Functions listed in RUN.

Pinned PyPI releases are downloaded and extracted into a cache outside the repository (by
``real_code_accuracy.py``'s code; nothing is committed), then linted with only these rules.
Each finding is printed for review: a finding on code that is right under torch.compile is a
false alarm. ``TUNE`` packages were looked at while writing the rules; ``HELD_OUT`` ones
only once, at the end.

    .venv/bin/python scripts/compile_rules_real_code.py --cache-dir /work/cache/NAME [--split tune|held-out]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_code_accuracy import download, extract  # noqa: E402

TUNE = [("snntorch", "1.0.0"), ("compressai", "1.2.8")]
HELD_OUT = [("spikingjelly", "0.0.0.0.14"), ("norse", "1.1.0"), ("brevitas", "0.13.4")]
CODES = "GL045,GL046,GL047"
# (package, version, file, Function, what importing it needs besides torch): the setup_context
# Functions of the packages above (the ones torch.func, and so a compiled torch.func.grad, takes)
RUN = [("norse", "1.1.0", "norse/torch/functional/superspike.py", "SuperSpike",
        ["numpy==2.2.6", "nir==1.0.8", "nirtorch==2.6", "h5py==3.16.0"])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache-dir", type=Path, required=True)
    ap.add_argument("--split", choices=("tune", "held-out", "all"), default="all")
    ap.add_argument("--run", action="store_true", help="also run the compile checks on the RUN Functions")
    args = ap.parse_args(argv)
    packages = {"tune": TUNE, "held-out": HELD_OUT, "all": TUNE + HELD_OUT}[args.split]
    gradlint = Path(sys.executable).parent / "gradlint"
    total = 0
    for name, version in packages:
        archive, _ = download(name, version, args.cache_dir)
        root = extract(archive, args.cache_dir, name, version)
        files = sum(1 for _ in root.rglob("*.py"))
        out = subprocess.run([str(gradlint), "check", "--select", CODES, str(root)],
                             capture_output=True, text=True).stdout
        findings = [ln for ln in out.splitlines() if " GL04" in ln]
        total += len(findings)
        print("%s==%s: %d Python files, %d findings" % (name, version, files, len(findings)))
        for ln in findings:
            print("   ", ln.replace(str(root) + "/", ""))
    print("total findings: %d" % total)
    if args.run:
        run_compile(args.cache_dir)
    return 0


def run_compile(cache: Path) -> None:
    """``options.compile`` (aot_eager) on each RUN Function, in a worker whose imports see the
    package and its dependencies (installed with pip --target into the cache)."""
    import os

    from gradlint.runner import make_request, run_sync

    for name, version, file, cls, needs in RUN:
        root = extract(download(name, version, cache)[0], cache, name, version)
        package = file.split("/")[0]
        root = min((p.parent.parent for p in root.rglob("__init__.py") if p.parent.name == package),
                   key=lambda p: len(p.parts))
        deps = cache / "deps" / f"{name}-{version}"
        if not deps.exists():
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(deps),
                            *needs], check=True)
        request = make_request(str(root / file), {"kind": "function_class", "qualname": cls},
                               workspace_root=str(root), options={"compile": ["aot_eager"], "draws": 1})
        [result] = run_sync([request], python=sys.executable, cwd=str(root), timeout=600,
                            env=dict(os.environ, PYTHONPATH=str(deps)))
        print("%s==%s %s::%s: %s/%s: %s" % (name, version, file, cls, result["status"], result["verdict"],
                                             result["summary"]))


if __name__ == "__main__":
    raise SystemExit(main())
