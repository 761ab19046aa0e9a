"""The data every layer shares: positions, edits, fixes and findings.

Plain immutable values with no behaviour beyond small conveniences, so the engine, the
CLI, the language server and the tests can pass them around freely.

Positions are 1-based lines and 0-based columns counted in Unicode code points (Python
``str`` indices), which is what libcst reports. Output layers convert: the CLI prints
1-based columns, the language server converts to the client's position encoding.

In a Jupyter notebook, findings and edits also name their ``cell`` (0-based position among
all the notebook's cells) and their lines count from the start of that cell.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    line: int  # 1-based
    column: int  # 0-based, code points


@dataclass(frozen=True, order=True)
class Range:
    start: Position
    end: Position

    @staticmethod
    def of(line: int, column: int, end_line: int, end_column: int) -> "Range":
        return Range(Position(line, column), Position(end_line, end_column))

    def shifted(self, lines: int) -> "Range":
        return Range(
            Position(self.start.line + lines, self.start.column),
            Position(self.end.line + lines, self.end.column),
        )


@dataclass(frozen=True)
class Edit:
    """Replace the text in ``range`` with ``new_text`` (an insertion when the range is empty)."""

    range: Range
    new_text: str
    cell: int | None = None  # notebooks: the cell the range is in

    def shifted(self, lines: int) -> "Edit":
        return Edit(self.range.shifted(lines), self.new_text, self.cell)


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]

    def shifted(self, lines: int) -> "Fix":
        return Fix(self.title, self.applicability, tuple(e.shifted(lines) for e in self.edits))


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    range: Range
    fix: Fix | None = None
    # first line of the statement that holds the finding; `# noqa` there also suppresses it
    statement_line: int | None = None
    path: str = field(default="", compare=False)
    cell: int | None = field(default=None, compare=False)  # notebooks: the cell of `range`

    @property
    def line(self) -> int:
        return self.range.start.line

    def shifted(self, lines: int) -> "Finding":
        return Finding(
            self.code,
            self.name,
            self.severity,
            self.message,
            self.range.shifted(lines),
            self.fix.shifted(lines) if self.fix else None,
            None if self.statement_line is None else self.statement_line + lines,
            self.path,
            self.cell,
        )

    def with_path(self, path: str) -> "Finding":
        """``dataclasses.replace(self, path=path)``, without its generic field walk."""
        return Finding(self.code, self.name, self.severity, self.message, self.range, self.fix,
                       self.statement_line, path, self.cell)

    def sort_key(self) -> tuple:
        start = self.range.start  # (its line and column: a Position compares in Python)
        return (-1 if self.cell is None else self.cell, start.line, start.column, self.code, self.message)
