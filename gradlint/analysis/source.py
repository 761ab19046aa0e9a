"""Source text handling: decoding bytes, line tables, comments and top-level blocks.

A module is analysed as a sequence of *blocks*, one per top-level statement (decorators
and ``else``/``except``/``finally`` clauses stay with their statement). Blocks are found
with a lexical scan, without a parse, so that an editor can re-parse only the block that
changed, and so that a syntax error in one block leaves the others analysable.
"""

from __future__ import annotations

import bisect
import codecs
import re
from dataclasses import dataclass

NEWLINE = re.compile(r"\r\n|\r|\n")

_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\r\n]*)
  | (?P<string>
        (?:[rRbBuUfF]{0,2})
        (?: \"\"\"(?:\\.|[^\\])*?\"\"\"
          | '''(?:\\.|[^\\])*?'''
          | "(?:\\.|[^"\\\r\n])*"
          | '(?:\\.|[^'\\\r\n])*'
        )
    )
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<continuation>\\(?:\r\n|\r|\n))
  | (?P<newline>\r\n|\r|\n)
    """,
    re.VERBOSE | re.DOTALL,
)

# A line at column 0 that continues the previous compound statement.
_CLAUSE = re.compile(r"(?:else|elif|except|finally)\b")
# A line at column 0 that can only start a new statement, even inside an unclosed
# bracket: used to recover from half-typed code such as ``x = f(``.
_HARD_START = re.compile(r"(?:@|def\s|class\s|async\s+def\s)")


class SourceDecodeError(Exception):
    """The bytes are not valid text in the file's declared encoding."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def decode_source(data: bytes) -> str:
    """Decode a Python source file the way the interpreter does (BOM, PEP 263 cookie)."""
    encoding = "utf-8"
    body = data
    if data.startswith(codecs.BOM_UTF8):
        body = data[len(codecs.BOM_UTF8):]
    else:
        for raw_line in data.splitlines()[:2]:
            match = _COOKIE.match(raw_line)
            if match:
                encoding = match.group(1).decode("ascii")
                break
            if raw_line.strip() and not raw_line.lstrip().startswith(b"#"):
                break
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise SourceDecodeError(f"unknown encoding `{encoding}` in the coding declaration", 1, 0)
    try:
        return body.decode(encoding)
    except UnicodeDecodeError as error:
        prefix = body[: error.start]
        line = prefix.count(b"\n") + 1
        column = len(prefix[prefix.rfind(b"\n") + 1:].decode(encoding, errors="replace"))
        raise SourceDecodeError(
            f"file is not valid {encoding}: byte 0x{body[error.start]:02x} cannot be decoded",
            line,
            column,
        )


_NOISE = re.compile(_TOKEN.pattern.split("  | (?P<open>")[0], re.VERBOSE | re.DOTALL)


def without_comments_and_strings(text: str) -> str:
    """``code_only(text)``, faster: one substitution that visits only comments and strings."""
    return _NOISE.sub(" ", text)


def code_only(text: str) -> str:
    """``text`` with comments and string literals blanked out (for textual pre-checks)."""
    pieces = []
    last = 0
    for match in _TOKEN.finditer(text):
        if match.lastgroup in ("comment", "string"):
            pieces.append(text[last:match.start()])
            pieces.append(" ")
            last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


class NameSet(tuple):
    """Names a module binds to something rules look for (its aliases of gradcheck), to
    find in block texts: a tuple of the names, which also says whether a text holds one.

    A module may bind thousands (`check_7 = partial(gradcheck, ...)` in every test): a
    substring search per name and per block was quadratic. When every name is a word, a
    block holds one if one of its words is one (one pass over the text): a rule finds a
    use of a name only where the code names it, as a whole word."""

    def __new__(cls, names=()):
        return super().__new__(cls, names)

    def __init__(self, names=()):
        self._set = frozenset(self)
        self.words_only = all(_WORD_ONLY.fullmatch(name) for name in self)
        self._answers: dict[str, bool] = {}

    def in_text(self, text: str) -> bool:
        """Does ``text`` hold one of the names (as a word, when they are all words)?"""
        if len(self) < _FEW_NAMES or not self.words_only:
            return any(name in text for name in self)
        known = self._answers.get(text)
        if known is None:
            known = self._answers[text] = not self._set.isdisjoint(_WORD.findall(text))
        return known

    def __contains__(self, name: object) -> bool:
        return name in self._set


