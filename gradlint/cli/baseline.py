"""`gradlint check` with a baseline: `--write-baseline`, `--baseline PATH`, `--no-baseline`,
and `baseline = "..."` in `[tool.gradlint]` (default: gradlint-baseline.json at the project
root, used when it exists)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .. import __version__
from ..engine import baseline as baselines
from ..engine.files import FileReport, UsageError
from ..engine.reading import is_notebook
from ..findings import Finding


@dataclass(frozen=True)
class Checked:
    """One checked file, with what the baseline needs to know about it."""

    report: FileReport
    baseline_file: Path  # the baseline that applies to it
    named: bool  # by --baseline or `baseline = "..."` (then it must exist)
    codes: frozenset[str]  # the codes checked in it


@dataclass
class Outcome:
    findings: list[Finding]  # what to report
    hidden: int = 0  # findings the baselines hold
    removable: int = 0  # baseline entries no finding matched
    files: list[Path] = field(default_factory=list)  # the baselines used
    written: list[str] = field(default_factory=list)  # one line per baseline written


def _text(report: FileReport) -> str | None:
    if report.fixed is not None:
        return report.fixed
    if report.original is not None:
        return report.original
    return baselines.read_source(report.path)


def _checked_file(item: Checked) -> baselines.CheckedFile:
    report = item.report
    lines = baselines.source_lines(_text(report) if report.findings else None, is_notebook(report.display))
    return baselines.CheckedFile(report.path, report.findings, lines, item.codes)


def _groups(items: Sequence[Checked]) -> dict[Path, list[Checked]]:
    groups: dict[Path, list[Checked]] = {}
    for item in items:
        groups.setdefault(item.baseline_file, []).append(item)
    return groups


def apply(items: Sequence[Checked], show: Callable[[Path], str]) -> Outcome:
    """Hold each file's findings against its baseline. A baseline file that does not exist
    is none, unless it was named (``--baseline`` or ``baseline = ...``): then it is an error."""
    outcome = Outcome([])
    hidden: set[int] = set()
    for path, group in _groups(items).items():
        if not path.exists():
            if any(item.named for item in group):
                raise UsageError(f"baseline file not found: {show(path)} (create it with "
                                 f"`gradlint check --write-baseline`)")
            continue
        matched = baselines.match(_load(path), [_checked_file(item) for item in group])
        hidden.update(id(finding) for finding in matched.baselined)
        outcome.removable += matched.removable_count
        outcome.files.append(path)
    outcome.hidden = len(hidden)
    outcome.findings = [f for item in items for f in item.report.findings if id(f) not in hidden]
    return outcome


def write(items: Sequence[Checked], show: Callable[[Path], str]) -> Outcome:
    """``--write-baseline``: each baseline gets this run's findings for the files and codes
    it checked, and keeps its entries for the rest."""
    outcome = Outcome([])
    for path, group in _groups(items).items():
        baseline = _load(path)
        matched = baselines.match(baseline, [_checked_file(item) for item in group])
        checked = {baseline.relative(item.report.path): item.codes for item in group}
        new = baselines.updated(baseline, matched, checked)
        baselines.write(new, f"gradlint {__version__}")
        files = len({key.path for key in new.counts})
        dropped = matched.removable_count
        note = f" ({dropped} fixed {'entry' if dropped == 1 else 'entries'} dropped)" if dropped else ""
        outcome.written.append(f"Wrote {show(path)}: {_findings(len(new))} in {files} "
                               f"file{'s' if files != 1 else ''}{note}.")
        outcome.files.append(path)
    return outcome


def _load(path: Path) -> baselines.Baseline:
    try:
        return baselines.load(path)
    except baselines.BaselineError as error:
        raise UsageError(str(error)) from None


def _findings(count: int) -> str:
    return f"{count} finding{'s' if count != 1 else ''}"


def summary_lines(outcome: Outcome, show: Callable[[Path], str]) -> list[str]:
    """What the text summary adds about the baselines."""
    if not outcome.files:
        return []
    names = ", ".join(show(path) for path in outcome.files)
    lines = []
    if outcome.hidden:
        lines.append(f"{_findings(outcome.hidden)} in the baseline ({names}) not shown.")
    if outcome.removable:
        lines.append(removable_line(outcome.removable))
    return lines


def removable_line(count: int) -> str:
    these = "entry matches" if count == 1 else "entries match"
    return (f"{count} baseline {these} no finding any more (fixed): "
            f"`gradlint check --write-baseline` removes {'it' if count == 1 else 'them'}.")


def shown_path(cwd: Path) -> Callable[[Path], str]:
    def show(path: Path) -> str:
        try:
            relative = os.path.relpath(path, cwd)
        except ValueError:
            return str(path)
        return relative if not relative.startswith("..") else str(path)
    return show
