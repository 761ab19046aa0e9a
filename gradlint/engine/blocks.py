"""Parsing blocks, once: each block's tree, positions and summary are cached by its text."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Callable, Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange
from libcst.metadata.position_provider import WhitespaceInclusivePositionProvidingCodegenState

from ..analysis.codegen import UNRECORDED, node_code
from ..analysis.names import BindingKind, ScopeTable, body_statements, dotted_name
from .statement_lines import statement_lines


@dataclass(frozen=True)
class SyntaxProblem:
    message: str
    line: int  # 1-based, relative to the block
    column: int  # 0-based
    end_line: int
    end_column: int


# Blocks from this size on place findings statement by statement (``resolve_positions_in``);
# in smaller ones, finding the statements' lines costs more than the code generation it
# spares (the custom-op and mixed shapes: 0.11 -> 0.13 s; a class of 8,000 lines: 0.30 ->
# 0.15 s)
PLACE_BY_STATEMENT_CHARS = 4096


@dataclass(eq=False)
class ParsedBlock:
    text: str
    module: cst.Module | None
    error: SyntaxProblem | None
    _summary: tuple | None = field(default=None, repr=False)  # (made when first asked for)
    # by id(node): ((line, column), (line, column)), turned into CodeRanges when asked
    _positions: dict | None = field(default=None, repr=False)
    _whitespace_positions: dict | None = field(default=None, repr=False)

    @property
    def summary(self) -> tuple:
        """What other blocks may depend on (``summarize``): read only by a cache of
        findings, so made when first asked for."""
        if self._summary is None:
            self._summary = summarize(self.module, self.text) if self.module is not None else ()
        return self._summary

    def position(self, node: cst.CSTNode) -> CodeRange:
        return _range(self.span(node))

    def whitespace_position(self, node: cst.CSTNode) -> CodeRange:
        """The exact span of ``module.code_for_node(node)``: what a replacement replaces."""
        return _range(self.whitespace_span(node))

    def span(self, node: cst.CSTNode) -> tuple[tuple[int, int], tuple[int, int]]:
        """``position(node)`` as ((line, column), (line, column))."""
        found = self._positions.get(id(node)) if self._positions is not None else None
        if found is None:
            self._resolve_positions()
            found = self._positions[id(node)]  # type: ignore[index]
        return found

    def whitespace_span(self, node: cst.CSTNode) -> tuple[tuple[int, int], tuple[int, int]]:
        """``whitespace_position(node)`` as ((line, column), (line, column))."""
        found = self._whitespace_positions.get(id(node)) if self._whitespace_positions is not None else None
        if found is None:
            self._resolve_positions()
            found = self._whitespace_positions[id(node)]  # type: ignore[index]
        return found

    def forget_positions(self) -> None:
        self._positions = self._whitespace_positions = None

    def resolve_positions_of(self, nodes: Iterable[cst.CSTNode]) -> None:
        """Positions of at least ``nodes``: code generation stops once the last of them is
        generated (a block's findings tend to sit in its first half: about half the cost of
        resolving every position, which took a tenth of a cold run full of findings), and
        records only them (see ``_WantedPositionsState``). Any other node asked for later
        resolves every position."""
        placed = self._whitespace_positions
        wanted = {id(node) for node in nodes if placed is None or id(node) not in placed}
        if not wanted:
            return
        if "\r" in self.text:  # (a lone CR ends a line: the full state counts lines token by token)
            self._resolve_positions(None if placed is not None else wanted)
            return
        assert self.module is not None
        state = _WantedPositionsState(self.module.default_indent, self.module.default_newline, wanted)
        try:
            self.module._codegen(state)
        except _AllPlaced:
            pass
        self._add_positions(*state.spans())

    def _add_positions(self, syntactic: dict, whitespace: dict) -> None:
        """Spans of more nodes (each exact: those already placed keep theirs)."""
        if self._positions is None or self._whitespace_positions is None:
            self._positions, self._whitespace_positions = syntactic, whitespace
        else:
            self._positions.update(syntactic)
            self._whitespace_positions.update(whitespace)

    def resolve_positions_in(self, pairs: Iterable[tuple[cst.CSTNode, cst.BaseStatement]]) -> None:
        """Positions of at least the nodes of ``pairs``, each given with the statement of
        the block that holds it: from the code generation of those statements alone, each
        started on the line ``statement_lines`` finds it on (the text there must be the
        code generated), not of all the block before them. Else as
        ``resolve_positions_of``."""
        placed = self._whitespace_positions
        pairs = [pair for pair in pairs if placed is None or id(pair[0]) not in placed]
        if not pairs:
            return
        if len(self.text) < PLACE_BY_STATEMENT_CHARS or "\r" in self.text or \
                not self._place_statements(pairs):
            self.resolve_positions_of(node for node, _ in pairs)

    def _place_statements(self, pairs: list[tuple[cst.CSTNode, cst.BaseStatement]]) -> bool:
        module = self.module
        assert module is not None
        lines = statement_lines(module, self.text)
        if lines is None:
            return False
        wanted: dict[int, tuple[cst.BaseStatement, set[int]]] = {}
        for node, statement in pairs:
            if id(statement) not in wanted:
                wanted[id(statement)] = (statement, {id(statement)})
            wanted[id(statement)][1].add(id(node))
        line_offsets = [0, *(match.end() for match in _LINE_FEED.finditer(self.text))]
        syntactic: dict[int, tuple] = {}
        whitespace: dict[int, tuple] = {}
        for statement, ids in wanted.values():
            found = lines.get(id(statement))
            if found is None:
                return False
            first_line, indentation = found
            line = first_line - len(statement.leading_lines)
            if not 1 <= line <= len(line_offsets):
                return False
            state = _WantedPositionsState(module.default_indent, module.default_newline, ids)
            if indentation:
                state.indent_tokens.append(indentation)
            try:
                statement._codegen(state)
            except _AllPlaced:
                pass
            if state.remaining or not self.text.startswith("".join(state.tokens), line_offsets[line - 1]):
                return False  # a node elsewhere, or the statement is not where the lines said
            placed_syntactic, placed_whitespace = state.spans(line)
            syntactic.update(placed_syntactic)
            whitespace.update(placed_whitespace)
        self._add_positions(syntactic, whitespace)
        return True

    def _resolve_positions(self, wanted: set[int] | None = None) -> None:
        """Both kinds of positions from one code generation; the same values as libcst's
        ``PositionProvider``/``WhitespaceInclusivePositionProvider``. With ``wanted`` (node
        ids), generation may stop when all of those are placed."""
        assert self.module is not None
        state = _PositionsState(self.module.default_indent, self.module.default_newline, wanted)
        try:
            self.module._codegen(state)
        except Exception:
            if not state.all_placed:
                raise
            # stopped early: the nodes still open recorded spans cut short (a syntactic
            # position is recorded on the way out, and may then fail to find a child that
            # was never generated); only finished nodes keep theirs
            state.syntactic = {key: span for key, span in state.syntactic.items()
                               if key in state.whitespace}
        self._positions, self._whitespace_positions = state.syntactic, state.whitespace


def _range(span: tuple) -> CodeRange:
    (start_line, start_column), (end_line, end_column) = span
    return CodeRange(CodePosition(start_line, start_column), CodePosition(end_line, end_column))


class _AllPlaced(Exception):
    """Stops code generation: every wanted node has its positions."""


_NEWLINE = re.compile(r"\r\n?|\n")


class _PositionsState(WhitespaceInclusivePositionProvidingCodegenState):
    """What libcst's two position-providing states record, in one code generation, as
    plain tuples by node id: theirs make a CodePosition and a CodeRange per node, hash
    nodes in Python, and enter a generator context manager per syntactic position (1.6x
    the cost; positions took as long as a parse on files full of findings)."""

    def __init__(self, default_indent: str, default_newline: str, wanted: set[int] | None):
        super().__init__(default_indent, default_newline, None)
        self.line = 1
        self.column = 0
        self.stack: list[tuple[int, int]] = []
        self.syntactic: dict[int, tuple] = {}
        self.whitespace: dict[int, tuple] = {}
        self.wanted = wanted
        self.all_placed = False

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        span = (self.stack.pop(), (self.line, self.column))
        key = id(node)
        self.whitespace[key] = span
        if key not in self.syntactic:
            self.syntactic[key] = span
        wanted = self.wanted
        if wanted is not None:
            wanted.discard(key)
            if not wanted:
                self.all_placed = True
                raise _AllPlaced

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """``record_syntactic_position``: the span of a node without its surrounding
    whitespace, or hoisted from the children libcst names."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _PositionsState, node, start_node, end_node):
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc) -> None:
        state = self.state
        start = self.start if self.start_node is None else state.syntactic[id(self.start_node)][0]
        end = (state.line, state.column) if self.end_node is None else \
            state.syntactic[id(self.end_node)][1]
        state.syntactic[id(self.node)] = (start, end)


