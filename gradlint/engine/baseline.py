"""The baseline: findings accepted when a project adopted gradlint, kept in a committed file
(``gradlint-baseline.json``) so that only new mistakes are reported.

A finding is matched to the baseline by what it *is*, never by where it is: its code, its
file (relative to the baseline file's directory), the name of the ``class``/``def`` it is in,
the text of its own range and the text of its line (whitespace collapsed). Lines moved by an
edit elsewhere, code re-indented into a block, a message that changed because another line
changed (GL005 names what setup_context saved): all keep matching. Editing the line of the
finding itself makes it a new finding. Identical findings are counted: a file with two
baselined copies of the same mistake reports a third.

The file shrinks, never grows by itself (a ratchet): entries that no longer match a finding
are reported as removable, and the next ``--write-baseline`` drops them. Only the files and
the codes a run checked count: a run over some files (pre-commit, ``--shard``, ``--select``)
neither reports nor drops the entries of the others.

No printing and no environment here: the CLI and the server decide what to show.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Iterable, Mapping, Sequence

from ..analysis.source import SourceDecodeError, decode_source
from ..findings import Finding
from .reading import MAX_FILE_BYTES, MAX_NOTEBOOK_BYTES, is_notebook, read_bytes

FILE_NAME = "gradlint-baseline.json"
FORMAT = 1
MAX_BASELINE_BYTES = 64 * 2 ** 20
_TEXT_LIMIT = 200  # characters of a finding's own text and of its line that are kept
_SPACE = re.compile(r"\s+")
_SCOPE = re.compile(r"(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


class BaselineError(Exception):
    """A baseline file that cannot be read or written (one-line message)."""


@dataclass(frozen=True, order=True)
class Key:
    """What a baselined finding is matched by."""

    path: str  # relative to the baseline file's directory, with `/`
    code: str
    scope: str  # e.g. "HalfSquare.backward"; "" at module level
    text: str  # the finding's own text
    context: str  # the text of its line


@dataclass
class Baseline:
    """The accepted findings of one baseline file, counted per key."""

    path: Path  # the baseline file (it may not exist yet)
    counts: Counter = field(default_factory=Counter)  # Key -> number of findings
    messages: dict = field(default_factory=dict)  # Key -> a message, for people reading the file

    @property
    def directory(self) -> Path:
        return self.path.parent

    def relative(self, file: Path) -> str:
        """A checked file's path as the baseline names it."""
        return relative_path(file, self.directory)

    def __len__(self) -> int:
        return sum(self.counts.values())


def relative_path(file: Path, directory: Path) -> str:
    try:
        real, base = os.path.realpath(file), os.path.realpath(directory)
    except (OSError, ValueError):
        real, base = os.path.abspath(file), os.path.abspath(directory)
    return Path(os.path.relpath(real, base)).as_posix()


# -- matching -------------------------------------------------------------------------------
def _collapse(text: str) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT]


_TRIPLE_QUOTES = ("'''", '"""')


def without_comment(line: str) -> str:
    """The line without its trailing ``# ...`` comment (a ``#`` inside a string stays)."""
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 1
            elif line.startswith(quote, index):
                index += len(quote) - 1
                quote = ""
        elif char in "'\"":
            quote = line[index:index + 3] if line[index:index + 3] in _TRIPLE_QUOTES else char
            index += len(quote) - 1
        elif char == "#":
            return line[:index]
        index += 1
    return line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def scope_of(lines: Sequence[str], index: int) -> str:
    """The dotted names of the ``class``/``def`` blocks around line ``index`` (0-based), read
    from indentation (stable when lines move; blank and comment lines do not count)."""
    if not 0 <= index < len(lines):
        return ""
    names: list[str] = []
    limit = _indent(lines[index])
    for line in reversed(lines[:index]):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or limit == 0:
            continue
        indent = _indent(line)
        if indent >= limit:
            continue
        limit = indent
        match = _SCOPE.match(stripped)
        if match:
            names.append(match.group(1))
    return ".".join(reversed(names))


