"""`pytest --gradlint`: the files, the items, and running one item.

A ``GradlintFile`` collects the targets ``gradlint run`` would check in a file (autograd
Functions, torch.library custom ops, declared functions; gradcheck calls are the project's
own tests already) as ``GradlintItem`` test items; one ``gradlint run`` leaves out (an
abstract base Function, an op whose kernel needs a GPU) is skipped with the reason. An
item plans its run like ``gradlint run`` does (gradlint/runner/plans.py: inputs from a
gradcheck call in the project's tests, a declaration, or synthesized, falling back in
that order) and proves it like ``gradlint run`` does (gradlint/runner/prove.py: a cached
result while the sources are unchanged, a run shared by identical plans), running requests
in-process (gradlint/worker/inprocess.py). Items are ``pytest.Function`` items, so ``-k``,
``-x``, ``--lf``, markers, fixtures and xdist treat them like any test.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..analysis.source import SourceDecodeError, decode_source
from ..engine.config import ConfigResolver
from ..engine.linter import LintCache
from ..runner.cache import ResultCache
from ..runner.causes import FileFindings, wants_causes, with_causes
from ..runner.plans import plan
from ..runner.prove import Prover
from ..runner.result import RunResult
from ..runner.run_options import layered
from ..runner.targets import Target, find_targets
from .report import GradientReport

_STATE = pytest.StashKey["_Session"]()
CACHED_NOTE = ("the result of an earlier run of the same sources and options, from .gradlint_cache/ "
               "(--gradlint-no-cache runs it again)")


class _Session:
    """What every file and item of one pytest run shares."""

    def __init__(self, config: pytest.Config):
        self.cache = LintCache()
        self.resolver = ConfigResolver(config.rootpath)
        self.rootpath = config.rootpath
        self.discovered = None  # the packages added to what pytest was pointed at
        self.items = 0  # gradient-check items collected
        self.explicit = False  # pytest was given paths on the command line
        self.use_cache = not config.getoption("gradlint_no_cache")
        self._prover: Prover | None = None
        self.findings = FileFindings(self.resolver, self.cache)  # each file linted when a check fails

    @property
    def prover(self) -> Prover:
        """One for the session: its runs are in this process, with this torch (the worker's
        results differ: they may run other tests for inputs, and import modules afresh)."""
        if self._prover is None:
            import torch

            directory = self.rootpath / ".gradlint_cache" / "runs" if self.use_cache else None
            self._prover = Prover(ResultCache(directory), f"{sys.executable}:{torch.__version__}:in-process")
        return self._prover

    def relative(self, path: str) -> str:
        if not path:
            return path
        try:
            relative = os.path.relpath(path, self.rootpath)
        except ValueError:
            return path
        return path if relative.startswith("..") else relative


def _session(config: pytest.Config) -> _Session:
    state = config.stash.get(_STATE, None)
    if state is None:
        state = config.stash[_STATE] = _Session(config)
    return state


class GradientCheckWarning(UserWarning):
    """The gradients match, with a warning (e.g. ⚠ not twice differentiable)."""


class GradientCheckFailed(Exception):
    """An item's checks failed; ``repr_failure`` shows the report."""

    def __init__(self, report: GradientReport):
        super().__init__(report.summary)
        self.report = report


@dataclass(frozen=True)
class Crash:
    """Where and what, in one line: what pytest's short summary (``FAILED ... - <message>``),
    ``--tb=line`` and JUnit XML's ``message`` read from a failure (its ``reprcrash``)."""

    path: str
    lineno: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.message}"


@dataclass(frozen=True)
class FailureRepr:
    """A failed item's report. A plain string would do for the FAILURES section, but pytest
    repeats a string whole in the short summary on CI (``CI`` set) or with ``-vv``; with a
    ``reprcrash`` the summary line is the report's one-line headline everywhere."""

    text: str
    reprcrash: Crash

    def toterminal(self, tw) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


class GradlintFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            text = decode_source(self.path.read_bytes())
        except (OSError, SourceDecodeError):
            return
        if "torch" not in text:
            return
        state = _session(self.config)
        for target in find_targets(text, state.cache):
            if not target.importable or target.kind == "call_site":
                continue
            state.items += 1
            yield GradlintItem.from_parent(self, name=_item_name(target), callobj=_check,
                                           target=target, text=text)


def package_files(session: pytest.Session) -> list[GradlintFile]:
    """The project's package files beyond what pytest was pointed at, as collectors, when
    the paths came from ``testpaths`` or the invocation directory (not named by the user)."""
    from .discovery import discover

    config = session.config
    state = _session(config)
    state.explicit = config.args_source == pytest.Config.ArgsSource.ARGS
    if state.explicit:
        return []
    args = [Path(arg.split("::")[0]) for arg in config.args]
    args = [arg if arg.is_absolute() else config.invocation_params.dir / arg for arg in args]
    state.discovered = discover(config.rootpath, args)
    return [GradlintFile.from_parent(session, path=path) for path in state.discovered.files]


