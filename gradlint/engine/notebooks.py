"""Jupyter notebooks: their Python cells linted as one module, findings and fixes mapped
back to cells, and the notebook written back unchanged except for the fixed cells.

A notebook runs its cells in one namespace, so the code cells are joined in order (names
defined in one cell are known in the next). IPython syntax is not Python: line magics
(``%matplotlib inline``), shell escapes (``!pip install …``, ``files = !ls``), help
(``torch.randn?``) and other escapes are masked line by line, and cells run by a non-Python
cell magic (``%%bash``) are masked whole, always keeping the line count, so every position
in the joined text maps back to a (cell, line, column).

Findings and edits carry ``cell``: the 0-based position of their cell among all cells of
the notebook (markdown and raw cells count, as in the file; outputs show it 1-based, as
``nb.ipynb:cell 3:2:5``), with lines counted from the start of the cell.

Notebooks are nbformat 4 JSON, read and written with the ``json`` module. Written back,
a notebook keeps its outputs, metadata, key order and formatting (indentation, escaping,
line endings): the style is detected by reproducing the original text from its data.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Iterable, Sequence

from ..findings import Edit, Finding, Fix, Range
from .fixes import MAX_PASSES, LineIndex, all_placed, allowed, compiles_without_new_keywords, verdict
from .linter import LintCache, LintOptions, is_unplaced, lint_source
from .reading import MAX_NOTEBOOK_BYTES, NOTEBOOK_SUFFIX, is_notebook  # noqa: F401 (re-exported)


# Cell magics whose body is Python run in the notebook's namespace (ruff's list).
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time",
                                "timeit"})
_PYTHON_LANGUAGES = frozenset({"python", "python2", "python3", "ipython", "ipython2", "ipython3"})

# What a logical line of Python code never starts with, but IPython lines do:
# magics (%), shell escapes (!), help (?), auto-call / auto-quote escapes (/ , ;).
_ESCAPE_START = frozenset("%!?/,;")
_HELP_SUFFIX = re.compile(r"[A-Za-z_][\w.]*\?{1,2}\s*")
_MAGIC_ASSIGNMENT = re.compile(
    r"([ \t]*)([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)[ \t]*=[ \t]*[%!]")
# Enough of Python's lexical structure to find where logical lines start.
_LEXEME = re.compile(
    r"""
    (?P<comment>\#[^\r\n]*)
  | (?P<string>(?:[rRbBuUfF]{0,2})
        (?: \"\"\"(?:\\.|[^\\])*?\"\"\" | '''(?:\\.|[^\\])*?'''
          | "(?:\\.|[^"\\\r\n])*" | '(?:\\.|[^'\\\r\n])*' ))
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<continuation>\\(?:\r\n|\r|\n))
  | (?P<newline>\r\n|\r|\n)
    """,
    re.VERBOSE | re.DOTALL,
)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class NotebookError(Exception):
    """The file is not a notebook gradlint can read (one-line message)."""


# -- reading ------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellText:
    """The source of one Python cell; ``index`` is its position among all cells."""

    index: int
    text: str


@dataclass
class Notebook:
    raw: str
    data: dict
    python_cells: list[CellText]

    def sources(self) -> dict[int, str]:
        return {cell.index: cell.text for cell in self.python_cells}


def _source_text(source: Any, where: str) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    raise NotebookError(f"{where}: `source` must be a string or a list of strings")


def is_python_notebook(metadata: Any) -> bool:
    """Is the notebook's kernel Python (or unknown, which Jupyter treats as Python)?"""
    if not isinstance(metadata, dict):
        return True
    info = metadata.get("language_info")
    language = info.get("name") if isinstance(info, dict) else None
    if language is None:
        kernel = metadata.get("kernelspec")
        language = kernel.get("language") if isinstance(kernel, dict) else None
    return language is None or str(language).lower() in _PYTHON_LANGUAGES


def is_python_cell(cell: dict) -> bool:
    if cell.get("cell_type") != "code":
        return False
    metadata = cell.get("metadata")
    vscode = metadata.get("vscode") if isinstance(metadata, dict) else None
    language = vscode.get("languageId") if isinstance(vscode, dict) else None
    return language is None or str(language).lower() in _PYTHON_LANGUAGES


