"""Source text handling: decoding bytes, line tables, comments and top-level blocks.

A module is analysed as a sequence of *blocks*, one per top-level statement (decorators
and ``else``/``except``/``finally`` clauses stay with their statement). Blocks are found
with a lexical scan, without a parse, so that an editor can re-parse only the block that
changed, and so that a syntax error in one block leaves the others analysable.
"""

from __future__ import annotations

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