def code_lines(text: str) -> list[tuple[int, int]]:
    """The lines of ``text`` that begin a logical line of code (not inside brackets, a
    string or a backslash continuation, nor blank or only a comment), as (1-based line,
    offset of the line's first character), in order. For code that parses: no recovery
    from an unclosed bracket."""
    found = []
    line = 1
    depth = 0
    candidates = [(1, 0)]
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "string":
            line += len(NEWLINE.findall(match.group()))
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "continuation":
            line += 1
        elif kind == "newline":
            line += 1
            if depth == 0:
                candidates.append((line, match.end()))
    for line, offset in candidates:
        if _CODE_START.match(text, offset):
            found.append((line, offset))
    return found


_CODE_START = re.compile(r"[ \t\f]*[^ \t\f\r\n#]")


_WORD = re.compile(r"\w+")
_WORD_ONLY = re.compile(r"\w+")
_FEW_NAMES = 8  # fewer names: a substring search each is cheaper than splitting the text


@dataclass(frozen=True)
class Block:
    """One top-level statement (with the comments and blank lines before it)."""

    text: str
    start_line: int  # 1-based line of the block's first line in the file


@dataclass(frozen=True)
class ScannedSource:
    blocks: tuple[Block, ...]
    comments: dict[int, str]  # 1-based line -> text of the comment on that line (with '#')


def scan(text: str) -> ScannedSource:
    """Split ``text`` into top-level blocks and collect its comments."""
    comments: dict[int, str] = {}
    starts: list[int] = [0]  # offsets of the first character of each line
    logical: list[bool] = [True]  # does that line begin a logical line?
    depth = 0
    line = 1
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "comment":
            comments[line] = match.group()
        elif kind == "string":
            newlines = len(NEWLINE.findall(match.group()))
            for _ in range(newlines):
                line += 1
                starts.append(-1)  # a line inside a string: never a statement start
                logical.append(False)
            if newlines:
                # the string's last line has no usable offset; mark the continuation
                starts[-1] = -1
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "continuation":
            line += 1
            starts.append(match.end())
            logical.append(False)
        else:  # newline
            line += 1
            starts.append(match.end())
            logical.append(depth == 0)
            if depth:
                # recover from an unclosed bracket when a line can only start a statement
                rest = text[match.end(): match.end() + 12]
                if _HARD_START.match(rest):
                    depth = 0
                    logical[-1] = True

    block_starts: list[int] = []  # line indexes (0-based) that begin blocks
    previous_was_decorator = False
    for index, (offset, is_logical) in enumerate(zip(starts, logical)):
        if offset < 0 or not is_logical or offset >= len(text):
            continue
        first = text[offset]
        if first in " \t\f\r\n#":
            continue
        if index and (_CLAUSE.match(text, offset) or previous_was_decorator):
            previous_was_decorator = first == "@"
            continue
        previous_was_decorator = first == "@"
        block_starts.append(index)

    # Blocks: [start of block k, start of block k+1). Leading comments/blank lines before
    # the first statement belong to the first block; comment lines at column 0 right above
    # a statement belong to it (as libcst's leading_lines do): `# gradlint: inputs=...`.
    line_offsets = [m.end() for m in NEWLINE.finditer(text)]
    line_offsets.insert(0, 0)
    for k in range(1, len(block_starts)):
        start = block_starts[k]
        while start - 1 > block_starts[k - 1] and starts[start - 1] >= 0 and \
                text.startswith("#", line_offsets[start - 1]):
            start -= 1
        block_starts[k] = start
    blocks: list[Block] = []
    if not block_starts:
        return ScannedSource((Block(text, 1),), comments)
    block_starts[0] = 0
    for k, start_index in enumerate(block_starts):
        begin = line_offsets[start_index]
        end = line_offsets[block_starts[k + 1]] if k + 1 < len(block_starts) else len(text)
        blocks.append(Block(text[begin:end], start_index + 1))
    return ScannedSource(tuple(blocks), comments)


