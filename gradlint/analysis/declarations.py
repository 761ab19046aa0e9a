"""Inputs declared for "Run gradcheck": `# gradlint: inputs=...` comments and the
`@gradlint.inputs(...)` decorator (gradlint/testing/declare.py)."""

from __future__ import annotations

import re
from typing import Callable

import libcst as cst

from .codegen import node_code

DECLARATION = re.compile(r"^#\s*gradlint:\s*inputs\s*=\s*(?P<expr>.*?)\s*$")


def declaration_comments(node: cst.FunctionDef | cst.ClassDef, module: cst.Module
                         ) -> list[cst.Comment]:
    """Comments right above a class or def (and above its decorators), in order; for the
    first statement of a module they include the module's header comments."""
    lines = list(node.leading_lines)
    if module.body and module.body[0] is node:
        lines = list(module.header) + lines
    for decorator in node.decorators:
        lines.extend(decorator.leading_lines)
    if node.decorators:
        lines.extend(node.lines_after_decorators)
    return [line.comment for line in lines if line.comment is not None]


DECORATOR = "gradlint.inputs"


def decorator_declaration(node: cst.FunctionDef | cst.ClassDef, module: cst.Module,
                          qualified: Callable[[cst.BaseExpression], str | None]
                          ) -> tuple[str, cst.Decorator] | None:
    """`@gradlint.inputs(a, b)` on ``node``: its arguments as one tuple expression
    (``(a, b)``, evaluated like a comment's), and the decorator. ``qualified`` resolves a
    name to its qualified name (imports followed)."""
    for decorator in node.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call) or qualified(call.func) != DECORATOR:
            continue
        if any(arg.keyword is not None or arg.star == "**" for arg in call.args):
            return None
        values = [node_code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT), module)
                  for arg in call.args]
        trailing = "," if len(values) == 1 else ""
        return "(" + ", ".join(values) + trailing + ")", decorator
    return None


def declared_inputs(node: cst.FunctionDef | cst.ClassDef, module: cst.Module,
                    qualified: Callable[[cst.BaseExpression], str | None] | None = None
                    ) -> tuple[str, cst.CSTNode] | None:
    """The declared inputs of ``node`` and the node that declares them: its
    `@gradlint.inputs(...)` decorator (when ``qualified`` is given), else the last
    `# gradlint: inputs=` comment above it."""
    if qualified is not None and node.decorators:
        found = decorator_declaration(node, module, qualified)
        if found is not None:
            return found
    for comment in reversed(declaration_comments(node, module)):
        match = DECLARATION.search(comment.value)
        if match:
            return match.group("expr"), comment
    return None