def key_of(finding: Finding, path: str, lines: Sequence[str] | None) -> Key:
    """``lines``: the source the finding was found in (a notebook's: the finding's cell),
    None when there is none (a file that could not be read: its message stands in)."""
    if not lines:
        return Key(path, finding.code, "", "", _collapse(finding.message))
    start, end = finding.range.start, finding.range.end
    first = start.line - 1
    if not 0 <= first < len(lines):
        return Key(path, finding.code, "", "", _collapse(finding.message))
    last = min(max(end.line - 1, first), len(lines) - 1)
    if first == last:
        own = lines[first][start.column:end.column]
    else:
        own = "\n".join([lines[first][start.column:], *lines[first + 1:last], lines[last][:end.column]])
    # (a GL009 finding is about its comment; any other keeps matching when comments change)
    context = without_comment(lines[first]) if finding.code != "GL009" else lines[first]
    return Key(path, finding.code, scope_of(lines, first), _collapse(own), _collapse(context))


def split_lines(text: str) -> list[str]:
    return text.splitlines()


SourceLines = Callable[[Finding], "Sequence[str] | None"]


def source_lines(text: str | None, notebook: bool) -> SourceLines:
    """The lines each finding of one file was found in: the file's, or its cell's."""
    if text is None:
        return lambda finding: None
    if not notebook:
        lines = split_lines(text)
        return lambda finding: lines
    from .notebooks import NotebookError, read_notebook

    try:
        cells = {cell.index: split_lines(cell.text) for cell in read_notebook(text).python_cells}
    except NotebookError:
        cells = {}
    return lambda finding: cells.get(finding.cell) if finding.cell is not None else None


def read_source(path: Path) -> str | None:
    """A checked file's text, to match its findings (None when it cannot be read now)."""
    try:
        data = read_bytes(path, MAX_NOTEBOOK_BYTES if is_notebook(path.name) else MAX_FILE_BYTES)
        return decode_source(data)
    except (OSError, SourceDecodeError):
        return None


@dataclass(frozen=True)
class CheckedFile:
    """One file of a run, as the baseline sees it."""

    path: Path  # on disk (or as named by --stdin-filename)
    findings: Sequence[Finding]
    lines: SourceLines  # the source each finding was found in
    codes: Collection[str]  # the codes this run checked in it (what it can say is fixed)


@dataclass
class Matched:
    """A run's findings held against a baseline."""

    new: list[Finding] = field(default_factory=list)  # not in the baseline: reported
    baselined: list[Finding] = field(default_factory=list)  # in it: not reported
    removable: Counter = field(default_factory=Counter)  # Key -> entries no finding matched
    keys: list[tuple[Key, Finding]] = field(default_factory=list)  # every finding's key

    @property
    def removable_count(self) -> int:
        return sum(self.removable.values())


def match(baseline: Baseline, files: Iterable[CheckedFile]) -> Matched:
    """Which findings the baseline holds, and which of its entries no finding matched (in the
    files and codes this run checked)."""
    result = Matched()
    left = Counter(baseline.counts)
    checked: dict[str, Collection[str]] = {}
    for file in files:
        relative = baseline.relative(file.path)
        checked[relative] = file.codes
        for finding in file.findings:
            key = key_of(finding, relative, file.lines(finding))
            result.keys.append((key, finding))
            if left[key] > 0:
                left[key] -= 1
                result.baselined.append(finding)
            else:
                result.new.append(finding)
    for key, count in left.items():
        codes = checked.get(key.path)
        if count > 0 and codes is not None and key.code in codes:
            result.removable[key] = count
    return result


def updated(baseline: Baseline, matched: Matched, checked: Mapping[str, Collection[str]]) -> Baseline:
    """The baseline after ``--write-baseline``: this run's findings for what it checked (each
    file with the codes checked in it), the old entries for everything else."""
    new = Baseline(baseline.path)
    for key, count in baseline.counts.items():
        codes = checked.get(key.path)
        if codes is None or key.code not in codes:
            new.counts[key] += count
            new.messages[key] = baseline.messages.get(key, "")
    for key, finding in matched.keys:
        new.counts[key] += 1
        new.messages.setdefault(key, finding.message)
    return new


