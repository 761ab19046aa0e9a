from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis import traverse
from ...analysis.autograd_functions import AutogradFunction, Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import compound_sites, lines, names_in, returns
from ...analysis.names import dotted_name, target_names
from ...analysis.test_context import expects_exception
from ...findings import Severity
from ..base import MENTIONS_GRADCHECK, Invalid, Report, Rule, Valid

MENTIONS_GRADGRADCHECK = re.compile(r"gradgradcheck")
_NO_GRAD = frozenset({"no_grad", "inference_mode"})


class GradgradcheckOnOnceDifferentiable(Rule):
    """## What it does
    Checks for `gradgradcheck` on code that applies a custom `torch.autograd.Function`
    whose `backward` cannot be differentiated: it is decorated with
    `@once_differentiable` or `@torch.no_grad()` (reported as an error), or it returns
    gradients computed inside `with torch.no_grad():` or straight from `.detach()`
    (reported as a warning: part of the result may still be differentiable).

    ## Why is this bad?
    gradgradcheck differentiates the output of `backward`. When backward runs without
    building a graph, the second-order analytical Jacobian is all zeros. Measured with
    torch 2.13: `@once_differentiable` passes `gradcheck` and then fails
    `gradgradcheck` with `GradcheckError: Jacobian mismatch for output 0 with respect to
    input 0` (analytical all zeros; for a linear Function the mismatch is "with respect
    to input 1", the grad_output); a backward computing under `torch.no_grad()` fails
    with `GradcheckError: Numerical gradient for function expected to be zero`; one that
    multiplies by a `.detach()`ed saved input fails with the Jacobian mismatch. The
    message never says "once differentiable". (A `.detach()` used only for a shape or
    a count passes, so `.detach()` is reported only in returned expressions.)

    ## Example
    ```python
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x

    gradgradcheck(Square.apply, (x,))
    ```

    Use instead: drop `@once_differentiable` when backward is written with
    differentiable torch ops (as here), or check only first derivatives
    (`gradcheck`) for a Function that is meant to be differentiated once.

    ## Fix safety
    No fix: removing `@once_differentiable` is only right when backward really is
    differentiable.
    """

    code = "GL016"
    name = "gradgradcheck-on-once-differentiable"
    severity = Severity.ERROR
    summary = "gradgradcheck on a Function whose backward is @once_differentiable or no-grad"
    requires = MENTIONS_GRADGRADCHECK
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)
    # it reports on gradcheck calls, found only through names that say gradcheck
    requires_in_file = MENTIONS_GRADCHECK

    VALID = [
        Valid("""
            import torch
            class Square(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x * x

                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return 2 * g * x

            torch.autograd.gradgradcheck(Square.apply, (x,))
            """),
        Valid("""
            import torch
            from torch.autograd.function import once_differentiable
            class Square(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x * x

                @staticmethod
                @once_differentiable
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return 2 * g * x

            torch.autograd.gradcheck(Square.apply, (x,))
            """, why="first derivatives only"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch.autograd.function import once_differentiable

            class Square(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x * x

                @staticmethod
                @once_differentiable
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return 2 * g * x

            def test_square(x):
                torch.autograd.gradgradcheck(Square.apply, (x,))
            """,
            message="gradgradcheck differentiates `Square.backward`, which is "
                    "@once_differentiable: its result has no graph, the second-order Jacobian is "
                    "all zeros and the check fails",
            range=(17, 34, 17, 46),
        ),
        Invalid(
            """
            import torch
            class Square(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x * x

                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    with torch.no_grad():
                        grad_x = 2 * g * x
                    return grad_x

            def test_square(x):
                torch.autograd.gradgradcheck(lambda t: Square.apply(t).sum(), (x,))
            """,
            message="gradgradcheck differentiates `Square.backward`, which computes its result "
                    "under torch.no_grad(): its result has no graph, the second-order Jacobian is "
                    "all zeros and the check fails",
            severity="warning",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            if call.variant != "gradgradcheck":
                continue
            code = block.checked_code(call)
            if code is None:
                continue
            for function in code.functions:
                found = _not_differentiable(function)
                if found is None:
                    continue
                why, severity = found
                message = (f"gradgradcheck differentiates `{function.name}.backward`, which {why}: "
                           f"its result has no graph, the second-order Jacobian is all zeros and "
                           f"the check fails")
                assert code.func is not None
                yield Report(code.func, message, call.site, severity=severity)
                break


def _not_differentiable(function: AutogradFunction) -> tuple[str, Severity | None] | None:
    backward = function.backward
    if backward is None or backward.node.name.value != "backward":
        return None
    for decorator in backward.node.decorators:
        expr = decorator.decorator
        name = dotted_name(expr.func if isinstance(expr, cst.Call) else expr) or ""
        last = name.split(".")[-1]
        if last == "once_differentiable":
            return "is @once_differentiable", None
        if last in _NO_GRAD:
            return f"is decorated with @{name}()", None
    if _returns_no_grad_values(backward):
        return "computes its result under torch.no_grad()", Severity.WARNING
    if _returns_detached(backward):
        return "returns `.detach()`ed values", Severity.WARNING
    return None


def _no_grad_blocks(method: Method) -> list[cst.With]:
    found = []
    for stmt, _ in compound_sites(method):
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                expr = item.item
                name = dotted_name(expr.func if isinstance(expr, cst.Call) else expr) or ""
                if name.split(".")[-1] in _NO_GRAD:
                    found.append(stmt)
                    break
    return found


def _returns_no_grad_values(method: Method) -> bool:
    """Every return is inside a no-grad block, or returns only names bound there."""
    blocks = _no_grad_blocks(method)
    if not blocks:
        return False
    inside: set[str] = set()
    outside: set[str] = set()
    block_ids = {id(b) for b in blocks}
    for line in lines(method):
        in_block = any(id(frame.owner) in block_ids for frame in line.site.frames)
        for small in line.node.body:
            bound = set()
            if isinstance(small, cst.Assign):
                bound = {n for t in small.targets for n in target_names(t.target)}
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                bound = set(target_names(small.target))
            (inside if in_block else outside).update(bound)
    found = returns(method)
    if not found:
        return False
    for node, site in found:
        if any(id(frame.owner) in block_ids for frame in site.frames):
            continue
        value = node.value
        if value is None:
            return False
        elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else [value]
        values = [e.value if isinstance(e, (cst.Element, cst.StarredElement)) else e for e in elements]
        grads = [v for v in values if not (isinstance(v, cst.Name) and v.value == "None")]
        if not grads or not all(isinstance(v, cst.Name) and v.value in inside and
                                v.value not in outside for v in grads):
            return False
    return True


def _returns_detached(method: Method) -> bool:
    """A return whose every gradient is an expression with a ``.detach()`` in it."""
    found = returns(method)
    if not found:
        return False
    for node, _ in found:
        value = node.value
        if value is None:
            return False
        elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else [value]
        values = [e.value if isinstance(e, (cst.Element, cst.StarredElement)) else e for e in elements]
        grads = [v for v in values if not (isinstance(v, cst.Name) and v.value == "None")]
        if not grads or not all(_has_detach(v) for v in grads):
            return False
    return True


def _has_detach(node: cst.CSTNode) -> bool:
    finder = _Detach()
    traverse.visit(node, finder)
    return finder.found and "detach" not in names_in(node)


class _Detach(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "detach" and not node.args:
            self.found = True
