"""Open documents: their text, version, incremental edits and position encodings.

LSP positions count lines split at ``\\n``, ``\\r\\n`` and ``\\r`` only (not at form feeds
or other characters ``str.splitlines`` treats as breaks), and columns in code units of
the negotiated encoding: UTF-16 by default, UTF-8 or UTF-32 when agreed. gradlint's
engine counts columns in code points; this module converts between the two.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ..analysis.source import NEWLINE

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in code units of ``encoding``."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def column_from_units(line: str, column: int, encoding: str) -> int:
    """Code-point column of a client column (clamped to the line, never inside a character)."""
    if encoding == UTF32:
        return min(column, len(line))
    count = 0
    for index, ch in enumerate(line):
        width = len(ch.encode("utf-8", "surrogatepass")) if encoding == UTF8 else (2 if ord(ch) > 0xFFFF else 1)
        if count + width > column:
            return index
        count += width
    return len(line)


@dataclass
class Document:
    uri: str
    text: str
    version: int | None
    language_id: str = "python"
    _starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._reindex()

    def _reindex(self) -> None:
        self._starts = [0] + [m.end() for m in NEWLINE.finditer(self.text)]

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line(self, number: int) -> str:
        """Line ``number`` (0-based) without its line ending."""
        if number < 0 or number >= len(self._starts):
            return ""
        start = self._starts[number]
        end = self._starts[number + 1] if number + 1 < len(self._starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def offset(self, line: int, column_units: int, encoding: str) -> int:
        """Offset in ``text`` of an LSP position (0-based line, client units)."""
        if line >= len(self._starts):
            return len(self.text)
        if line < 0:
            return 0
        text = self.line(line)
        return self._starts[line] + column_from_units(text, column_units, encoding)

    def to_client(self, line: int, column: int, encoding: str) -> tuple[int, int]:
        """(0-based line, client column) of an engine position (1-based line, code points)."""
        index = line - 1
        text = self.line(index)
        column = min(column, len(text))
        return index, units(text[:column], encoding)

    def position_of(self, offset: int) -> tuple[int, int]:
        """(1-based line, code-point column) of an offset."""
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line]

    def apply_change(self, text: str, start: tuple[int, int] | None,
                     end: tuple[int, int] | None, encoding: str) -> None:
        """Apply one content change; ``start``/``end`` are (line, client column), or
        None for a full replacement."""
        if start is None or end is None:
            self.text = text
            self._reindex()
            return
        begin = self.offset(start[0], start[1], encoding)
        finish = max(begin, self.offset(end[0], end[1], encoding))
        self.text = self.text[:begin] + text + self.text[finish:]
        self._reindex_edit(begin, finish, len(text) - (finish - begin))

    def _reindex_edit(self, begin: int, finish: int, delta: int) -> None:
        """Update the line starts after replacing ``[begin, finish)``: only the lines around
        the edit are searched again (a `\r` and a `\n` may join or part at its ends)."""
        starts = self._starts
        first = max(0, bisect.bisect_right(starts, begin) - 2)
        tail = bisect.bisect_right(starts, finish + 1)  # old starts wholly after the edit
        region_end = starts[tail] + delta if tail < len(starts) else len(self.text)
        middle = [m.end() for m in NEWLINE.finditer(self.text, starts[first], region_end)]
        shifted = [position + delta for position in starts[tail:]] if delta else starts[tail:]
        if middle and shifted and middle[-1] == shifted[0]:
            middle.pop()
        self._starts = starts[:first + 1] + middle + shifted


class DocumentStore:
    def __init__(self) -> None:
        self._documents: dict[str, Document] = {}

    def open(self, uri: str, text: str, version: int | None, language_id: str = "python") -> Document:
        document = Document(uri, text, version, language_id)
        self._documents[uri] = document
        return document

    def get(self, uri: str) -> Document | None:
        return self._documents.get(uri)

    def close(self, uri: str) -> None:
        self._documents.pop(uri, None)

    def __iter__(self):
        return iter(list(self._documents.values()))

    def __len__(self) -> int:
        return len(self._documents)