# -- the file -------------------------------------------------------------------------------
def load(path: Path) -> Baseline:
    """The baseline in ``path``; an empty one when the file does not exist."""
    baseline = Baseline(path)
    try:
        data = read_bytes(path, MAX_BASELINE_BYTES)
    except FileNotFoundError:
        return baseline
    except (OSError, SourceDecodeError) as error:
        raise BaselineError(f"{path}: cannot read the baseline: {getattr(error, 'strerror', None) or error}") \
            from None
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"{path}: not a gradlint baseline (invalid JSON: {error}); "
                            f"write it again with `gradlint check --write-baseline`") from None
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, dict) or document.get("version") != FORMAT:
        raise BaselineError(f"{path}: not a gradlint baseline of format {FORMAT} (expected an object "
                            f"with \"version\": {FORMAT} and \"files\"); write it again with "
                            f"`gradlint check --write-baseline`")
    for file, entries in files.items():
        if not isinstance(entries, list):
            raise BaselineError(f"{path}: the entries of {file!r} are not a list")
        for entry in entries:
            try:
                key = Key(str(file), str(entry["code"]), str(entry.get("scope", "")),
                          str(entry.get("text", "")), str(entry.get("context", "")))
                count = int(entry.get("count", 1))
            except (TypeError, KeyError, ValueError, AttributeError):
                raise BaselineError(f"{path}: an entry of {file!r} has no `code` or a bad `count`: "
                                    f"{entry!r}") from None
            if count > 0:
                baseline.counts[key] += count
                baseline.messages.setdefault(key, str(entry.get("message", "")))
    return baseline


def dumps(baseline: Baseline, tool: str) -> str:
    files: dict[str, list[dict]] = {}
    for key in sorted(k for k, count in baseline.counts.items() if count > 0):
        entry = {"code": key.code, "message": baseline.messages.get(key, ""), "scope": key.scope,
                 "text": key.text, "context": key.context}
        if baseline.counts[key] != 1:
            entry["count"] = baseline.counts[key]
        files.setdefault(key.path, []).append(entry)
    document = {
        "comment": "Findings accepted when this baseline was written: `gradlint check` reports only "
                   "others. Matched by code, file, scope and text (not line numbers). "
                   "`gradlint check --write-baseline` rewrites it (fixed entries are dropped).",
        "tool": tool,
        "version": FORMAT,
        "files": files,
    }
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write(baseline: Baseline, tool: str) -> None:
    """Write the file atomically (a reader sees the old file or the new one), with the
    permissions a new file gets (the umask applies)."""
    text = dumps(baseline, tool).encode("utf-8")
    directory = baseline.path.parent
    import secrets  # (only when a baseline is written)

    temporary = directory / f".{baseline.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(text)
            os.replace(temporary, baseline.path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
    except OSError as error:
        raise BaselineError(f"{baseline.path}: cannot write the baseline: {error.strerror or error}") from None


class BaselineFiles:
    """Baselines as the language server reads them: each file loaded again only when it
    changed on disk (a `--write-baseline` in a terminal applies to open documents at once)."""

    def __init__(self) -> None:
        self._loaded: dict[Path, tuple[tuple | None, Baseline | None, str | None]] = {}

    def get(self, path: Path) -> tuple[Baseline | None, str | None]:
        """(the baseline, or None when there is no file; a problem reading it, or None)."""
        try:
            status = os.stat(path)
            seen: tuple | None = (status.st_mtime_ns, status.st_size, status.st_ino)
        except OSError:
            seen = None
        known = self._loaded.get(path)
        if known is not None and known[0] == seen:
            return known[1], known[2]
        baseline: Baseline | None = None
        problem = None
        if seen is not None:
            try:
                baseline = load(path)
            except BaselineError as error:
                problem = str(error)
        self._loaded[path] = (seen, baseline, problem)
        return baseline, problem

    def clear(self) -> None:
        self._loaded.clear()
