"""GradientReport: one gradient check's outcome for the Python API and pytest.

It reads a ``RunResult`` (gradlint/runner/result.py): ``str(report)`` is the text ``gradlint
run`` prints for the same result (gradlint/runner/report.py), with the run's notes; the
properties give the structured parts: the verdict, the failing check, the worst elements
and the mismatch pattern. What counts as ok, a warning or inconclusive is the runner's
(``RunResult.gradients_match``, ``warned``, ``undecided``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..runner.report import failing_check, render_text, worst_rows
from ..runner.result import RunResult, Status


class GradientReport:
    """The outcome of one gradient check."""

    def __init__(self, result: RunResult, name: str, source: str | None = None,
                 relative: Callable[[str], str] = lambda path: path):
        self.result = result  # the full run result (``result.to_json()``: the schema's JSON)
        self.name = name
        self.source = source  # where the inputs came from, for the text
        self._relative = relative  # how the text shows file paths

    # -- the outcome ------------------------------------------------------------------
    @property
    def ok(self) -> bool:
        """True when the gradients match: every check passed, or only a warning (⚠ not
        twice differentiable after first-order gradients matched; ``strict=True`` makes
        that a failure)."""
        return self.result.gradients_match

    @property
    def warning(self) -> bool:
        """The gradients match, with a warning (see ``summary``)."""
        return self.result.warned

    @property
    def status(self) -> Status:
        """pass, fail, error, no_inputs, … (docs/run-result-schema.md, 3.1)."""
        return self.result.status

    @property
    def verdict(self) -> str | None:
        """ok, wrong_gradient, non_differentiable_point, input_mutated, … (3.2)."""
        return self.result.verdict

    @property
    def inconclusive(self) -> bool:
        """The check could not decide (no usable inputs, or checks that prove nothing)."""
        return self.result.undecided

    @property
    def summary(self) -> str:
        return self.result.summary

    @property
    def message(self) -> str | None:
        return self.result.message

    @property
    def failed_check(self) -> str | None:
        """The check that decided a failure: gradcheck, gradgradcheck, forward_ad, …"""
        return self.result.failed_check

    @property
    def checks(self) -> list[Mapping[str, Any]]:
        """Every check, in the order it ran: {name, status, verdict, seconds, message, details}."""
        return list(self.result.checks)

    # -- what went wrong --------------------------------------------------------------
    @property
    def worst(self) -> list[Mapping[str, Any]]:
        """The worst failing Jacobian entries, largest |Δ| first: {input, input_index,
        output_name, output_index, numerical, analytical, abs_error, …}."""
        return worst_rows(self.result)

    @property
    def pattern(self) -> str | None:
        """What the mismatch looks like (e.g. "analytical = 0.5 × numerical"), when known."""
        check = failing_check(self.result)
        details = (check or {}).get("details") or {}
        value = details.get("pattern") or self.result.extra.get("pattern")
        if isinstance(value, Mapping):
            value = value.get("text") or value.get("summary")
        return str(value) if value else None

    @property
    def pattern_kind(self) -> str | None:
        """The pattern as a word: factor, sign, zero, swapped, transposed, …"""
        check = failing_check(self.result)
        value = ((check or {}).get("details") or {}).get("pattern")
        return value.get("kind") if isinstance(value, Mapping) else None

    @property
    def promoted(self) -> dict[str, str]:
        """Inputs checked on float64 copies: {input name: original dtype}."""
        return {item["name"]: item["promoted_from"] for item in self.result.inputs
                if item.get("promoted_from")}

    @property
    def notes(self) -> list[str]:
        return list(self.result.notes)

    # -- text -------------------------------------------------------------------------
    def __str__(self) -> str:
        text = render_text(self.result, self.name, self._relative, self.source)
        notes = self.notes
        if notes:
            text += "\n" + "\n".join(f"    note: {note}" for note in notes)
        return text

    def __repr__(self) -> str:
        return f"<GradientReport {self.name}: {self.status} ({self.verdict})>"

    def __bool__(self) -> bool:
        return self.ok
