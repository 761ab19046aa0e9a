"""Planning gradcheck runs: which target, with which inputs, as worker requests.

Inputs come, in this order, from: (1) an existing gradcheck call that uses the symbol,
in the same file or in the project's tests (a parametrized test is called with its
cases); (2) a `# gradlint: inputs=...` declaration; (3) synthesis from the signature (in
the worker). A plan keeps them all: when one cannot give inputs (the call is never
reached, its test module cannot be imported), ``execute`` (execute.py) falls back to the
next. No torch here: requests are plain data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..analysis.source import SourceDecodeError
from ..engine.files import SKIPPED_DIRECTORIES, read_bytes, read_text, resolves_inside
from ..engine.import_roots import import_spec
from ..engine.linter import LintCache
from .protocol import make_request
from .targets import Target, find_targets

MAX_TEST_FILES = 400
MAX_CALL_SITES = 3  # call sites tried for one Function before declarations and synthesis


@dataclass(frozen=True)
class RunPlan:
    target: Target  # what the user asked for
    path: Path  # the file that defines it
    request: dict  # the worker request (without an id)
    inputs_source: str  # how the inputs were chosen, for the report
    display: str  # e.g. "ops.py::Square"
    key: str = ""  # cache key (sources + request)
    files: tuple[Path, ...] = field(default_factory=tuple)
    # the next input sources, tried in order when one cannot give inputs
    fallbacks: tuple[tuple[dict, str], ...] = ()


def _target_request(target: Target) -> dict:
    if target.kind == "call_site":
        request: dict = {"kind": "call_site", "line": target.line, "end_line": target.end_line}
        if target.enclosing:
            request["enclosing"] = target.enclosing
        if target.parametrize:
            request["parametrize"] = [[list(names), source] for names, source in target.parametrize]
        return request
    if target.kind == "custom_op":
        return _op_request(target)
    return {"kind": target.kind, "qualname": target.qualname}


def _op_request(target: Target) -> dict:
    """A custom op by its Python name and/or "ns::name", with the lines of its pieces (where
    the worker points a failure when it cannot find the Python function itself)."""
    request: dict = {"kind": "custom_op", "line": target.line}
    if target.qualname:
        request["qualname"] = target.qualname
    if target.op:
        request["op"] = target.op
    for key, line in (("op_line", target.forward_line), ("backward_line", target.backward_line),
                      ("setup_context_line", target.setup_context_line), ("fake_line", target.fake_line)):
        if line is not None:
            request[key] = line
    return request


def _request(path: Path, target: dict, root: Path, *, inputs=None, options=None, limits=None,
             explicit_root: Path | None = None, related: tuple[Path, ...] = ()) -> dict:
    spec = import_spec(path, workspace_root=root, explicit_root=explicit_root, related=related)
    return make_request(str(path), target, inputs=inputs, options=options, workspace_root=str(root),
                        limits=limits, module_name=spec.module or None, sys_path=list(spec.sys_path))


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
         display: str | None = None, explicit_root: Path | None = None) -> RunPlan:
    cache = cache or LintCache()
    shown = target.name if target.kind == "custom_op" else target.qualname or f"line {target.line}"
    name = display or f"{_relative(path, root)}::{shown}"
    files: list[Path] = [path]
    texts = [text]
    common = dict(options=options, limits=limits, explicit_root=explicit_root)
    if target.kind == "call_site":
        routes = [(_request(path, _target_request(target), root, **common), "the call's own inputs")]
    else:
        routes = _symbol_routes(target, path, text, root, cache, search_tests, files, texts, common)
    key_material = json.dumps({"texts": [hashlib.sha256(t.encode()).hexdigest() for t in texts],
                               "requests": [{k: v for k, v in r.items() if k != "id"} for r, _ in routes]},
                              sort_keys=True, default=str)
    key = hashlib.sha256(key_material.encode()).hexdigest()[:32]
    (request, source), *rest = routes
    return RunPlan(target, path, request, source, name, key, tuple(files), tuple(rest))


def _symbol_routes(target: Target, path: Path, text: str, root: Path, cache: LintCache,
                   search_tests: bool, files: list, texts: list, common: dict) -> list[tuple[dict, str]]:
    symbol = target.qualname or target.name
    short = symbol.split(".")[-1]
    routes: list[tuple[dict, str]] = []
    # a call that checks another class of the same name (another module's) gives no inputs
    checks = {"file": str(path), "qualname": symbol}
    # (1) gradcheck calls that use the symbol: here, then in the project's tests. Not for a
    # custom op: a call site runs gradcheck alone, and the op's schema gives exact inputs
    if target.kind == "custom_op":
        search_tests = False
    for call in (find_targets(text, cache) if target.kind != "custom_op" else ()):
        if _uses(call, short) and len(routes) < MAX_CALL_SITES:
            routes.append((_request(path, dict(_target_request(call), checks=checks), root, **common),
                           f"from the gradcheck call at line {call.line}"))
    if search_tests and len(routes) < MAX_CALL_SITES:
        for test in test_files(root, short, exclude=path):
            try:
                test_text = read_text(test)
            except (OSError, SourceDecodeError):
                continue
            calls = [c for c in find_targets(test_text, cache) if _uses(c, short)]
            if calls:
                files.append(test)
                texts.append(test_text)
            for call in calls[:MAX_CALL_SITES - len(routes)]:
                routes.append((_request(test, dict(_target_request(call), checks=checks), root, related=(path,),
                                        **common),
                               f"from the gradcheck call at {_relative(test, root)}:{call.line}"))
            if len(routes) >= MAX_CALL_SITES:
                break
    target_request = _target_request(target)
    # (2) declared inputs, (3) synthesis
    if target.declared_inputs:
        inputs = {"kind": "expression", "source": target.declared_inputs}
        routes.append((_request(path, target_request, root, inputs=inputs, **common),
                       f"declared at line {target.declaration_line}"))
    else:
        inputs = {"kind": "synthesize", "seed": (common.get("options") or {}).get("seed", 0)}
        routes.append((_request(path, target_request, root, inputs=inputs, **common),
                       "synthesized (declare them with `# gradlint: inputs=...`)"))
    return routes


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def runnable(targets: Iterable[Target]) -> list[Target]:
    """The targets a "run everything" uses: importable Functions and custom ops, declared
    functions, and reachable calls."""
    return [t for t in targets if t.importable and t.skip is None
            and t.kind in ("function_class", "call_site", "callable", "custom_op")]


def not_runnable(targets: Iterable[Target]) -> list[Target]:
    """Importable targets left out of "run everything", each with its ``skip`` reason."""
    return [t for t in targets if t.importable and t.skip is not None]
