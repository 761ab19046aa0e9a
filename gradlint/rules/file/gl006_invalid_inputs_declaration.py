from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.declarations import DECLARATION, DECORATOR, decorator_declaration, declaration_comments
from ...analysis.scopes import Site
from ...analysis.traverse import visit
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid

# a declaration comment, or a decorator (`@gradlint.inputs(`, `@inputs(` when imported)
MENTIONS_DECLARATION = re.compile(r"gradlint:\s*inputs|@\s*(?:[\w.]+\.)?inputs\s*\(")


class InvalidInputsDeclaration(Rule):
    """## What it does
    Checks `# gradlint: inputs=...` comments, which declare the inputs "Run gradcheck"
    uses for a Function or function: the expression must be valid Python, the comment must
    sit directly above a module-level `class` or `def` (or its decorators), and a tuple must
    have one element per input of `forward` (without `ctx`), or per required parameter of
    the function. The `@gradlint.inputs(...)` decorator is checked the same way: one
    positional argument per input, no keyword arguments.

    ## Why is this bad?
    A declaration that cannot be used is silently replaced by synthesized inputs (or a
    call site's), so the check runs on values you did not choose; a tuple with the wrong
    number of values makes every run fail before it checks anything.

    ## Example
    ```python
    # gradlint: inputs=(torch.randn(3, 4), torch.randn(4)
    class MatVec(torch.autograd.Function):
        ...
    ```

    Use instead:
    ```python
    # gradlint: inputs=(torch.randn(3, 4), torch.randn(4))
    class MatVec(torch.autograd.Function):
        ...
    ```

    or, with the decorator (also used by `check_gradients` and `pytest --gradlint`):
    ```python
    @gradlint.inputs(torch.randn(3, 4), torch.randn(4))
    class MatVec(torch.autograd.Function):
        ...
    ```

    The expression is evaluated in the module's namespace (with `torch` available); the
    tensors are copied to float64 and made to require grad for the check.

    ## Fix safety
    There is no fix: only the author knows the intended inputs.
    """

    code = "GL006"
    name = "invalid-inputs-declaration"
    severity = Severity.ERROR
    summary = "a `# gradlint: inputs=...` declaration that cannot be used"
    requires = MENTIONS_DECLARATION

    VALID = [
        Valid("""
            import torch

            # gradlint: inputs=(torch.randn(3, 4), torch.randn(4))
            class MatVec(torch.autograd.Function):
                @staticmethod
                def forward(ctx, m, v):
                    ctx.save_for_backward(m, v)
                    return m @ v

                @staticmethod
                def backward(ctx, grad):
                    m, v = ctx.saved_tensors
                    return grad[:, None] * v, m.t() @ grad
            """),
        Valid("""
            import torch

            # gradlint: inputs=(torch.randn(5),)
            @torch.jit.ignore
            def soft(x, temperature=1.0):
                return (x / temperature).softmax(0)
            """, why="one required parameter; defaults may be left out"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            # gradlint: inputs=(torch.randn(3, 4), torch.randn(4)
            class MatVec(torch.autograd.Function):
                @staticmethod
                def forward(ctx, m, v):
                    return m @ v
            """,
            message="`# gradlint: inputs=` is not a valid Python expression: "
                    "(torch.randn(3, 4), torch.randn(4)",
            range=(3, 1, 3, 54),
        ),
        Invalid(
            """
            import torch

            # gradlint: inputs=(torch.randn(3),)
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    return a * b

                @staticmethod
                def backward(ctx, grad):
                    return grad, grad
            """,
            message="`# gradlint: inputs=` declares 1 input but forward takes 2 (`a`, `b`)",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        yield from self._decorators(block)
        attached: dict[int, cst.FunctionDef | cst.ClassDef] = {}
        for stmt in block.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                for comment in declaration_comments(stmt, block.module):
                    if DECLARATION.search(comment.value):
                        attached[id(comment)] = stmt
        site = _site(block)
        for comment in _all_comments(block.module):
            match = DECLARATION.search(comment.value)
            if match is None:
                continue
            owner = attached.get(id(comment))
            if owner is None:
                yield Report(comment, "`# gradlint: inputs=` must be directly above a module-level "
                             "class or def; here it has no effect", site, severity=Severity.WARNING)
                continue
            expression = match.group("expr")
            try:
                parsed = cst.parse_expression(expression)
            except cst.ParserSyntaxError:
                yield Report(comment, f"`# gradlint: inputs=` is not a valid Python expression: "
                             f"{expression}", site)
                continue
            problem = _count_problem(block, owner, parsed)
            if problem:
                yield Report(comment, f"`# gradlint: inputs=` {problem}", site)


    def _decorators(self, block: BlockAnalysis) -> Iterator[Report]:
        def qualified(expression: cst.BaseExpression) -> str | None:
            return block.context.qualified(expression, block.context.scope)

        site = _site(block)
        for stmt in block.module.body:
            if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            for decorator in stmt.decorators:
                call = decorator.decorator
                if not isinstance(call, cst.Call) or qualified(call.func) != DECORATOR:
                    continue
                if any(arg.keyword is not None or arg.star == "**" for arg in call.args):
                    yield Report(decorator, "`@gradlint.inputs` takes the inputs as positional "
                                 "arguments, one per input", site)
                    continue
                found = decorator_declaration(stmt, block.module, qualified)
                if found is None:
                    continue
                problem = _count_problem(block, stmt, cst.parse_expression(found[0]))
                if problem:
                    yield Report(decorator, f"`@gradlint.inputs` {problem}", site)


def _site(block: BlockAnalysis) -> Site:
    from ...analysis.scopes import Frame

    first = block.indexes[0] if len(block.indexes) else 0
    return Site(block.context.scope, (Frame(block.context.statements, first),))


def _all_comments(module: cst.Module) -> list[cst.Comment]:
    found: list[cst.Comment] = []

    class Visitor(cst.CSTVisitor):
        def visit_Comment(self, node: cst.Comment) -> None:
            found.append(node)

    visit(module, Visitor())
    return found


def _count_problem(block: BlockAnalysis, owner: cst.FunctionDef | cst.ClassDef,
                   parsed: cst.BaseExpression) -> str | None:
    if not isinstance(parsed, cst.Tuple) or any(isinstance(e, cst.StarredElement) for e in parsed.elements):
        return None
    count = len(parsed.elements)
    if isinstance(owner, cst.ClassDef):
        function = next((f for f in block.autograd_functions if f.node is owner), None)
        signature = function.forward_inputs() if function is not None else None
        if signature is None:
            return None
        params, required = signature
        total = len(params)
        what = "forward takes"
    else:
        params = [*owner.params.posonly_params, *owner.params.params]
        if isinstance(owner.params.star_arg, cst.Param):
            return None
        required = sum(1 for p in params if p.default is None)
        total = len(params)
        what = f"`{owner.name.value}` takes"
    if required <= count <= total:
        return None
    names = ", ".join(f"`{p.name.value}`" for p in params)
    expected = str(total) if required == total else f"{required} to {total}"
    return (f"declares {count} input{'s' if count != 1 else ''} but {what} {expected} "
            f"({names})")
