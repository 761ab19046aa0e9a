"""Run results on disk, by plan key and environment (interpreter + torch version).

A plan's key (plans.py) covers the text of every file it read and its requests; the
environment is the interpreter and torch version that ran it; and every key is mixed with the
text of the worker and runner code that produced the result (``checker_fingerprint``), so an
upgraded gradlint (or an edited checkout) never answers with an older gradlint's verdict. A
cache file is the result's JSON (docs/run-result-schema.md) with one more key, ``inputs_source``; it is written
atomically, and an entry that cannot be read is a miss. Transient outcomes (cancelled,
timed out, crashed) are not kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

from .result import RunResult

SOURCE_KEY = "inputs_source"  # stored next to the result's keys
_PACKAGE = Path(__file__).resolve().parent.parent  # gradlint/


@functools.lru_cache(maxsize=None)
def checker_fingerprint() -> str:
    """A digest of the code that decides a result: the worker package and the runner (read once)."""
    digest = hashlib.sha256()
    for folder in ("worker", "runner"):
        for file in sorted((_PACKAGE / folder).rglob("*.py")):
            try:
                digest.update(file.relative_to(_PACKAGE).as_posix().encode() + b"\0" + file.read_bytes())
            except OSError:
                digest.update(b"?")
    return digest.hexdigest()[:16]


class ResultCache:
    """Results by plan key and environment, in ``directory`` (None: a cache that keeps nothing)."""

    def __init__(self, directory: Path | None):
        self.directory = directory

    def _file(self, key: str, environment: str) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(f"{key}:{environment}:{checker_fingerprint()}".encode()).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    def get(self, key: str, environment: str) -> tuple[RunResult, str | None] | None:
        """The cached result and the input source it used, or None."""
        file = self._file(key, environment)
        if file is None or not file.is_file():
            return None
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        source = data.get(SOURCE_KEY)
        result = RunResult.from_json({k: v for k, v in data.items() if k != SOURCE_KEY})
        return result, source if isinstance(source, str) else None

    def put(self, key: str, environment: str, result: RunResult, inputs_source: str) -> None:
        file = self._file(key, environment)
        if file is None or result.transient:
            return
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            (file.parent / ".gitignore").write_text("*\n")
            handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(handle, "w") as out:
                    json.dump({**result.to_json(), SOURCE_KEY: inputs_source}, out)
                os.replace(temporary, file)
            except BaseException:
                os.unlink(temporary)
                raise
        except (OSError, TypeError, ValueError):
            pass
