from __future__ import annotations

from typing import Iterator

from ...analysis.autograd_functions import Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import ctx_calls, runs_after
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid
from .helpers import MENTIONS_SAVE, saving_methods


class SaveForBackwardCalledTwice(Rule):
    """## What it does
    Checks for a second `ctx.save_for_backward(...)` that runs after a first one in the
    same `forward` (or `setup_context`) and does not save everything the first one saved.

    ## Why is this bad?
    Each call replaces what the previous one saved; nothing accumulates. Measured with
    torch 2.13: after `ctx.save_for_backward(x)` then `ctx.save_for_backward(w)`,
    `ctx.saved_tensors` is `(w,)`, silently. backward then unpacks the wrong tensors:
    a `ValueError: not enough values to unpack` at best, a silently wrong gradient when
    the counts happen to match.

    ## Example
    ```python
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x)
        y = x @ w
        ctx.save_for_backward(w)
        return y
    ```

    Use instead:
    ```python
    @staticmethod
    def forward(ctx, x, w):
        y = x @ w
        ctx.save_for_backward(x, w)
        return y
    ```

    ## Fix safety
    No fix: merging the calls changes the order of `ctx.saved_tensors`, which backward
    unpacks by position.
    """

    code = "GL011"
    name = "save-for-backward-called-twice"
    severity = Severity.ERROR
    summary = "a second ctx.save_for_backward replaces what the first one saved"
    requires = MENTIONS_SAVE
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
                    return g * w, g * x
            """),
        Valid("""
            import torch
            class Linear(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w, bias=None):
                    if bias is None:
                        ctx.save_for_backward(x, w)
                    else:
                        ctx.save_for_backward(x, w, bias)
                    return x @ w.t()

                @staticmethod
                def backward(ctx, g):
                    return None, None, None
            """, why="only one of the two calls runs"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(x)
                    y = x * w
                    ctx.save_for_backward(w)
                    return y

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return g * w, g * x
            """,
            message="this ctx.save_for_backward replaces the earlier `ctx.save_for_backward(x)`: "
                    "`x` is no longer saved "
                    "(ctx.saved_tensors holds only what the last call saved)",
            range=(7, 9, 7, 33),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            for method in saving_methods(function):
                yield from _replacements(block, method)


def _replacements(block: BlockAnalysis, method: Method) -> Iterator[Report]:
    calls = ctx_calls(method, "save_for_backward")
    reported: set[int] = set()
    for first in calls:
        for second in calls:
            if id(second.call) in reported or not runs_after(first.site, second.site):
                continue
            if any(a.star for a in (*first.call.args, *second.call.args)):
                continue
            kept = {block.code(a.value) for a in second.call.args}
            lost = [block.code(a.value) for a in first.call.args if block.code(a.value) not in kept]
            lost = [text for text in lost if text != "None"]
            if not lost:
                continue
            reported.add(id(second.call))
            earlier = " ".join(block.code(first.call).split())
            if len(earlier) > 48:
                earlier = "ctx.save_for_backward(...)"
            listed = ", ".join(f"`{text}`" for text in lost)
            verb = "is" if len(lost) == 1 else "are"
            message = (f"this ctx.save_for_backward replaces the earlier `{earlier}`: {listed} {verb} "
                       f"no longer saved (ctx.saved_tensors holds only what the last call saved)")
            yield Report(second.call, message, second.site)

