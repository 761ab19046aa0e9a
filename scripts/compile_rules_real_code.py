#!/usr/bin/env python3
"""GL045-GL047 (the torch.compile triggers) on real published code: every finding, per package.

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache-dir", type=Path, required=True)
    ap.add_argument("--split", choices=("tune", "held-out", "all"), default="all")
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
