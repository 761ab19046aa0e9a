"""Planning gradcheck runs: which target, with which inputs, as a worker request.

Inputs come, in this order, from: (1) an existing gradcheck call that uses the symbol,
in the same file or in the project's tests; (2) a `# gradlint: inputs=...` declaration;
(3) synthesis from the signature (in the worker). No torch here: requests are plain data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..analysis.source import SourceDecodeError
from ..runner import make_request
from .files import SKIPPED_DIRECTORIES, read_bytes, read_text, resolves_inside
from .linter import LintCache
from .targets import Target, find_targets

MAX_TEST_FILES = 400


@dataclass
class RunPlan:
    target: Target  # what the user asked for
    path: Path  # the file that defines it
    request: dict  # the worker request (without an id)
    inputs_source: str  # how the inputs were chosen, for the report
    display: str  # e.g. "ops.py::Square"
    key: str = ""  # cache key (sources + request)
    files: tuple[Path, ...] = field(default_factory=tuple)


def _target_request(target: Target) -> dict:
    if target.kind == "call_site":
        request: dict = {"kind": "call_site", "line": target.line, "end_line": target.end_line}
        if target.enclosing:
            request["enclosing"] = target.enclosing
        return request
    return {"kind": target.kind, "qualname": target.qualname}


def _uses(target: Target, symbol: str) -> bool:
    return target.kind == "call_site" and symbol in target.refs and target.importable


def test_files(root: Path, symbol: str, exclude: Path | None = None) -> Iterable[Path]:
    """Test modules under ``root`` that mention ``symbol`` (cheap text search)."""
    pattern = re.compile(rf"\b{re.escape(symbol)}\b")
    seen = 0
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRECTORIES and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(".py") or not (name.startswith("test_") or name.endswith("_test.py")
                                                or "tests" in Path(directory).parts):
                continue
            path = Path(directory) / name
            if exclude is not None and path.resolve() == exclude.resolve():
                continue
            if not resolves_inside(path, root):  # a symlink out of the project: never run
                continue
            seen += 1
            if seen > MAX_TEST_FILES:
                return
            try:
                text = read_bytes(path).decode("utf-8", "replace")
            except (OSError, SourceDecodeError):  # a FIFO, a device, a huge file
                continue
            if "gradcheck" in text and pattern.search(text):
                yield path


def plan(target: Target, path: Path, text: str, root: Path, *, cache: LintCache | None = None,
         options: dict | None = None, limits: dict | None = None, search_tests: bool = True,
         display: str | None = None) -> RunPlan:
    cache = cache or LintCache()
    name = display or f"{_relative(path, root)}::{target.qualname or f'line {target.line}'}"
    files: list[Path] = [path]
    texts = [text]
    if target.kind == "call_site":
        request = make_request(str(path), _target_request(target), options=options,
                               workspace_root=str(root), limits=limits)
        source = "the call's own inputs"
    else:
        request, source = _symbol_request(target, path, text, root, cache, options, limits,
                                          search_tests, files, texts)
    key_material = json.dumps({"texts": [hashlib.sha256(t.encode()).hexdigest() for t in texts],
                               "request": {k: v for k, v in request.items() if k != "id"}},
                              sort_keys=True, default=str)
    key = hashlib.sha256(key_material.encode()).hexdigest()[:32]
    return RunPlan(target, path, request, source, name, key, tuple(files))


def _symbol_request(target: Target, path: Path, text: str, root: Path, cache: LintCache,
                    options, limits, search_tests: bool, files: list, texts: list
                    ) -> tuple[dict, str]:
    symbol = target.qualname or target.name
    short = symbol.split(".")[-1]
    # (1) a gradcheck call that uses the symbol: here, then in the project's tests
    for call in find_targets(text, cache):
        if _uses(call, short):
            return (make_request(str(path), _target_request(call), options=options,
                                 workspace_root=str(root), limits=limits),
                    f"from the gradcheck call at line {call.line}")
    if search_tests:
        for test in test_files(root, short, exclude=path):
            try:
                test_text = read_text(test)
            except (OSError, SourceDecodeError):
                continue
            for call in find_targets(test_text, cache):
                if _uses(call, short):
                    files.append(test)
                    texts.append(test_text)
                    return (make_request(str(test), _target_request(call), options=options,
                                         workspace_root=str(root), limits=limits),
                            f"from the gradcheck call at {_relative(test, root)}:{call.line}")
    target_request = _target_request(target)
    # (2) declared inputs, (3) synthesis
    if target.declared_inputs:
        inputs = {"kind": "expression", "source": target.declared_inputs}
        return (make_request(str(path), target_request, inputs=inputs, options=options,
                             workspace_root=str(root), limits=limits),
                f"declared at line {target.declaration_line}")
    inputs = {"kind": "synthesize", "seed": (options or {}).get("seed", 0)}
    return (make_request(str(path), target_request, inputs=inputs, options=options,
                         workspace_root=str(root), limits=limits),
            "synthesized (declare them with `# gradlint: inputs=...`)")


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def runnable(targets: Iterable[Target]) -> list[Target]:
    """The targets a "run everything" uses: importable Functions and reachable calls."""
    return [t for t in targets if t.importable and t.kind in ("function_class", "call_site", "callable")]


class ResultCache:
    """Results by plan key and environment (interpreter + torch version), on disk."""

    def __init__(self, directory: Path | None):
        self.directory = directory

    def _file(self, key: str, environment: str) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(f"{key}:{environment}".encode()).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    def get(self, key: str, environment: str) -> dict[str, Any] | None:
        file = self._file(key, environment)
        if file is None or not file.is_file():
            return None
        try:
            return json.loads(file.read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, environment: str, result: dict[str, Any]) -> None:
        file = self._file(key, environment)
        if file is None or result.get("status") in ("cancelled", "timeout", "crash"):
            return
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            (file.parent / ".gitignore").write_text("*\n")
            file.write_text(json.dumps(result))
        except OSError:
            pass