def read_notebook(raw: str) -> Notebook:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {error.lineno}, "
                            f"column {error.colno}: {error.msg}") from None
    if not isinstance(data, dict):
        raise NotebookError("not a valid notebook: the JSON is not an object")
    if "worksheets" in data and "cells" not in data:
        raise NotebookError("nbformat 3 notebooks are not supported: convert it with "
                            "`jupyter nbconvert --to notebook --nbformat 4`")
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: it has no `cells` list")
    python_cells = []
    python = is_python_notebook(data.get("metadata"))
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a valid notebook: cell {index + 1} is not an object")
        if python and is_python_cell(cell):
            python_cells.append(CellText(index, _source_text(cell.get("source", ""),
                                                             f"cell {index + 1}")))
    return Notebook(raw, data, python_cells)


# -- IPython syntax -----------------------------------------------------------------------
def _lines(text: str) -> list[str]:
    return _LINE.findall(text)


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def _is_escape(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    return stripped[0] in _ESCAPE_START or bool(_HELP_SUFFIX.fullmatch(stripped))


def mask_ipython(text: str) -> tuple[str, frozenset[int]]:
    """``text`` with IPython-only lines replaced by Python of the same line count.

    Returns the masked text and the (1-based) lines that were masked; no other line
    changes, so positions outside masked lines are the same in both texts.
    """
    lines = _lines(text)
    if not lines:
        return text, frozenset()
    first = lines[0].lstrip()
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:  # %%bash, %%html, %%writefile: not Python at all
            return "".join(_ending(line) for line in lines), frozenset(range(1, len(lines) + 1))
        lines[0] = _ending(lines[0])
        masked = {1}
        start = 1
    else:
        masked = set()
        start = 0
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    body = "".join(lines)
    index = start
    while index < len(lines):
        line = lines[index]
        if _is_escape(line):
            indent = line[:len(line) - len(line.lstrip())]
            assignment = _MAGIC_ASSIGNMENT.match(line)
            lines[index] = (f"{assignment.group(1)}{assignment.group(2)} = ..." if assignment
                            else f"{indent}pass") + _ending(line)
            masked.add(index + 1)
            while line.rstrip("\r\n").endswith("\\") and index + 1 < len(lines):
                index += 1
                line = lines[index]
                lines[index] = _ending(line)
                masked.add(index + 1)
            index += 1
            continue
        if _MAGIC_ASSIGNMENT.match(line):
            assignment = _MAGIC_ASSIGNMENT.match(line)
            assert assignment is not None
            lines[index] = f"{assignment.group(1)}{assignment.group(2)} = ...{_ending(line)}"
            masked.add(index + 1)
            index += 1
            continue
        index = _next_logical_line(body, offsets, index)
    return "".join(lines), frozenset(masked)


def _next_logical_line(text: str, offsets: list[int], index: int) -> int:
    """The index of the line where the logical line starting at line ``index`` ends + 1."""
    depth = 0
    for match in _LEXEME.finditer(text, offsets[index]):
        kind = match.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "newline" and depth == 0:
            return bisect.bisect_right(offsets, match.end() - 1)
    return len(offsets) - 1


# -- cells joined into one module -------------------------------------------------------------
class JoinedCells:
    """Python cells joined (masked) into one module, with the way back to cells."""

    def __init__(self, cells: Sequence[CellText]):
        self.cells = list(cells)
        parts: list[str] = []
        self.starts: list[int] = []  # first joined line of each cell
        self.counts: list[int] = []  # its number of lines
        self.lengths: list[list[int]] = []  # each line's length (without line ending)
        self.masked: list[frozenset[int]] = []
        line = 1
        for cell in self.cells:
            masked_text, masked_lines = mask_ipython(cell.text)
            if masked_text and not masked_text.endswith(("\n", "\r")):
                masked_text += "\n"
            cell_lines = _lines(cell.text)
            # a masked last line may have become empty: keep the cell's line count
            masked_text += "\n" * (len(cell_lines) - len(_lines(masked_text)))
            self.starts.append(line)
            self.counts.append(len(cell_lines))
            self.lengths.append([len(text.rstrip("\r\n")) for text in cell_lines])
            self.masked.append(masked_lines)
            parts.append(masked_text)
            line += len(cell_lines)
        self.text = "".join(parts)

    def locate(self, line: int, column: int) -> tuple[int, int, int]:
        """(position in ``cells``, cell line, column) of a joined-text position."""
        if not self.cells:
            return 0, 1, 0
        position = bisect.bisect_right(self.starts, line) - 1
        position = max(0, position)
        # an empty cell has no lines: go back to the last cell that has some
        while position > 0 and self.counts[position] == 0:
            position -= 1
        local = line - self.starts[position] + 1
        count = self.counts[position]
        if count == 0:
            return position, 1, 0
        if local > count:  # past the cell's end (end of file): its last character
            return position, count, self.lengths[position][-1]
        return position, local, min(column, self.lengths[position][local - 1])

    def _range(self, rng: Range) -> tuple[int, Range, bool]:
        """The cell and cell-local range; the bool says whether the range stayed in it."""
        position, line, column = self.locate(rng.start.line, rng.start.column)
        end_position, end_line, end_column = self.locate(rng.end.line, rng.end.column)
        same = end_position == position
        if not same:  # clip to the end of the first cell
            end_line = max(1, self.counts[position])
            end_column = self.lengths[position][-1] if self.counts[position] else 0
        return position, Range.of(line, column, end_line, end_column), same

    def _edit(self, edit: Edit) -> Edit | None:
        position, rng, same = self._range(edit.range)
        lines = range(rng.start.line, rng.end.line + 1)
        if not same or any(line in self.masked[position] for line in lines):
            return None  # would change another cell's boundary or IPython syntax
        return Edit(rng, edit.new_text, self.cells[position].index)

    def to_cell(self, finding: Finding) -> Finding:
        position, rng, _ = self._range(finding.range)
        fix = None
        if finding.fix is not None:
            edits = [self._edit(edit) for edit in finding.fix.edits]
            if all(edit is not None for edit in edits):
                fix = Fix(finding.fix.title, finding.fix.applicability,
                          tuple(edit for edit in edits if edit is not None))
        statement = None
        if finding.statement_line is not None:
            statement = self.locate(finding.statement_line, 0)[1]
        return replace(finding, range=rng, fix=fix, statement_line=statement,
                       cell=self.cells[position].index)


# -- linting and fixing cells ---------------------------------------------------------------
def lint_cells(cells: Sequence[CellText], path: str, options: LintOptions,
               cache: LintCache | None = None, placed: bool = True) -> list[Finding]:
    """Findings in cell coordinates (``finding.cell``, cell-local lines). ``placed=False``:
    see ``lint_source`` (unplaced findings stay as they are, in no cell)."""
    joined = JoinedCells(cells)
    if not joined.text.strip():
        return []
    result = lint_source(joined.text, path, options, cache, placed=placed)
    return [finding if is_unplaced(finding) else joined.to_cell(finding) for finding in result.findings]


def apply_cell_fixes(sources: dict[int, str], fixes: Iterable[Fix]) -> tuple[dict[int, str], int]:
    """Apply every fix whose edits overlap no accepted one (like ``apply_fixes``, with
    edits in several cells applied together or not at all)."""
    indexes = {cell: LineIndex(text) for cell, text in sources.items()}
    accepted: dict[int, list[tuple[int, int, str]]] = {}
    count = 0
    for fix in sorted(fixes, key=lambda f: min((e.cell or 0, e.range.start) for e in f.edits)):
        spans = []
        for edit in fix.edits:
            if edit.cell not in indexes:
                break
            index = indexes[edit.cell]
            spans.append((edit.cell, (index.offset(edit.range.start), index.offset(edit.range.end),
                                      edit.new_text)))
        else:
            new = [(cell, span) for cell, span in spans if span not in accepted.get(cell, [])]
            if any(_overlaps(span, other) for cell, span in new for other in accepted.get(cell, [])):
                continue
            for cell, span in new:
                accepted.setdefault(cell, []).append(span)
            count += 1
    result = dict(sources)
    for cell, spans in accepted.items():
        text = result[cell]
        for start, end, new_text in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
            text = text[:start] + new_text + text[end:]
        result[cell] = text
    return result, count


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    if a[0] == a[1] or b[0] == b[1]:
        return a[0] == b[0] or (b[0] < a[0] < b[1]) or (a[0] < b[0] < a[1])
    return a[0] < b[1] and b[0] < a[1]


@dataclass
class CellFixOutcome:
    sources: dict[int, str]  # cell index -> source after fixes
    fixed: int
    remaining: list[Finding]


def fix_cells(cells: Sequence[CellText], path: str, options: LintOptions, unsafe: bool = False,
              cache: LintCache | None = None, only_cells: set[int] | None = None,
              findings: list[Finding] | None = None, counting: bool = False) -> CellFixOutcome:
    """Fix until no fix applies (at most MAX_PASSES times), never in a notebook whose code
    does not parse; with ``only_cells``, only fixes whose edits all lie in those cells.
    ``findings``: the cells' lint (``lint_cells``), when the caller has it. ``counting``: only
    ``fixed`` is wanted (see ``fixes.fix_source``)."""
    cache = cache or LintCache()
    sources = {cell.index: cell.text for cell in cells}
    fixed = 0
    if findings is None:
        findings = lint_cells(cells, path, options, cache)
    for _ in range(MAX_PASSES):
        if any(f.code == "GL000" for f in findings):
            break
        candidates = _candidates(findings, unsafe, only_cells)
        if candidates and not all_placed(findings):  # (a count's lint) judged against a placed one
            findings = lint_cells([CellText(i, t) for i, t in sources.items()], path, options, cache)
            candidates = _candidates(findings, unsafe, only_cells)
        judge = partial(_verified_cell_fixes, sources, findings=findings, path=path, options=options,
                        cache=cache, unsafe=unsafe, counting=counting)
        fixed_cells = judge(candidates)
        if fixed_cells is None and len(candidates) > 1:  # one at a time: which of them is bad
            good = [f for f in candidates if judge([f], read_on=False) is not None]
            fixed_cells = judge(good) if good else None
        if fixed_cells is None:
            break
        sources, count, findings = fixed_cells
        fixed += count
    return CellFixOutcome(sources, fixed, findings)


def _candidates(findings: list[Finding], unsafe: bool, only_cells: set[int] | None) -> list[Finding]:
    return [f for f in findings if allowed(f.fix, unsafe) and (
        only_cells is None or all(e.cell in only_cells for e in f.fix.edits))]  # type: ignore[union-attr]


def _verified_cell_fixes(sources: dict[int, str], chosen: list[Finding], findings: list[Finding], path: str,
                         options: LintOptions, cache: LintCache, unsafe: bool = False, counting: bool = False,
                         read_on: bool = True) -> tuple[dict[int, str], int, list[Finding]] | None:
    """``chosen``'s fixes applied together, when that is good by the tests a ``.py`` file's fixes
    pass (``fixes.verified``): every one applies, the cells' code still compiles with no keyword
    added beside a ``**mapping``, each fixed finding is gone and none appears. Returns the new
    sources, how many fixes applied and the new sources' lint; None when not good.
    ``counting``, ``read_on``: see ``fixes.verdict``."""
    if not chosen:
        return None
    new_sources, count = apply_cell_fixes(sources, [f.fix for f in chosen])  # type: ignore[misc]
    if count != len(chosen) or new_sources == sources:
        return None
    before_cells = [CellText(i, t) for i, t in sources.items()]
    after_cells = [CellText(i, t) for i, t in new_sources.items()]
    before_text, after_text = JoinedCells(before_cells).text, JoinedCells(after_cells).text
    # (cells CPython cannot compile as one module, e.g. with a top-level `await`, are judged by the lint alone)
    if compiles_without_new_keywords(before_text, before_text, path) and \
            not compiles_without_new_keywords(before_text, after_text, path):
        return None
    before = Counter((f.code, f.message) for f in findings)
    before.subtract(Counter((f.code, f.message) for f in chosen))
    new_findings, good = verdict(partial(lint_cells, after_cells, path, options, cache), before, unsafe,
                                 counting, read_on)
    return (new_sources, count, new_findings) if good else None


# -- writing back -----------------------------------------------------------------------------
@dataclass(frozen=True)
class JsonStyle:
    indent: int | str | None = 1
    ensure_ascii: bool = False
    separators: tuple[str, str] = (",", ": ")
    newline: str = "\n"
    final_newline: bool = True

    def dump(self, data: Any) -> str:
        text = json.dumps(data, indent=self.indent, ensure_ascii=self.ensure_ascii,
                          separators=self.separators)
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        return text + (self.newline if self.final_newline else "")


def detect_style(raw: str, data: Any) -> JsonStyle:
    """The json.dumps settings that reproduce ``raw`` exactly (nbformat's when none do)."""
    newline = "\r\n" if "\r\n" in raw else "\n"
    final = raw.endswith("\n")
    match = re.match(r"\{\r?\n([ \t]+)\S", raw)
    indents: list[int | str | None] = []
    if match:
        found = match.group(1)
        indents.append(len(found) if set(found) == {" "} else found)
    elif re.match(r"\{\s*\"", raw) and "\n" not in raw.strip():
        indents.append(None)
    indents += [1, 2, 4]
    for indent in dict.fromkeys(indents):
        separator_options = [(",", ": "), (", ", ": "), (",", ":")] if indent is None else [(",", ": ")]
        for separators in separator_options:
            for ensure_ascii in (False, True):
                style = JsonStyle(indent, ensure_ascii, separators, newline, final)
                if style.dump(data) == raw:
                    return style
    return JsonStyle(indents[0] if indents[0] is not None else 1, newline=newline)


def _split_source(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def write_notebook(notebook: Notebook, sources: dict[int, str]) -> str:
    """The notebook's JSON with the given cell sources; the original text when nothing
    changed. Outputs, metadata and the file's formatting are kept."""
    current = notebook.sources()
    if all(current.get(index) == text for index, text in sources.items()):
        return notebook.raw
    style = detect_style(notebook.raw, notebook.data)
    data = json.loads(notebook.raw)  # a fresh copy, in the file's key order
    for index, text in sources.items():
        cell = data["cells"][index]
        if current.get(index) == text:
            continue
        cell["source"] = text if isinstance(cell.get("source"), str) else _split_source(text)
    return style.dump(data)


def cell_changes(original: str, fixed: str) -> list[tuple[int, str, str]]:
    """(cell index, old source, new source) for each cell whose source differs."""
    before, after = read_notebook(original), read_notebook(fixed)
    new = after.sources()
    return [(cell.index, cell.text, new.get(cell.index, cell.text))
            for cell in before.python_cells if new.get(cell.index, cell.text) != cell.text]


def unified_cell_diff(display: str, original: str, fixed: str) -> list[str]:
    """A unified diff per changed cell, headed ``a/nb.ipynb:cell 3``."""
    lines: list[str] = []
    for index, old, new in cell_changes(original, fixed):
        name = f"{display}:cell {index + 1}"
        diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                    fromfile=f"a/{name}", tofile=f"b/{name}")
        lines.extend(line if line.endswith("\n") else line + "\n" for line in diff)
    return lines


# -- a notebook file, end to end --------------------------------------------------------------
@dataclass
class NotebookResult:
    findings: list[Finding]
    fixed_text: str | None = None
    fixes_applied: int = 0


def lint_notebook(raw: str, display: str, options: LintOptions, *, fix: bool = False,
                  unsafe: bool = False, cache: LintCache | None = None,
                  findings: list[Finding] | None = None, counting: bool = False) -> NotebookResult:
    """Lint (and fix) the JSON text of a notebook; raises NotebookError for bad JSON.
    ``findings``: its lint with ``options`` in cell coordinates (``lint_cells``), when the
    caller has it (counting what fixing would apply after a check). ``counting``: only
    ``fixes_applied`` is wanted (see ``fixes.fix_source``)."""
    notebook = read_notebook(raw)
    if not fix:
        findings = lint_cells(notebook.python_cells, display, options, cache)
        return NotebookResult(_with_path(findings, display))
    outcome = fix_cells(notebook.python_cells, display, options, unsafe=unsafe, cache=cache,
                        findings=findings, counting=counting)
    return NotebookResult(_with_path(outcome.remaining, display),
                          write_notebook(notebook, outcome.sources), outcome.fixed)


def _with_path(findings: list[Finding], display: str) -> list[Finding]:
    return sorted((replace(f, path=display) for f in findings), key=Finding.sort_key)