class _WantedPositionsState(CodegenState):
    """A code generation that records the spans of the wanted nodes only (and of the nodes
    their syntactic spans are taken from), as token indices turned into (line, column) at
    the end: the hooks libcst calls for every node then cost a set lookup, and a syntactic
    position of a node nobody asked for a shared do-nothing context (libcst's own states
    enter a generator context manager for each). The same values as ``_PositionsState``:
    a position is the text generated before it, whose lines split at ``\\n`` in a text
    without ``\\r`` (the caller's condition). Spans are recorded exactly as there: on the way
    out of a node, the syntactic one on leaving its ``record_syntactic_position`` (or from
    the ``start_node``/``end_node`` libcst names, which then are recorded too, being
    generated inside it), else equal to the node's whole span."""

    def __init__(self, default_indent: str, default_newline: str, wanted: set[int]):
        super().__init__(default_indent, default_newline, None)
        self.needed = set(wanted)
        self.remaining = wanted
        self.starts: dict[int, int] = {}
        self.syntactic: dict[int, tuple[int, int]] = {}
        self.whitespace: dict[int, tuple[int, int]] = {}

    def pop_trailing_newline(self) -> None:
        """Kept: the indices count every token generated (the positions of ``_PositionsState``
        count the module's last newline too)."""

    def before_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.needed:
            self.starts[key] = len(self.tokens)

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.needed:
            span = (self.starts[key], len(self.tokens))
            self.whitespace[key] = span
            if key not in self.syntactic:
                self.syntactic[key] = span
            remaining = self.remaining
            remaining.discard(key)
            if not remaining:
                raise _AllPlaced

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None, end_node=None):
        if id(node) not in self.needed:
            return UNRECORDED
        if start_node is not None:
            self.needed.add(id(start_node))
        if end_node is not None:
            self.needed.add(id(end_node))
        return _WantedSyntactic(self, node, start_node, end_node)

    def spans(self, first_line: int = 1) -> tuple[dict, dict]:
        """Both kinds of spans as ((line, column), (line, column)) by node id, for the
        nodes whose generation finished (a syntactic span recorded in a node still open
        when generation stopped is left out, as ``_PositionsState``'s is); the generated
        code starts at column 0 of ``first_line``."""
        tokens = self.tokens
        offsets = [0, *accumulate(map(len, tokens))]
        text = "".join(tokens)
        newlines = [match.start() for match in _LINE_FEED.finditer(text)]

        def place(index: int) -> tuple[int, int]:
            offset = offsets[index]
            line = bisect_left(newlines, offset)
            return line + first_line, offset - (newlines[line - 1] + 1 if line else 0)

        whitespace = {key: (place(start), place(end)) for key, (start, end) in self.whitespace.items()}
        syntactic = {key: (place(start), place(end)) for key, (start, end) in self.syntactic.items()
                     if key in whitespace}
        return syntactic, whitespace


