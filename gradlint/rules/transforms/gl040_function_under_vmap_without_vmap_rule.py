from __future__ import annotations

from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...analysis.func_transforms import NEEDS_VMAP_RULE
from ...findings import Applicability, Severity
from .helpers import TRANSFORM_NAMES, add_class_attribute, subject, uses, vmap_compatible
from ..base import APPLIES_A_FUNCTION, MENTIONS_FUNC_TRANSFORM, FixProposal, Invalid, Report, Rule, Valid


class FunctionUnderVmapWithoutVmapRule(Rule):
    """## What it does
    Checks the custom `torch.autograd.Function`s (written with `setup_context`) applied
    under `torch.func.vmap` (or `torch.vmap`, `functorch.vmap`), or under `jacfwd` and
    `hessian`, which vmap too: the class needs a `vmap` staticmethod or `generate_vmap_rule =
    True`, not both. `grad`, `vjp` and `jacrev` need neither.

    ## Why is this bad?
    vmap raises when it reaches the Function (torch 2.13): `RuntimeError: You tried to vmap
    over Sin, but it does not have vmap support. Please override and implement the vmap
    staticmethod or set generate_vmap_rule=True. For more details, please see
    https://pytorch.org/docs/main/notes/extending.func.html`. With both: `RuntimeError: You
    tried to vmap over Sin, but it has both generate_vmap_rule=True and an overridden vmap
    staticmethod. Please set generate_vmap_rule=False or delete the overridden vmap
    staticmethod to avoid ambiguity.` Note that `gradcheck(..., check_batched_grad=True)`
    does not catch the missing rule: only `torch.func.vmap` does.

    ## Example
    ```python
    class Sin(torch.autograd.Function):
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

    torch.func.vmap(Sin.apply)(xs)
    ```

    Use instead:
    ```python
    class Sin(torch.autograd.Function):
        generate_vmap_rule = True
        ...
    ```

    ## Fix safety
    `generate_vmap_rule = True` makes torch vmap the Function's own methods, which works
    when they are written with PyTorch operations vmap can batch. The fix is safe when
    gradlint sees only torch functions, tensor methods (no `.item()`, `.numpy()`, in-place
    ops) and a few builtins in the class's methods and no Python control flow; otherwise it
    is unsafe (a kernel launch or a branch on values needs a hand-written `vmap`
    staticmethod).
    """

    code = "GL040"
    name = "function-under-vmap-without-vmap-rule"
    severity = Severity.ERROR
    summary = "an autograd.Function without a vmap rule runs under vmap (or jacfwd, hessian)"
    requires = MENTIONS_FUNC_TRANSFORM
    requires_in_file = APPLIES_A_FUNCTION
    requires_in_code = True
    requires_aliases_of = TRANSFORM_NAMES

    VALID = [
        Valid("""
            import torch

            class Sin(torch.autograd.Function):
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

            x = torch.randn(3)
            g = torch.func.grad(lambda t: Sin.apply(t).sum())(x)
            j = torch.func.jacrev(Sin.apply)(x)
            """, why="grad and jacrev do not vmap the Function"),
        Valid("""
            import torch

            class Sin(torch.autograd.Function):
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

                @staticmethod
                def vmap(info, in_dims, x):
                    return Sin.apply(x), in_dims[0]

            ys = torch.vmap(Sin.apply)(torch.randn(4, 3))
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            class Sin(torch.autograd.Function):
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
            """,
            message="`Sin.apply` runs under torch.func.vmap, but Sin has neither a vmap "
                    "staticmethod nor generate_vmap_rule = True: torch raises `RuntimeError: You "
                    "tried to vmap over Sin, but it does not have vmap support.`; set "
                    "generate_vmap_rule = True if its methods are plain PyTorch code, else write "
                    "a vmap staticmethod",
            range=(17, 22, 17, 31),
            fixed="""
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
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch

            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(x, k):
                    return x * k.item()

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.k = inputs[1].item()

                @staticmethod
                def backward(ctx, grad):
                    return grad * ctx.k, None

            def f(x):
                return Scale.apply(x, torch.tensor(2.0))

            j = torch.func.jacfwd(f)(torch.randn(3))
            """,
            message="`f` calls `Scale.apply`, and runs under torch.func.jacfwd, but Scale has "
                    "neither a vmap staticmethod nor generate_vmap_rule = True: torch raises "
                    "`RuntimeError: You tried to vmap over Scale, but it does not have vmap "
                    "support.`; set generate_vmap_rule = True if its methods are plain PyTorch "
                    "code, else write a vmap staticmethod",
            fixed="""
            import torch

            class Scale(torch.autograd.Function):
                generate_vmap_rule = True
                @staticmethod
                def forward(x, k):
                    return x * k.item()

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.k = inputs[1].item()

                @staticmethod
                def backward(ctx, grad):
                    return grad * ctx.k, None

            def f(x):
                return Scale.apply(x, torch.tensor(2.0))

            j = torch.func.jacfwd(f)(torch.randn(3))
            """,
            applicability="unsafe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        def wanted(use):
            support = use.function
            if support.style != "setup_context" or not (support.has_vmap is False or
                                                        support.both_vmap_rules):
                return None
            return next((t for t in use.transforms if t in NEEDS_VMAP_RULE), None)

        for use, site, transform in uses(block, wanted):
            name = use.function.name
            if use.function.both_vmap_rules:
                message = (f"{subject(use)} runs under torch.func.{transform}, but {name} has both "
                           f"generate_vmap_rule = True and a vmap staticmethod: torch raises "
                           f"`RuntimeError: You tried to vmap over {name}, but it has both "
                           f"generate_vmap_rule=True and an overridden vmap staticmethod.`; keep "
                           f"one of them")
                yield Report(use.report_node, message, site)
                continue
            message = (f"{subject(use)} runs under torch.func.{transform}, but {name} has neither "
                       f"a vmap staticmethod nor generate_vmap_rule = True: torch raises "
                       f"`RuntimeError: You tried to vmap over {name}, but it does not have vmap "
                       f"support.`; set generate_vmap_rule = True if its methods are plain "
                       f"PyTorch code, else write a vmap staticmethod")
            fix = None
            replacement = add_class_attribute(use, block, "generate_vmap_rule = True")
            if replacement is not None:
                safe = vmap_compatible(use, block.context)
                fix = FixProposal(f"Set `generate_vmap_rule = True` on {name}",
                                  Applicability.SAFE if safe else Applicability.UNSAFE,
                                  (replacement,))
            yield Report(use.report_node, message, site, fix=fix)
