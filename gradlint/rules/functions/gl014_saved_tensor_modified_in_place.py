from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis import torch_ops
from ...analysis.autograd_functions import Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import (
    assigned_from, ctx_calls, mutations, names_in, returned_names, runs_after,
)
from ...analysis.scopes import ModuleContext
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid
from .helpers import MENTIONS_SAVE, mutation_text


class SavedTensorModifiedInPlace(Rule):
    """## What it does
    Checks for a tensor computed in `forward`, saved with `ctx.save_for_backward`, and
    then modified in place later in the same `forward` (`y.add_(1)`, `y[i] = v`,
    `y += 1`, `out=y`), when forward neither returns it nor marks it dirty. Buffers
    saved right after their allocation (`torch.empty`, `zeros`, `new_zeros`...) and
    filled afterwards are left alone, as are inputs (see GL015).

    ## Why is this bad?
    `save_for_backward` keeps a reference, not a copy, and torch records the saved
    tensors' versions only when forward returns, so a change made inside forward is
    invisible to the version check: backward computes with the modified values.
    Measured with torch 2.13: `y = x.exp(); ctx.save_for_backward(y); out = y * 2;
    y.add_(1); return out` gives gradients `2 * (exp(x) + 1)` instead of `2 * exp(x)`,
    silently; only gradcheck notices (`GradcheckError: Jacobian mismatch for output 0
    with respect to input 0`).

    ## Example
    ```python
    y = x.exp()
    ctx.save_for_backward(y)
    out = y * 2
    y.add_(1)
    return out, y
    ```

    Use instead:
    ```python
    y = x.exp()
    ctx.save_for_backward(y.clone())   # or save after the last change, if that is meant
    ...
    ```

    ## Fix safety
    No fix: either the save moves after the change or a copy is saved, depending on
    which value backward needs.
    """

    code = "GL014"
    name = "saved-tensor-modified-in-place"
    severity = Severity.WARNING
    summary = "a tensor is modified in place in forward after ctx.save_for_backward saved it"
    requires = MENTIONS_SAVE
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)

    VALID = [
        Valid("""
            import torch
            class Exp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    y = x.exp()
                    out = y * 2
                    y.add_(1)
                    ctx.save_for_backward(y)
                    return out

                @staticmethod
                def backward(ctx, g):
                    y, = ctx.saved_tensors
                    return 2 * g * (y - 1)
            """, why="saved after the change"),
        Valid("""
            import torch
            class Kernel(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    out = torch.empty_like(x)
                    ctx.save_for_backward(out)
                    out.copy_(x.exp())
                    return out.clone()

                @staticmethod
                def backward(ctx, g):
                    out, = ctx.saved_tensors
                    return g * out
            """, why="a buffer filled after it was saved"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Exp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    y = x.exp()
                    ctx.save_for_backward(y)
                    out = y * 2
                    y.add_(1)
                    return out

                @staticmethod
                def backward(ctx, g):
                    y, = ctx.saved_tensors
                    return 2 * g * y
            """,
            message="`y` is modified in place (`y.add_(1)`) after ctx.save_for_backward saved it: "
                    "backward sees the modified values (torch checks saved tensors' versions only "
                    "from the end of forward), so the gradient is silently wrong",
            range=(8, 9, 8, 18),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            forward = function.forward
            if forward is None or function.style != "ctx" or "forward" in function.inherited:
                continue
            params = {p.name.value for p in forward.params}
            returned = returned_names(forward) or set()
            dirty: set[str] = set()
            for call in ctx_calls(forward, "mark_dirty"):
                dirty |= names_in(call.call)
            changes = mutations(forward)
            reported: set[str] = set()
            for saved in ctx_calls(forward, "save_for_backward"):
                for arg in saved.call.args:
                    value = arg.value
                    if arg.star or not isinstance(value, cst.Name):
                        continue
                    name = value.value
                    if name in params or name in returned or name in dirty or name in reported or \
                            not _computed(block.context, forward, name):
                        continue
                    for change in changes:
                        if change.name == name and runs_after(saved.site, change.site):
                            reported.add(name)
                            message = (f"`{name}` is modified in place (`{mutation_text(block, change)}`) "
                                       f"after ctx.save_for_backward saved it: backward sees the "
                                       f"modified values (torch checks saved tensors' versions only "
                                       f"from the end of forward), so the gradient is silently wrong")
                            yield Report(change.node, message, change.site)
                            break


def _computed(context: ModuleContext, method: Method, name: str) -> bool:
    """Bound once, to a computed value (not to a freshly allocated buffer)."""
    values = assigned_from(method, name)
    if not values or len(values) != 1:
        return False
    value = values[0]
    if isinstance(value, cst.Call):
        qualified = context.qualified(value.func, method.scope)
        if qualified in torch_ops.ALLOCATIONS:
            return False
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in torch_ops.ALLOCATIONS:
            return False
    return isinstance(value, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript))
