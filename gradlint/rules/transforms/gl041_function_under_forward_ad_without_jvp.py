from __future__ import annotations

from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...analysis.func_transforms import NEEDS_JVP
from ...findings import Severity
from .helpers import TRANSFORM_NAMES, subject, uses
from ..base import APPLIES_A_FUNCTION, MENTIONS_FUNC_TRANSFORM, Invalid, Report, Rule, Valid

TORCH_MESSAGE = ("NotImplementedError: You must implement the jvp function for custom "
                 "autograd.Function to use it with forward mode AD.")


class FunctionUnderForwardAdWithoutJvp(Rule):
    """## What it does
    Checks the custom `torch.autograd.Function`s applied under a forward-mode transform:
    `torch.func.jvp`, `jacfwd`, `hessian` (which is `jacfwd(jacrev(f))`) and `linearize`.
    Forward mode needs a `jvp` staticmethod; `backward` is not used for it, and neither
    `generate_vmap_rule` nor a `vmap` staticmethod provides it.

    ## Why is this bad?
    The transform raises when it reaches the Function (torch 2.13): `NotImplementedError:
    You must implement the jvp function for custom autograd.Function to use it with forward
    mode AD.` An old-style Function (forward taking `ctx`) fails earlier under `jvp`,
    `jacfwd` and `hessian` (GL039); under `linearize` it raises this error too.

    ## Example
    ```python
    class Sin(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * x.cos()

    torch.func.jacfwd(Sin.apply)(x)
    ```

    Use instead: add a forward-mode derivative (or use `jacrev`, which needs none):
    ```python
        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def jvp(ctx, x_t):
            x, = ctx.saved_tensors
            return x_t * x.cos()
    ```

    ## Fix safety
    There is no fix: the derivative must be written.
    """

    code = "GL041"
    name = "function-under-forward-ad-without-jvp"
    severity = Severity.ERROR
    summary = "an autograd.Function without a jvp staticmethod runs under jvp, jacfwd or hessian"
    requires = MENTIONS_FUNC_TRANSFORM
    requires_in_file = APPLIES_A_FUNCTION
    requires_in_code = True
    requires_aliases_of = TRANSFORM_NAMES

    VALID = [
        Valid("""
            import torch

            class Sin(torch.autograd.Function):
                generate_vmap_rule = True

                @staticmethod
                def forward(x):
                    return x.sin()

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])
                    ctx.save_for_forward(inputs[0])

                @staticmethod
                def backward(ctx, grad):
                    x, = ctx.saved_tensors
                    return grad * x.cos()

                @staticmethod
                def jvp(ctx, x_t):
                    x, = ctx.saved_tensors
                    return x_t * x.cos()

            x = torch.randn(3)
            j = torch.func.jacfwd(Sin.apply)(x)
            r = torch.func.jacrev(Sin.apply)(x)
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            class Sin(torch.autograd.Function):
                generate_vmap_rule = True

                @staticmethod
                def forward(x):
                    return x.sin()

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad):
                    x, = ctx.saved_tensors
                    return grad * x.cos()

            j = torch.func.jacfwd(Sin.apply)(torch.randn(3))
            """,
            message="`Sin.apply` runs under torch.func.jacfwd (forward-mode AD), but Sin has no "
                    f"jvp staticmethod: torch raises `{TORCH_MESSAGE}`; write jvp(ctx, *tangents), "
                    "or use a reverse-mode transform (jacrev)",
            range=(19, 23, 19, 32),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        def wanted(use):
            support = use.function
            if support.has_jvp is not False:
                return None
            needed = NEEDS_JVP if support.style == "setup_context" else \
                {"linearize"} if support.style == "ctx" else set()
            return next((t for t in use.transforms if t in needed), None)

        for use, site, transform in uses(block, wanted):
            message = (f"{subject(use)} runs under torch.func.{transform} (forward-mode AD), but "
                       f"{use.function.name} has no jvp staticmethod: torch raises "
                       f"`{TORCH_MESSAGE}`; write jvp(ctx, *tangents), or use a reverse-mode "
                       f"transform (jacrev)")
            yield Report(use.report_node, message, site)
