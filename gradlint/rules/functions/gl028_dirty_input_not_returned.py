from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis import torch_ops
from ...analysis.autograd_functions import Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import ctx_calls, lines, returns
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid

MENTIONS_MARK_DIRTY = re.compile(r"mark_dirty")


class DirtyInputNotReturned(Rule):
    """## What it does
    Checks that every tensor given to `ctx.mark_dirty(...)` in `forward` is returned by
    it, as the tensor object itself (not a view or a copy of it).

    ## Why is this bad?
    `mark_dirty` tells autograd that forward modified an input in place and returns it,
    so that autograd can rewrite the graph around that tensor. Measured with torch 2.13:
    when the marked tensor is not among the outputs (`x.mul_(2); ctx.mark_dirty(x);
    return x * 3`, or `return x.view(-1)`), `apply` raises `RuntimeError: Some elements
    marked as dirty during the forward method were not returned as output. The inputs
    that are modified inplace must all be outputs of the Function.`, whether or not the
    input requires grad. Users meet it as a crash in a library's custom op
    (megvii-model/DetNAS#38).

    ## Example
    ```python
    @staticmethod
    def forward(ctx, x):
        x.relu_()
        ctx.mark_dirty(x)
        return x.clone()
    ```

    Use instead:
    ```python
    @staticmethod
    def forward(ctx, x):
        x.relu_()
        ctx.mark_dirty(x)
        return x
    ```

    ## Fix safety
    No fix: returning the input itself changes what callers get.
    """

    code = "GL028"
    name = "dirty-input-not-returned"
    severity = Severity.ERROR
    summary = "ctx.mark_dirty(x) but forward does not return x itself (RuntimeError)"
    requires = MENTIONS_MARK_DIRTY
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)

    VALID = [
        Valid("""
            import torch
            class ReLU_(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.relu_()
                    ctx.mark_dirty(x)
                    ctx.save_for_backward(x)
                    return x

                @staticmethod
                def backward(ctx, g):
                    out, = ctx.saved_tensors
                    return g * (out > 0)
            """),
        Valid("""
            import torch
            class AddInto(torch.autograd.Function):
                @staticmethod
                def forward(ctx, acc, x):
                    out = acc.add_(x)
                    ctx.mark_dirty(acc)
                    return out, x.clone()

                @staticmethod
                def backward(ctx, g, h):
                    return g, g + h
            """, why="`add_` returns the tensor it modified"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Double_(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.mul_(2)
                    ctx.mark_dirty(x)
                    return x.view(-1)

                @staticmethod
                def backward(ctx, g):
                    return g * 2
            """,
            message="`x` is marked dirty but forward does not return it (a view or copy does "
                    "not count): torch raises RuntimeError (\"Some elements marked as dirty during "
                    "the forward method were not returned as output\")",
            range=(6, 24, 6, 25),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            forward = function.forward
            if forward is None or function.style != "ctx" or "forward" in function.inherited:
                continue
            found = returns(forward)
            if not found:
                continue
            for marked in ctx_calls(forward, "mark_dirty"):
                for arg in marked.call.args:
                    if arg.star or not isinstance(arg.value, cst.Name):
                        continue
                    name = arg.value.value
                    aliases = _aliases(forward, name)
                    if aliases is None or any(_may_return(node.value, aliases) for node, _ in found):
                        continue
                    message = (f"`{name}` is marked dirty but forward does not return it (a view or "
                               f"copy does not count): torch raises RuntimeError (\"Some elements "
                               f"marked as dirty during the forward method were not returned as "
                               f"output\")")
                    yield Report(arg.value, message, marked.site)


def _aliases(method: Method, name: str) -> set[str] | None:
    """``name`` and the names bound to the same tensor (``out = x`` or ``out = x.add_(1)``);
    None when some binding of those names cannot be followed."""
    aliases = {name}
    changed = True
    while changed:
        changed = False
        for line in lines(method):
            for small in line.node.body:
                if not isinstance(small, cst.Assign):
                    continue
                for target in small.targets:
                    tgt = target.target
                    if isinstance(tgt, cst.Name) and tgt.value not in aliases and \
                            _may_be(small.value, aliases):
                        aliases.add(tgt.value)
                        changed = True
                    elif not isinstance(tgt, cst.Name) and _mentions_any(tgt, aliases):
                        return None  # unpacking into one of them
    return aliases


def _may_be(expr: cst.BaseExpression | None, aliases: set[str]) -> bool:
    """Could ``expr`` evaluate to the very tensor object bound to one of ``aliases``?"""
    if expr is None:
        return False
    if isinstance(expr, cst.Name):
        return expr.value in aliases
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in torch_ops.INPLACE_METHODS:
                return _may_be(func.value, aliases)  # in-place methods return their tensor
            if isinstance(func.value, cst.Name) and func.value.value in aliases:
                return False  # x.view(...), x.clone(): a new tensor object
            if _is_torch_namespace(func):
                return False
        return any(_mentions_any(arg.value, aliases) for arg in expr.args)  # a helper may return it
    if isinstance(expr, (cst.IfExp,)):
        return _may_be(expr.body, aliases) or _may_be(expr.orelse, aliases)
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
        return False
    return _mentions_any(expr, aliases)


def _is_torch_namespace(func: cst.Attribute) -> bool:
    node: cst.BaseExpression = func
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value in ("torch", "F")


def _may_return(value: cst.BaseExpression | None, aliases: set[str]) -> bool:
    if value is None:
        return False
    elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else [value]
    for element in elements:
        inner = element.value if isinstance(element, (cst.Element, cst.StarredElement)) else element
        if isinstance(element, cst.StarredElement) or _may_be(inner, aliases):
            return True
    return False


def _mentions_any(node: cst.CSTNode, names: set[str]) -> bool:
    from ...analysis.method_body import names_in

    return bool(names_in(node) & names)
