from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...findings import Severity
from ..base import DEFINES_BACKWARD, Invalid, Report, Rule, Valid
from ...analysis.backward_returns import backward_returns


def _grad_names(param: str) -> set[str]:
    """Names that say "the gradient of `param`"."""
    return {f"grad_{param}", f"{param}_grad", f"grad{param}", f"d_{param}", f"d{param}",
            f"g_{param}", f"{param}_g", f"grad_{param}s", f"{param}_grads"}


class BackwardGradientOrder(Rule):
    """## What it does
    Checks the order of the gradients `backward` returns, using their names: a value named
    like the gradient of one input (`grad_x`, `x_grad`, `dx`, ...) returned in the slot of
    another input.

    ## Why is this bad?
    torch matches gradients to `forward`'s inputs by position only. A gradient in the wrong
    slot is not an error when the shapes are compatible: the other input silently receives
    it (summed down to its shape when it broadcasts), and the input it belongs to gets
    nothing. Only a numerical check would notice.

    gradlint only reports names that match exactly one input, and never a backward
    parameter (`grad_output` passed straight through is often intentional).

    ## Example
    ```python
    @staticmethod
    def forward(ctx, x, weight, bias):
        ...

    @staticmethod
    def backward(ctx, grad_output):
        ...
        return grad_x, grad_bias, grad_weight
    ```

    Use instead:
    ```python
        return grad_x, grad_weight, grad_bias
    ```

    ## Fix safety
    There is no fix: the name may be what is wrong.
    """

    code = "GL008"
    name = "backward-gradient-order"
    severity = Severity.WARNING
    summary = "a gradient named after one input is returned in another input's slot"
    requires = DEFINES_BACKWARD

    VALID = [
        Valid("""
            import torch
            class Affine(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w, b):
                    ctx.save_for_backward(x, w)
                    return x * w + b

                @staticmethod
                def backward(ctx, grad_output):
                    x, w = ctx.saved_tensors
                    grad_x = grad_output * w
                    grad_w = grad_output * x
                    return grad_x, grad_w, grad_output
            """),
        Valid("""
            import torch
            class Base(torch.autograd.Function):
                @staticmethod
                def forward(cls, ctx, _input, weight, bias=None):
                    ctx.save_for_backward(_input, weight)
                    return _input @ weight.t()

                @staticmethod
                def backward(ctx, grad_output):
                    grad_input, grad_weight = ctx.saved_tensors
                    return grad_input, grad_weight, None
            """, why="forward(cls, ctx, ...) is a helper that subclasses call, not a forward"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class FixedPointMul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, pre_act, scale, identity=None, identity_scale=None):
                    ctx.save_for_backward(scale)
                    return pre_act * scale + (0 if identity is None else identity * identity_scale)

                @staticmethod
                def backward(ctx, grad_output):
                    (scale,) = ctx.saved_tensors
                    identity_grad = grad_output
                    return grad_output * scale, None, None, identity_grad
            """,
            message="backward returns `identity_grad` in the slot of `identity_scale` (input #3), "
                    "but its name says it is the gradient of `identity` (input #2); torch matches "
                    "gradients to inputs by position",
            range=(12, 9, 12, 62),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            backward = function.backward
            signature = function.forward_inputs()
            if backward is None or signature is None or "backward" in function.inherited:
                continue
            params = [p.name.value for p in signature[0]]
            backward_params = {p.name.value for p in backward.params}
            for returned in backward_returns(backward):
                if returned.values is None:
                    continue
                for slot, value in enumerate(returned.values[: len(params)]):
                    if not isinstance(value, cst.Name) or value.value in backward_params:
                        continue
                    owners = [i for i, p in enumerate(params) if value.value in _grad_names(p)]
                    if len(owners) != 1 or owners[0] == slot or value.value in _grad_names(params[slot]):
                        continue
                    owner = owners[0]
                    message = (f"backward returns `{value.value}` in the slot of `{params[slot]}` "
                               f"(input #{slot}), but its name says it is the gradient of "
                               f"`{params[owner]}` (input #{owner}); torch matches gradients to "
                               f"inputs by position")
                    yield Report(returned.node, message, returned.site)
