"""Static findings as likely causes of a run that did not pass.

A run that fails (or warns, or cannot decide) says what it saw; the linter may already know
why. ``with_causes`` attaches to the run's result the findings on the same target — the lines
of its Function class, its function, its gradcheck call, or its custom op's definition and
registered functions (``Target.spans``) — as ``related_findings``: code, rule name, message and
range, the finding on the line the run points at first. Every report (``gradlint run``, the
editor's diagnostic, lens, hover and report view, ``pytest --gradlint``) shows them and the
editor links them.

The findings come from whoever has them: the editor's findings for an open document, else
``lint_file``, which lints a file the way ``gradlint check`` does (its configuration, its
suppressions), once per file. A passing run gets none: findings are not causes of a proof.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..analysis.source import SourceDecodeError
from ..engine.config import ConfigError, ConfigResolver
from ..engine.files import options_for, read_text
from ..engine.linter import LintCache, lint_source
from ..findings import Finding
from .prove import Proof
from .result import RunResult
from .targets import Target

MAX_CAUSES = 5


def related(target: Target, findings: Iterable[Finding], first_line: int | None = None
            ) -> tuple[Mapping[str, Any], ...]:
    """The findings on ``target``'s lines as ``related_findings`` entries; the one on
    ``first_line`` (the line the run points at) first, then by line."""
    spans = target.spans
    inside = [f for f in findings if f.cell is None and any(a <= f.line <= b for a, b in spans)]
    inside.sort(key=lambda f: (f.line != first_line, f.sort_key()))
    return tuple(_entry(f) for f in inside[:MAX_CAUSES])


def _entry(finding: Finding) -> Mapping[str, Any]:
    rng = finding.range
    return {"code": finding.code, "name": finding.name, "severity": finding.severity.value,
            "message": finding.message, "file": finding.path or None, "line": rng.start.line,
            "column": rng.start.column, "end_line": rng.end.line, "end_column": rng.end.column}


def wants_causes(result: RunResult) -> bool:
    """Runs whose report names likely causes: those that did not pass (cancelled ones say
    nothing about the code)."""
    return not (result.passed or result.cancelled)


def with_causes(proof: Proof, findings: Iterable[Finding]) -> Proof:
    """``proof`` with the findings on its target attached to its result (a passing or
    cancelled run is returned as it is)."""
    result = proof.result
    if not wants_causes(result):
        return proof
    location = result.location or {}
    same_file = location.get("file") and _same(location["file"], proof.plan.path)
    first = location.get("line") if same_file else None
    path = str(proof.plan.request["module"]["path"])  # as the run's own locations name it
    entries = tuple({**entry, "file": path} for entry in related(proof.plan.target, findings, first))
    return replace(proof, result=replace(result, related_findings=entries))


def _same(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b.resolve()
    except OSError:
        return False


class FileFindings:
    """The linter's findings per file, as ``gradlint check`` reports them (the file's
    configuration and suppressions), each file linted at most once."""

    def __init__(self, resolver: ConfigResolver, cache: LintCache | None = None):
        self.resolver = resolver
        self.cache = cache or LintCache()
        self._found: dict[Path, tuple[Finding, ...]] = {}

    def of(self, path: Path, text: str | None = None) -> tuple[Finding, ...]:
        """The findings in ``path`` (``text``: its contents, when the caller has them); none
        when it cannot be read or its configuration is invalid (the run's report still stands)."""
        key = path.resolve()
        found = self._found.get(key)
        if found is None:
            try:
                if text is None:
                    text = read_text(path)
                config = self.resolver.for_path(path)
                options = options_for(path, config, None, ())
            except (OSError, SourceDecodeError, ConfigError):
                found = ()
            else:
                found = tuple(lint_source(text, str(path), options, self.cache).findings)
            self._found[key] = found
        return found

    def attach(self, proofs: Iterable[Proof]) -> list[Proof]:
        """Each proof with its likely causes (files linted only for runs that did not pass)."""
        return [with_causes(proof, self.of(proof.plan.path)) if wants_causes(proof.result) else proof
                for proof in proofs]
