"""Where each statement of a parsed block starts, read from the block's text: so that the
positions of a finding's nodes need the code generation of their statement only, not of
everything before it in the block (a class of hundreds of tests is one block).

Each statement of the tree, its decorators and its clauses (``elif``, ``else``,
``except``, ``finally``) begin one logical line of code, in the tree's order; the text's
logical lines (``code_lines``) are paired with them one to one. The pairing is checked
as it goes (every line begins with the statement's indentation, then its keyword for a
compound statement), and refused when the counts differ or a statement kind is not
known here; whatever it yields is checked again by the caller, which generates the
statement's code and compares it with the text at that place.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.source import code_lines


class _Mismatch(Exception):
    """The tree's statements and the text's logical lines do not pair up."""


def statement_lines(module: cst.Module, text: str) -> dict[int, tuple[int, str]] | None:
    """id(statement) -> (1-based line of its first code line, its indentation) for every
    statement of ``module`` parsed from ``text`` (a decorated definition's first code line
    is its first decorator's), or None when the pairing fails."""
    pairing = _Pairing(text, code_lines(text), module.default_indent)
    try:
        for statement in module.body:
            pairing.statement(statement, "")
    except _Mismatch:
        return None
    if pairing.index != len(pairing.lines):
        return None
    return pairing.found


class _Pairing:
    def __init__(self, text: str, lines: list[tuple[int, int]], default_indent: str):
        self.text = text
        self.lines = lines
        self.index = 0
        self.default_indent = default_indent
        self.found: dict[int, tuple[int, str]] = {}

    def take(self, prefix: str, keyword: str | None) -> int:
        """The next logical line, which must begin with ``prefix`` and then ``keyword``
        (a word, or ``@``) or, without one, with anything but more indentation."""
        if self.index >= len(self.lines):
            raise _Mismatch
        line, offset = self.lines[self.index]
        self.index += 1
        text = self.text
        if not text.startswith(prefix, offset):
            raise _Mismatch
        at = offset + len(prefix)
        if at >= len(text) or text[at] in " \t\f":
            raise _Mismatch
        if keyword is not None:
            end = at + len(keyword)
            if not text.startswith(keyword, at) or (
                    keyword != "@" and end < len(text) and (text[end].isalnum() or text[end] == "_")):
                raise _Mismatch
        return line

    def statement(self, node: cst.BaseStatement, prefix: str) -> None:
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            self.found[id(node)] = (self.take(prefix, None), prefix)
        elif kind is cst.FunctionDef or kind is cst.ClassDef:
            first = None
            for _ in node.decorators:  # type: ignore[union-attr]
                line = self.take(prefix, "@")
                first = line if first is None else first
            keyword = "class" if kind is cst.ClassDef else \
                ("def" if node.asynchronous is None else "async")  # type: ignore[union-attr]
            line = self.take(prefix, keyword)
            self.found[id(node)] = (line if first is None else first, prefix)
            self.suite(node.body, prefix)  # type: ignore[union-attr]
        elif kind is cst.If:
            self.found[id(node)] = (self.take(prefix, "if"), prefix)
            self.suite(node.body, prefix)  # type: ignore[union-attr]
            other = node.orelse  # type: ignore[union-attr]
            while type(other) is cst.If:
                self.found[id(other)] = (self.take(prefix, "elif"), prefix)
                self.suite(other.body, prefix)
                other = other.orelse
            self.clause(other, prefix, "else")
        elif kind is cst.For or kind is cst.While or kind is cst.With:
            keyword = {cst.For: "for", cst.While: "while", cst.With: "with"}[kind]
            if getattr(node, "asynchronous", None) is not None:
                keyword = "async"
            self.found[id(node)] = (self.take(prefix, keyword), prefix)
            self.suite(node.body, prefix)  # type: ignore[union-attr]
            self.clause(getattr(node, "orelse", None), prefix, "else")
        elif kind is cst.Try or kind is cst.TryStar:
            self.found[id(node)] = (self.take(prefix, "try"), prefix)
            self.suite(node.body, prefix)  # type: ignore[union-attr]
            for handler in node.handlers:  # type: ignore[union-attr]
                self.clause(handler, prefix, "except")
            self.clause(node.orelse, prefix, "else")  # type: ignore[union-attr]
            self.clause(node.finalbody, prefix, "finally")  # type: ignore[union-attr]
        else:  # (match statements: their cases' indentation is the match's own)
            raise _Mismatch

    def clause(self, node, prefix: str, keyword: str) -> None:
        if node is not None:
            self.take(prefix, keyword)
            self.suite(node.body, prefix)

    def suite(self, body: cst.BaseSuite, prefix: str) -> None:
        """An indented body's statements (a body on the header's line adds no line)."""
        if type(body) is cst.IndentedBlock:
            inner = prefix + (self.default_indent if body.indent is None else body.indent)
            for statement in body.body:
                self.statement(statement, inner)
