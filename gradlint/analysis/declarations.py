"""`# gradlint: inputs=...` comments: inputs declared for "Run gradcheck"."""

from __future__ import annotations

import re

import libcst as cst

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


def declared_inputs(node: cst.FunctionDef | cst.ClassDef, module: cst.Module
                    ) -> tuple[str, cst.Comment] | None:
    """The expression of the last declaration above ``node``, with its comment."""
    for comment in reversed(declaration_comments(node, module)):
        match = DECLARATION.search(comment.value)
        if match:
            return match.group("expr"), comment
    return None
