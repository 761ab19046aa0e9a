from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.backward_returns import differentiable_inputs
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import Mutation, ctx_calls, mutations, names_in
from ...findings import Severity
from ..base import DEFINES_BACKWARD, Invalid, Report, Rule, Valid
from .helpers import mutation_text


class InputModifiedWithoutMarkDirty(Rule):
    """## What it does
    Checks for a `forward` that modifies one of its inputs in place (`x.mul_(2)`,
    `x[i] = v`, `x += 1`, `torch.op(..., out=x)`) without `ctx.mark_dirty(x)`, when
    backward returns a gradient for that input (so it is a differentiable tensor;
    buffers such as running statistics get `None` and are left alone).

    ## Why is this bad?
    forward runs with grad disabled, so torch does not stop the change, and without
    `mark_dirty` autograd does not know about it. Measured with torch 2.13:

    - a leaf input that requires grad is silently modified (`[1, 2, 3]` became
      `[2, 4, 6]` after one call), and `gradcheck` fails with a meaningless Jacobian
      (entries around 1e7), since every evaluation changes the inputs again;
    - an input that another op saved for its own backward (`h = x.exp()`, then the
      Function modifies `h`) makes backward raise `RuntimeError: one of the variables
      needed for gradient computation has been modified by an inplace operation:
      [torch.DoubleTensor [3]], which is output 0 of Exp, is at version 1; expected
      version 0 instead.`, far from the cause.

    With `ctx.mark_dirty(x)` (and `x` returned), torch rewrites the graph and raises a
    clear error at once for a leaf (`a leaf Variable that requires grad has been used in
    an in-place operation.`).

    ## Example
    ```python
    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)
        return x
    ```

    Use instead:
    ```python
    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)
        ctx.mark_dirty(x)
        return x
    ```
    or work on a copy (`x = x.clamp(min=0)`).

    ## Fix safety
    No fix: whether to mark the input dirty or to stop modifying it is a design choice.
    """

    code = "GL015"
    name = "input-modified-without-mark-dirty"
    severity = Severity.WARNING
    summary = "forward modifies a differentiable input in place without ctx.mark_dirty"
    requires = DEFINES_BACKWARD

    VALID = [
        Valid("""
            import torch
            class ReLU_(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.clamp_(min=0)
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
            class BatchNorm(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, running_mean, momentum):
                    mean = x.mean(0)
                    running_mean.mul_(1 - momentum).add_(mean * momentum)
                    return x - mean

                @staticmethod
                def backward(ctx, g):
                    return g - g.mean(0), None, None
            """, why="a buffer: backward gives it no gradient"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Double_(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.mul_(2)
                    return x

                @staticmethod
                def backward(ctx, g):
                    return g * 2
            """,
            message="forward modifies its input `x` in place (`x.mul_(2)`) without ctx.mark_dirty(x): "
                    "autograd does not know it changed (a leaf is silently modified; an input "
                    "another op saved makes backward raise \"modified by an inplace operation\")",
            range=(5, 9, 5, 18),
        ),
        Invalid(
            """
            import torch
            class MaskFill(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, mask):
                    ctx.save_for_backward(mask)
                    x[mask] = 0
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    mask, = ctx.saved_tensors
                    return g.masked_fill(mask, 0) * 2, None
            """,
            message="forward modifies its input `x` in place (`x[mask] = ...`) without "
                    "ctx.mark_dirty(x): autograd does not know it changed (a leaf is silently "
                    "modified; an input another op saved makes backward raise \"modified by an "
                    "inplace operation\")",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            forward = function.forward
            if forward is None or "forward" in function.inherited:
                continue
            inputs = differentiable_inputs(function)
            if not inputs:
                continue
            dirty: set[str] = set()
            for method in (forward, function.setup_context):
                if method is not None and method.context_name:
                    for call in ctx_calls(method, "mark_dirty"):
                        dirty |= names_in(call.call)
            if function.setup_context is not None and ctx_calls(function.setup_context, "mark_dirty"):
                continue  # `ctx.mark_dirty(inputs[0])`: marked through the inputs tuple
            reported: set[str] = set()
            for mutation in mutations(forward):
                name = mutation.name
                if name not in inputs or name in dirty or name in reported or _self_copy(mutation):
                    continue
                reported.add(name)
                shown = mutation_text(block, mutation)
                message = (f"forward modifies its input `{name}` in place (`{shown}`) without "
                           f"ctx.mark_dirty({name}): autograd does not know it changed (a leaf is "
                           f"silently modified; an input another op saved makes backward raise "
                           f"\"modified by an inplace operation\")")
                yield Report(mutation.node, message, mutation.site)


def _self_copy(mutation: Mutation) -> bool:
    """``x.copy_(x)`` changes no value."""
    node = mutation.node
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
        node.func.attr.value == "copy_" and len(node.args) >= 1 and \
        isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == mutation.name