@dataclass(frozen=True)
class Checked:
    """What one collection gave `--gradlint` to check, as the summary tells it. Plain data: an
    xdist worker collects, and sends it to the controller, which prints the summary."""

    packages: tuple[str, ...]  # the packages added beyond pytest's paths (relative, "mypkg/")
    imported: bool  # found through the tests' imports (else: the project's import roots)
    items: int  # gradient-check items collected
    paths: tuple[str, ...]  # what pytest was pointed at (relative)

    def to_json(self) -> dict[str, Any]:
        return {"packages": list(self.packages), "imported": self.imported, "items": self.items,
                "paths": list(self.paths)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Checked":
        return Checked(tuple(data["packages"]), bool(data["imported"]), int(data["items"]),
                       tuple(data["paths"]))

    def lines(self) -> list[str]:
        """What was checked beyond the tests, or that nothing was and how to point it."""
        lines = []
        if self.packages:
            how = "that the tests import" if self.imported else "in the project's import roots"
            lines.append(f"checked the Functions and custom ops of {', '.join(self.packages)} too (the "
                         f"project's packages {how}), besides those under pytest's paths")
        if self.items == 0:
            where = f"under {' '.join(self.paths)}" + \
                    (f" nor in {', '.join(self.packages)}" if self.packages else "")
            lines.append(f"checked no autograd Function or custom op: none found {where}; name where "
                         f"they are: `pytest --gradlint src/ tests/` (or add the folder to `testpaths`)")
        return lines


def checked(config: pytest.Config) -> Checked | None:
    """What this process's collection gave `--gradlint`; None when it collected nothing (an
    xdist controller: its workers collect)."""
    state = config.stash.get(_STATE, None)
    if state is None:
        return None
    packages = [state.relative(str(p)) + ("/" if p.is_dir() else "") for p in
                (state.discovered.packages if state.discovered else [])]
    return Checked(tuple(packages), bool(state.discovered and state.discovered.imported), state.items,
                   tuple(state.relative(a) for a in config.args))


@contextlib.contextmanager
def _quiet_torch_trace() -> Iterator[None]:
    """torch's structured-trace records (DEBUG, "torch.__trace") that opcheck's compile test
    emits would fill a failure's "Captured log" section; they are kept out of it unless
    the user asked for a trace (TORCH_TRACE)."""
    trace = logging.getLogger("torch.__trace")
    if os.environ.get("TORCH_TRACE") or trace.disabled:
        yield
        return
    trace.disabled = True
    try:
        yield
    finally:
        trace.disabled = False


def _item_name(target: Target) -> str:
    """A custom op by its Python name, else as torch.ops names it ("ns.name": `::` would
    split the node id)."""
    if target.kind == "custom_op":
        return target.qualname or target.name.replace("::", ".")
    return target.qualname or target.name


def _check(request: pytest.FixtureRequest, gradlint_options: dict[str, Any]) -> None:
    __tracebackhide__ = True
    request.node.check(gradlint_options)


class GradlintItem(pytest.Function):
    """One target's gradient checks."""

    def __init__(self, *, target: Target, text: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.target = target
        self.text = text

    def check(self, options: dict[str, Any]) -> None:
        __tracebackhide__ = True
        from ..worker import inprocess
        from .api import worker_options

        if self.target.skip:  # what `gradlint run` leaves out, reported at the target's line
            raise pytest.skip.Exception(f"{self.name}: {self.target.skip}", _use_item_location=True)
        state = _session(self.config)
        config = state.resolver.for_path(self.path)
        # the project's [tool.gradlint.run] (compile, dtype, ...), then gradlint_options and markers
        run = plan(self.target, self.path, self.text, config.root, cache=state.cache,
                   options=layered(config.run_options, worker_options(options)) or None, display=self.name)
        with _quiet_torch_trace():
            proof = state.prover.prove_sync(run, lambda request: RunResult.from_json(inprocess.run_request(request)))
        if wants_causes(proof.result):  # what `gradlint check` finds on the same code: likely causes
            proof = with_causes(proof, state.findings.of(self.path, self.text))
        result = proof.result
        if proof.cached:
            result = replace(result, notes=(*result.notes, CACHED_NOTE))
        report = GradientReport(result, self.name, proof.inputs_source, state.relative)
        if report.ok:
            self.add_report_section("call", "gradlint", str(report))
            if report.warning:
                warnings.warn(GradientCheckWarning(f"{self.name}: {report.summary.lstrip('⚠ ')}"))
            return
        if report.inconclusive:
            # reported at the target's line, like a skip marker on it
            raise pytest.skip.Exception(f"{self.name}: {report.summary.lstrip('✗? ')}",
                                        _use_item_location=True)
        raise GradientCheckFailed(report)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, GradientCheckFailed):
            text = str(excinfo.value.report)
            return FailureRepr(text, Crash(str(self.path), self.target.line, (text.splitlines() or [""])[0]))
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.target.line - 1, f"gradients of {self.name}"
