"""The persistent cache of `gradlint check`: a file's findings, kept between runs.

An entry is keyed by the file's bytes, gradlint's own code (its version and a digest of its
sources, so an edited checkout never reuses old results), the libcst and Python versions,
and the effective options of the file (rules, severities, default dtype). One entry per
file path, in ``<directory>/check/xx/<digest of the path>.json``; an entry whose key differs
(stale) or that cannot be read, parsed and verified (corrupt) is ignored and rewritten.
Writes go to a temporary file renamed over the entry, so concurrent runs never leave a
partial entry: readers see the old entry or the new one.

Nothing here imports libcst: a re-run answered from the cache never parses.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

from .. import __version__
from ..findings import Applicability, Edit, Finding, Fix, Range, Severity

FORMAT = 2
MARKER = "CACHEDIR.TAG"
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This directory is gradlint's cache (`gradlint clean` removes it).\n")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """gradlint's identity for caching: version, sources, libcst and Python versions."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{__version__}|{sys.version}|{FORMAT}".encode())
    package = Path(__file__).resolve().parent.parent
    for directory, subdirs, files in os.walk(package):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, package).encode())
                with open(path, "rb") as handle:
                    digest.update(handle.read())
    spec = importlib.util.find_spec("libcst")
    if spec is not None and spec.origin:
        version_file = os.path.join(os.path.dirname(spec.origin), "_version.py")
        try:
            with open(version_file, "rb") as handle:
                digest.update(handle.read())
        except OSError:
            digest.update(spec.origin.encode())
    return digest.hexdigest()


def entry_key(data: bytes, options_key: str) -> str:
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    return f"{code_fingerprint()}:{options_key}:{digest}"


class CheckCache:
    def __init__(self, directory: Path):
        self.directory = directory
        self.entries = directory / "check"
        self._prepared = False
        self.writable = True

    def _entry(self, path: Path) -> Path:
        name = hashlib.blake2b(os.fsencode(os.path.abspath(path)), digest_size=16).hexdigest()
        return self.entries / name[:2] / f"{name[2:]}.json"

    def get(self, path: Path, key: str, display: str,
            fixable: str | None = None) -> tuple[list[Finding], int] | None:
        """The findings of an entry for ``key``, and, when ``fixable`` names a kind of fixes
        ("safe" or "unsafe"), how many of them `--fix` would apply (an entry that did not
        count them is a miss)."""
        try:
            with open(self._entry(path), "rb") as handle:
                raw = handle.read()
        except OSError:
            return None
        try:
            entry = json.loads(raw)
            if entry.get("format") != FORMAT or entry.get("key") != key:
                return None  # stale
            payload = entry["findings"]
            counts = entry.get("fixable") or {}
            if entry.get("check") != _checksum([payload, counts]):
                return None  # damaged
            if fixable is not None and fixable not in counts:
                return None  # not counted by the run that wrote it
            return ([finding_from_json(item, display) for item in payload],
                    int(counts[fixable]) if fixable is not None else 0)
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):
            return None  # corrupt: never trusted

    def put(self, path: Path, key: str, findings: list[Finding], fixable: dict[str, int] | None = None) -> None:
        if not self.writable:
            return
        payload = [finding_to_json(f) for f in findings]
        counts = fixable or {}
        entry = {"format": FORMAT, "key": key, "findings": payload, "fixable": counts,
                 "check": _checksum([payload, counts])}
        import tempfile  # (only runs that write pay for importing it)

        target = self._entry(path)
        try:
            self._prepare()
            target.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                    json.dump(entry, handle, separators=(",", ":"))
                os.replace(temporary, target)
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
                raise
        except OSError:
            self.writable = False  # a read-only or full disk: go on without writing

    def _prepare(self) -> None:
        if self._prepared:
            return
        mark(self.directory)
        self._prepared = True


def mark(directory: Path) -> None:
    """Create a cache directory, tagged as gradlint's (CACHEDIR.TAG: backup tools skip it,
    `gradlint clean` removes it) and ignored by git. OSError when it cannot be written."""
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / MARKER
    if not marker.exists():
        marker.write_text(_TAG)
        (directory / ".gitignore").write_text("# created by gradlint\n*\n")


def is_cache_directory(directory: Path) -> bool:
    try:
        return (directory / MARKER).read_text().startswith(_TAG.splitlines()[0])
    except OSError:
        return False


def clean(directory: Path) -> bool:
    """Remove a gradlint cache directory (only one gradlint made). Returns whether it did."""
    if not is_cache_directory(directory):
        return False
    import shutil

    shutil.rmtree(directory, ignore_errors=True)
    return True


def _checksum(payload) -> str:
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _range_json(rng: Range) -> list[int]:
    return [rng.start.line, rng.start.column, rng.end.line, rng.end.column]


def _range(value: list) -> Range:
    line, column, end_line, end_column = (int(v) for v in value)
    return Range.of(line, column, end_line, end_column)


def finding_to_json(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        fix = {"title": f.fix.title, "applicability": f.fix.applicability.value,
               "edits": [[_range_json(e.range), e.new_text, e.cell] for e in f.fix.edits]}
    return {"code": f.code, "name": f.name, "severity": f.severity.value, "message": f.message,
            "range": _range_json(f.range), "fix": fix, "statement_line": f.statement_line,
            "cell": f.cell}


def finding_from_json(item: dict, path: str) -> Finding:
    fix = None
    if item["fix"] is not None:
        raw = item["fix"]
        fix = Fix(str(raw["title"]), Applicability(raw["applicability"]),
                  tuple(Edit(_range(rng), str(text), _cell(cell)) for rng, text, cell in raw["edits"]))
    statement_line = item["statement_line"]
    return Finding(str(item["code"]), str(item["name"]), Severity(item["severity"]),
                   str(item["message"]), _range(item["range"]), fix,
                   None if statement_line is None else int(statement_line), path,
                   _cell(item["cell"]))


def _cell(value) -> int | None:
    return None if value is None else int(value)
