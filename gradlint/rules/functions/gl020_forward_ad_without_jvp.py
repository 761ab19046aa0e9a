from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.test_context import expects_exception
from ...findings import Severity
from ..base import MENTIONS_GRADCHECK, Invalid, Report, Rule, Valid

MENTIONS_FORWARD_AD = re.compile(r"check_forward_ad|check_batched_forward_grad|check_fwd_over_rev")
# the options that make gradcheck/gradgradcheck use forward-mode AD
_OPTIONS = {"gradcheck": ("check_forward_ad", "check_batched_forward_grad"),
            "gradgradcheck": ("check_fwd_over_rev",)}


class ForwardAdWithoutJvp(Rule):
    """## What it does
    Checks for `gradcheck(..., check_forward_ad=True)` (or `check_batched_forward_grad=True`,
    or `gradgradcheck(..., check_fwd_over_rev=True)`) on code that applies a custom
    `torch.autograd.Function` that defines no `jvp`.

    ## Why is this bad?
    Forward-mode AD through a custom Function calls its `jvp` staticmethod. Without one,
    torch 2.13 raises `NotImplementedError: You must implement the jvp function for
    custom autograd.Function to use it with forward mode AD.`. It is not a
    `GradcheckError`, so `raise_exception=False` does not turn it into `False`; the same
    holds for `setup_context`-style Functions and for `gradgradcheck(...,
    check_fwd_over_rev=True)` (measured).

    ## Example
    ```python
    gradcheck(Square.apply, (x,), check_forward_ad=True)  # Square has no jvp
    ```

    Use instead:
    ```python
    class Square(torch.autograd.Function):
        ...
        @staticmethod
        def jvp(ctx, x_t):
            x, = ctx.saved_tensors
            return 2 * x * x_t

    gradcheck(Square.apply, (x,), check_forward_ad=True)
    ```
    (`forward` must then also call `ctx.save_for_forward(x)`.) Or drop the option if
    the Function is not meant to support forward-mode AD.

    ## Fix safety
    No fix: either the Function gets a `jvp`, or the check stops asking for one.
    """

    code = "GL020"
    name = "forward-ad-without-jvp"
    severity = Severity.ERROR
    summary = "check_forward_ad=True on a custom Function that has no jvp (NotImplementedError)"
    requires = MENTIONS_FORWARD_AD
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
                    ctx.save_for_forward(x)
                    return x * x

                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return 2 * g * x

                @staticmethod
                def jvp(ctx, x_t):
                    x, = ctx.saved_tensors
                    return 2 * x * x_t

            def test(x):
                torch.autograd.gradcheck(Square.apply, (x,), check_forward_ad=True)
            """),
        Valid("""
            import torch
            from mylib import JvpBase
            class Square(JvpBase):
                @staticmethod
                def forward(ctx, x):
                    return x * x

                @staticmethod
                def backward(ctx, g):
                    return g
            torch.autograd.gradcheck(Square.apply, (x,), check_forward_ad=True)
            """, why="a base class gradlint cannot see may define jvp"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch.autograd import Function, gradcheck

            class Square(Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x * x

                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return 2 * g * x

            def test_square():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                gradcheck(Square.apply, (x,), check_forward_ad=True)
            """,
            message="check_forward_ad=True uses forward-mode AD, but `Square` defines no jvp: "
                    "torch raises NotImplementedError (which raise_exception=False does not catch)",
            range=(17, 35, 17, 56),
        ),
        Invalid(
            """
            import torch
            class Affine(torch.autograd.Function):
                @staticmethod
                def forward(x, w):
                    return x * w

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return g * w, g * x

            def test(x, w):
                torch.autograd.gradgradcheck(lambda a, b: Affine.apply(a, b) * 2, (x, w),
                                             check_fwd_over_rev=True)
            """,
            message="check_fwd_over_rev=True uses forward-mode AD, but `Affine` defines no jvp: "
                    "torch raises NotImplementedError (which raise_exception=False does not catch)",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            options = [call.keyword(name) for name in _OPTIONS[call.variant]]
            enabled = [arg for arg in options if arg is not None and _is_true(arg.value)]
            if not enabled:
                continue
            code = block.checked_code(call)
            if code is None:
                continue
            for function in code.functions:
                if function.defines("jvp") is not False:
                    continue
                assert enabled[0].keyword is not None
                option = enabled[0].keyword.value
                message = (f"{option}=True uses forward-mode AD, but `{function.name}` defines no "
                           f"jvp: torch raises NotImplementedError (which raise_exception=False "
                           f"does not catch)")
                yield Report(enabled[0], message, call.site)
                break


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
