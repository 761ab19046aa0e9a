"""The project's baseline in the editor: findings it holds are shown as hints marked
"(in the baseline)", or not at all (the setting ``baselinedFindings``: ``hint`` | ``hide``).

Matched as `gradlint check` matches them (gradlint/engine/baseline.py): code, file, scope
and text of the document as it is in the editor, so an unsaved edit that moves lines keeps
the match. The baseline file is read again when it changes on disk.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Collection, Iterable, Mapping, Sequence

from ..engine import baseline as baselines
from ..engine.config import Config
from ..findings import Finding, Severity

log = logging.getLogger("gradlint.server")

MODES = ("hint", "hide")
SUFFIX = " (in the baseline)"


class Baselines:
    def __init__(self) -> None:
        self._files = baselines.BaselineFiles()
        self._reported: set[str] = set()
        self._paths: set[Path] = set()  # the baseline files documents were matched against

    def invalidate(self) -> None:
        self._files.clear()
        self._reported.clear()

    def changed(self, paths: Iterable[Path | None]) -> bool:
        """Is one of these files (a watched-file event) a baseline in use?"""
        return any(path is not None and path.absolute() in self._paths for path in paths)

    def apply(self, findings: Sequence[Finding], text: str | None, path: Path | None, config: Config,
              codes: Collection[str], mode: str,
              cells: Mapping[int, str] | None = None) -> list[Finding]:
        """The findings to show for one document of ``config``'s project (of a notebook: its
        cells' texts by position, instead of ``text``)."""
        if not findings or path is None:
            return list(findings)
        self._paths.add(config.baseline_path.absolute())
        baseline, problem = self._files.get(config.baseline_path)
        if problem is not None and problem not in self._reported:
            self._reported.add(problem)
            log.warning("%s", problem)
        if baseline is None or not len(baseline):
            return list(findings)
        if cells is not None:
            by_cell = {position: baselines.split_lines(cell) for position, cell in cells.items()}
            lines = lambda finding: by_cell.get(finding.cell) if finding.cell is not None else None  # noqa: E731
        else:
            lines = baselines.source_lines(text, False)
        matched = baselines.match(baseline, [baselines.CheckedFile(path, findings, lines, codes)])
        held = {id(finding) for finding in matched.baselined}
        shown = []
        for finding in findings:
            if id(finding) not in held:
                shown.append(finding)
            elif mode != "hide":
                shown.append(replace(finding, severity=Severity.HINT, message=finding.message + SUFFIX))
        return shown
