from __future__ import annotations

from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...analysis.func_transforms import NEEDS_SETUP_CONTEXT
from ...findings import Severity
from .helpers import TRANSFORM_NAMES, subject, uses
from ..base import APPLIES_A_FUNCTION, MENTIONS_FUNC_TRANSFORM, Invalid, Report, Rule, Valid

TORCH_MESSAGE = ("RuntimeError: In order to use an autograd.Function with functorch transforms "
                 "(vmap, grad, jvp, jacrev, ...), it must override the setup_context staticmethod.")


class FunctionUnderTorchFuncWithoutSetupContext(Rule):
    """## What it does
    Checks the custom `torch.autograd.Function`s applied under a `torch.func` transform
    (`vmap`, `grad`, `grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian`,
    `functionalize`; also `torch.vmap` and `functorch.*`): passed directly
    (`vmap(MyFn.apply)`), called in a lambda or in a function of the same module that is
    passed. A Function whose `forward` takes `ctx` (the old style, without a
    `setup_context` staticmethod) cannot run there.

    ## Why is this bad?
    The transform raises as soon as it reaches the Function (torch 2.13): `RuntimeError:
    In order to use an autograd.Function with functorch transforms (vmap, grad, jvp,
    jacrev, ...), it must override the setup_context staticmethod. For more details,
    please see https://pytorch.org/docs/main/notes/extending.func.html`. Setting
    `generate_vmap_rule = True` does not help. `torch.func.functional_call` alone is not a
    transform (it runs the module normally); under `grad` it raises the same error.

    ## Example
    ```python
    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * x.cos()

    torch.func.vmap(Sin.apply)(xs)
    ```

    Use instead:
    ```python
    class Sin(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * x.cos()
    ```

    ## Fix safety
    There is no fix: the rewrite moves what `forward` stores on `ctx` into `setup_context`,
    which sees only the inputs and the output (intermediate values must be returned as extra
    outputs or recomputed).
    """

    code = "GL039"
    name = "function-under-torch-func-without-setup-context"
    severity = Severity.ERROR
    summary = "an old-style autograd.Function (forward takes ctx) runs under a torch.func transform"
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

                @staticmethod
                def backward(ctx, grad):
                    x, = ctx.saved_tensors
                    return grad * x.cos()

            ys = torch.func.vmap(Sin.apply)(torch.randn(4, 3))
            """),
        Valid("""
            import torch

            class OldSin(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x.sin()

                @staticmethod
                def backward(ctx, grad):
                    x, = ctx.saved_tensors
                    return grad * x.cos()

            class M(torch.nn.Module):
                def forward(self, x):
                    return OldSin.apply(x)

            out = torch.func.functional_call(M(), {}, (torch.randn(3),))
            """, why="functional_call alone is not a transform"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            class Sin(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x.sin()

                @staticmethod
                def backward(ctx, grad):
                    x, = ctx.saved_tensors
                    return grad * x.cos()

            ys = torch.func.vmap(Sin.apply)(torch.randn(4, 3))
            """,
            message="`Sin.apply` runs under torch.func.vmap, but Sin.forward takes ctx (no "
                    f"setup_context staticmethod): torch raises `{TORCH_MESSAGE}`; rewrite it as "
                    "forward(x) without ctx plus setup_context(ctx, inputs, output) that saves "
                    "what backward needs",
            range=(14, 22, 14, 31),
        ),
        Invalid(
            """
            import torch
            from torch.func import grad

            class Sin(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x.sin()

                @staticmethod
                def backward(ctx, grad):
                    x, = ctx.saved_tensors
                    return grad * x.cos()

            def loss(x):
                return Sin.apply(x).sum()

            def test_grad():
                g = grad(loss)(torch.randn(3))
            """,
            message="`loss` calls `Sin.apply`, and runs under torch.func.grad, but Sin.forward "
                    f"takes ctx (no setup_context staticmethod): torch raises `{TORCH_MESSAGE}`; "
                    "rewrite it as forward(x) without ctx plus setup_context(ctx, inputs, output) "
                    "that saves what backward needs",
            range=(19, 14, 19, 18),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        def wanted(use):
            if use.function.style != "ctx":
                return None
            return next((t for t in use.transforms if t in NEEDS_SETUP_CONTEXT), None)

        for use, site, transform in uses(block, wanted):
            name = use.function.name
            message = (f"{subject(use)} runs under torch.func.{transform}, but {name}.forward "
                       f"takes ctx (no setup_context staticmethod): torch raises "
                       f"`{TORCH_MESSAGE}`; rewrite it as forward(x) without ctx plus "
                       f"setup_context(ctx, inputs, output) that saves what backward needs")
            yield Report(use.report_node, message, site)
