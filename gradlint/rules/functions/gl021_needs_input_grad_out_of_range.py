from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis import traverse
from ...analysis.autograd_functions import AutogradFunction, Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import lines
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid

MENTIONS_NEEDS_INPUT_GRAD = re.compile(r"needs_input_grad")


class NeedsInputGradOutOfRange(Rule):
    """## What it does
    Checks `ctx.needs_input_grad[i]` with a literal index, and `a, b = ctx.needs_input_grad`,
    in the methods of a custom Function, against the number of inputs of its `forward`.

    ## Why is this bad?
    `ctx.needs_input_grad` has one entry per argument given to `apply`: with
    `forward(ctx, x, w)`, two. Measured with torch 2.13: `ctx.needs_input_grad[2]` there
    raises `IndexError: tuple index out of range` (in backward, or already in forward),
    and unpacking it into three names raises `ValueError: not enough values to unpack`.
    With `forward(ctx, x, w=None)` called as `apply(x)`, the tuple has only one entry;
    with `setup_context`, `apply` binds the defaults and it has one entry per parameter.
    The index usually comes from a forward that lost or gained a parameter.

    ## Example
    ```python
    @staticmethod
    def forward(ctx, x, w):
        ...

    @staticmethod
    def backward(ctx, g):
        grad_bias = g.sum(0) if ctx.needs_input_grad[2] else None
    ```

    Use instead: index only the inputs forward has (`[0]` and `[1]` here), and return
    one gradient per input.

    ## Fix safety
    No fix: which input was meant is the author's knowledge.
    """

    code = "GL021"
    name = "needs-input-grad-out-of-range"
    severity = Severity.ERROR
    summary = "ctx.needs_input_grad indexed or unpacked past forward's inputs (IndexError)"
    requires = MENTIONS_NEEDS_INPUT_GRAD
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)

    VALID = [
        Valid("""
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(x, w)
                    return x * w

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    gx = g * w if ctx.needs_input_grad[0] else None
                    gw = g * x if ctx.needs_input_grad[1] else None
                    return gx, gw
            """),
        Valid("""
            import torch
            class Cat(torch.autograd.Function):
                @staticmethod
                def forward(ctx, *xs):
                    return torch.cat(xs)

                @staticmethod
                def backward(ctx, g):
                    return g if ctx.needs_input_grad[3] else None
            """, why="*args: the count is not known"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Linear(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(x, w)
                    return x @ w.t()

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    gb = g.sum(0) if ctx.needs_input_grad[2] else None
                    return g @ w, g.t() @ x, gb
            """,
            message="ctx.needs_input_grad[2] is out of range: forward has 2 inputs (`x`, `w`), "
                    "so torch raises IndexError",
            range=(11, 26, 11, 49),
        ),
        Invalid(
            """
            import torch
            class Affine(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w, b=None):
                    return x * w

                @staticmethod
                def backward(ctx, g):
                    x_needs, w_needs, b_needs, s_needs = ctx.needs_input_grad
                    return None, None, None
            """,
            message="ctx.needs_input_grad is unpacked into 4 names, but forward has 2 to 3 inputs "
                    "(`x`, `w`, `b`), so torch raises ValueError",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            signature = function.forward_inputs()
            if signature is None:
                continue
            params, required = signature
            total = len(params)
            names = ", ".join(f"`{p.name.value}`" for p in params)
            for method in _methods(function):
                yield from _indexing(method, total, names)
                yield from _unpacking(method, required, total, names)


def _methods(function: AutogradFunction) -> list[Method]:
    return [m for m in (function.forward, function.backward, function.setup_context)
            if m is not None and m.context_name is not None and
            not (m is function.forward and function.style != "ctx")]


def _is_needs_input_grad(node: cst.BaseExpression, ctx: str | None) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "needs_input_grad" and \
        isinstance(node.value, cst.Name) and node.value.value == ctx


class _Subscripts(cst.CSTVisitor):
    def __init__(self, ctx: str | None):
        self.ctx = ctx
        self.found: list[tuple[cst.Subscript, int]] = []

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not _is_needs_input_grad(node.value, self.ctx) or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            value = _literal_int(index.value)
            if value is not None:
                self.found.append((node, value))


def _literal_int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)
    return None


def _indexing(method: Method, total: int, names: str) -> Iterator[Report]:
    for line in lines(method):
        visitor = _Subscripts(method.context_name)
        traverse.visit(line.node, visitor)
        for node, value in visitor.found:
            if -total <= value < total:
                continue
            message = (f"ctx.needs_input_grad[{value}] is out of range: forward has {total} "
                       f"input{'s' if total != 1 else ''} ({names}), so torch raises IndexError")
            yield Report(node, message, line.site)


def _unpacking(method: Method, required: int, total: int, names: str) -> Iterator[Report]:
    for line in lines(method):
        for small in line.node.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and
                    _is_needs_input_grad(small.value, method.context_name)):
                continue
            target = small.targets[0].target
            if not isinstance(target, (cst.Tuple, cst.List)) or \
                    any(isinstance(e, cst.StarredElement) for e in target.elements):
                continue
            count = len(target.elements)
            if required <= count <= total:
                continue
            expected = str(total) if required == total else f"{required} to {total}"
            message = (f"ctx.needs_input_grad is unpacked into {count} names, but forward has "
                       f"{expected} input{'s' if total != 1 else ''} ({names}), so torch raises "
                       f"ValueError")
            yield Report(target, message, line.site)
