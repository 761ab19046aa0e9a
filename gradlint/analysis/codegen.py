"""A node's code, generated as libcst generates it but without its per-expression context
managers: ``Module.code_for_node`` enters a generator context manager for every
expression and statement (to let position providers record them), about a third of the
cost of generating a small node's code. The text is the same: those contexts add no
token."""

from __future__ import annotations

import libcst as cst
from libcst._nodes.internal import CodegenState


class Unrecorded:
    """The context for a syntactic position no one records: it does nothing."""

    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        pass


UNRECORDED = Unrecorded()


class TextState(CodegenState):
    """libcst's code generation state, recording no position."""

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None, end_node=None):
        return UNRECORDED


def node_code(node: cst.CSTNode, module: cst.Module | None = None) -> str:
    """``module.code_for_node(node)``; without a module, ``cst.Module(body=())``'s (an
    indent of four spaces, ``\\n`` newlines)."""
    if module is None:
        state = TextState("    ", "\n")
    else:
        state = TextState(module.default_indent, module.default_newline)
    node._codegen(state)
    return "".join(state.tokens)