def rescan(old_text: str, old: ScannedSource, text: str) -> ScannedSource:
    """``scan(text)``, reusing the scan of ``old_text`` (an earlier version of the same
    document) outside the region that changed: the work is proportional to the edit, not
    to the file. Falls back to a full scan when the change may reach further (an opened
    string or bracket), which scanning the first unchanged block again detects."""
    if not old.blocks or not old_text or not text:
        return scan(text)
    prefix = _common_prefix(old_text, text)
    if prefix == len(old_text) == len(text):
        return old
    suffix = _common_suffix(old_text, text, min(len(old_text), len(text)) - prefix)
    removed, inserted = old_text[prefix:len(old_text) - suffix], text[prefix:len(text) - suffix]
    if any(quote in removed or quote in inserted for quote in _QUOTING):
        # a quote (or an escape) may pair with one far away, before the change as after it
        return scan(text)
    offsets = [0]
    for block in old.blocks:
        offsets.append(offsets[-1] + len(block.text))
    # start one block before the change: that block's first line and all before it are
    # unchanged, so it begins a block in the new text too, in the same lexical state
    first = max(0, bisect.bisect_right(offsets, prefix) - 2)
    # the first old block wholly in the unchanged tail: scanned again as a check
    check = bisect.bisect_left(offsets, len(old_text) - suffix)
    start = offsets[first]
    if check >= len(old.blocks):
        region_end = len(text)
    else:
        region_end = offsets[check + 1] + len(text) - len(old_text)
    region = scan(text[start:region_end])
    line_offset = old.blocks[first].start_line - 1
    middle = [Block(b.text, b.start_line + line_offset) for b in region.blocks]
    comments = {line: c for line, c in old.comments.items() if line < old.blocks[first].start_line}
    comments.update({line + line_offset: c for line, c in region.comments.items()})
    if check >= len(old.blocks):
        return ScannedSource(tuple(old.blocks[:first]) + tuple(middle), comments)
    checked = old.blocks[check]
    if len(middle) < 2 or middle[-1].text != checked.text or \
            not _token_boundary(text, start, region_end - len(checked.text)):
        return scan(text)  # the change reaches past the region (an opened string...)
    middle.pop()
    tail_line = middle[-1].start_line + _line_count(middle[-1].text)
    shift = tail_line - checked.start_line
    tail = [Block(b.text, b.start_line + shift) for b in old.blocks[check:]]
    comments.update({line + shift: c for line, c in old.comments.items()
                     if line >= checked.start_line})
    return ScannedSource(tuple(old.blocks[:first]) + tuple(middle) + tuple(tail), comments)


_QUOTING = ("'", '"', "\\")


def _token_boundary(text: str, begin: int, offset: int) -> bool:
    """Does no token (a string, above all) of ``text`` scanned from ``begin`` straddle
    ``offset``? (Then the lexical state there is the same as a scan of the whole text.)"""
    for match in _TOKEN.finditer(text, begin):
        if match.start() >= offset:
            return True
        if match.end() > offset:
            return False
    return True


def _line_count(text: str) -> int:
    """How many line breaks ``text`` holds."""
    return len(NEWLINE.findall(text))


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search with slice comparisons (memcmp): fast on big texts
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, max(0, limit)
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low