_LINE_FEED = re.compile("\n")


class _WantedSyntactic:
    """``record_syntactic_position`` of a wanted node, as token indices."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _WantedPositionsState, node, start_node, end_node):
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = len(self.state.tokens)

    def __exit__(self, error_type, *exc) -> None:
        if error_type is not None:
            return  # generation stopped inside: the node is not finished
        state = self.state
        start = self.start if self.start_node is None else state.syntactic[id(self.start_node)][0]
        end = len(state.tokens) if self.end_node is None else state.syntactic[id(self.end_node)][1]
        state.syntactic[id(self.node)] = (start, end)


def parse_block(text: str) -> ParsedBlock:
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        return ParsedBlock(text, None, _syntax_problem(text, error))
    except RecursionError:
        return ParsedBlock(text, None, SyntaxProblem("code is nested too deeply to parse", 1, 0, 1, 0))
    return ParsedBlock(text, module, None)


def _syntax_problem(text: str, error: cst.ParserSyntaxError) -> SyntaxProblem:
    """CPython's diagnosis when it has one (clearer, better placed), else libcst's."""
    try:
        compile(text, "<block>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except SyntaxError as syntax:
        line = syntax.lineno or 1
        column = max((syntax.offset or 1) - 1, 0)
        end_line = syntax.end_lineno or line
        end_column = max((syntax.end_offset or (column + 2)) - 1, column)
        if (end_line, end_column) <= (line, column):
            end_line, end_column = line, column + 1
        message = syntax.msg
        return SyntaxProblem(f"syntax error: {message}", line, column, end_line, end_column)
    except (ValueError, RecursionError, MemoryError):
        pass
    message = str(error.message).replace("parser error: ", "")
    return SyntaxProblem(f"syntax error: {message}", error.raw_line, error.raw_column,
                         error.raw_line, error.raw_column + 1)


def summarize(module: cst.Module, text: str) -> tuple:
    """What other blocks may depend on, as a hashable value.

    Other statements are represented by the block's text; functions and classes only by
    their signatures, so that editing inside a body does not invalidate other blocks.
    """
    parts: list = []
    if any(not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) for stmt in module.body):
        parts.append(("text", text))
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            parts.append(("def", stmt.name.value, _signature(module, stmt)))
        elif isinstance(stmt, cst.ClassDef):
            members = []
            table = ScopeTable.of_statements(body_statements(stmt.body))
            for name, bindings in sorted(table.bindings.items()):
                kinds = tuple(b.kind.value for b in bindings)
                signature = ()
                if len(bindings) == 1 and bindings[0].kind is BindingKind.DEF:
                    node = bindings[0].node
                    assert isinstance(node, cst.FunctionDef)
                    signature = _signature(module, node)
                members.append((name, kinds, signature))
            bases = tuple(node_code(arg, module) for arg in stmt.bases)
            parts.append(("class", stmt.name.value, bases, tuple(members)))
    return tuple(parts)


def _signature(module: cst.Module, node: cst.FunctionDef) -> tuple:
    decorators = tuple(
        dotted_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or "?"
        for d in node.decorators)
    return decorators, node_code(node.params, module)


# Memory a parsed block takes, per character of its text (measured with tracemalloc on
# autograd code: about 48 bytes per character for libcst's tree), plus a fixed part.
TREE_BYTES_PER_CHAR = 48
ENTRY_BYTES = 1024


def estimated_bytes(entry: ParsedBlock) -> int:
    return ENTRY_BYTES + len(entry.text) * (TREE_BYTES_PER_CHAR if entry.module is not None else 2)


class BlockCache:
    """Parsed blocks keyed by their text: an LRU bounded by (estimated) bytes, so that an
    editor session's memory stays flat however many distinct edits it sees. Entries used
    since the last ``mark()`` (the lint in progress: the document being edited) are never
    evicted, so a big document is not re-parsed on every keystroke."""

    def __init__(self, max_bytes: int = 64 * 2 ** 20,
                 parser: Callable[[str], ParsedBlock] = parse_block):
        self.max_bytes = max_bytes
        self.parser = parser
        self._entries: OrderedDict[str, tuple[ParsedBlock, int, int]] = OrderedDict()  # entry, bytes, epoch
        self.bytes = 0
        self.epoch = 0
        self.hits = 0
        self.misses = 0
        self.parsed_bytes = 0  # estimated bytes of every block parsed so far (never decreases)

    def mark(self) -> None:
        """A new lint starts: what it uses is protected from eviction until the next mark."""
        self.epoch += 1

    def get(self, text: str) -> ParsedBlock:
        found = self._entries.get(text)
        if found is not None:
            self._entries[text] = (found[0], found[1], self.epoch)
            self._entries.move_to_end(text)
            self.hits += 1
            return found[0]
        self.misses += 1
        entry = self.parser(text)
        size = estimated_bytes(entry)
        self._entries[text] = (entry, size, self.epoch)
        self.bytes += size
        self.parsed_bytes += size
        return entry

    def trim(self) -> None:
        """Evict the least recently used entries the current lint did not use, down to the
        budget. (Called once a lint has touched all its blocks: evicting during the parse
        would drop the blocks after an edit before they are reached, and re-parse them.)"""
        while self.bytes > self.max_bytes and self._entries:
            text, (entry, size, epoch) = next(iter(self._entries.items()))
            if epoch == self.epoch:
                break  # everything left is in use by the current lint
            del self._entries[text]
            self.bytes -= size

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, text: str) -> bool:
        """Is the block with this text parsed already?"""
        return text in self._entries

    def texts(self):
        """The texts of the blocks held."""
        return self._entries.keys()
