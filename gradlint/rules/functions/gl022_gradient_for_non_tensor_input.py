from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.backward_returns import backward_returns, certainly_not_none
from ...analysis.apply_calls import apply_uses
from ...analysis.block import BlockAnalysis
from ...findings import Severity
from ..base import DEFINES_BACKWARD, Invalid, Report, Rule, Valid

_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})


def _scalar_kind(param: cst.Param) -> tuple[str, bool] | None:
    """(what the parameter is, whether its annotation says so) for a non-tensor input."""
    annotation = param.annotation.annotation if param.annotation is not None else None
    if isinstance(annotation, cst.Name) and annotation.value in _SCALAR_ANNOTATIONS:
        return annotation.value, True
    default = param.default
    if isinstance(default, cst.Integer):
        return "int", False
    if isinstance(default, cst.Float):
        return "float", False
    if isinstance(default, cst.Name) and default.value in ("True", "False"):
        return "bool", False
    if isinstance(default, (cst.SimpleString, cst.ConcatenatedString)):
        return "str", False
    return None


def _is_scalar_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(node, cst.Name) and node.value in ("True", "False"))


def _callers_pass_scalars(block: BlockAnalysis, name: str, params: list[cst.Param]) -> set[int]:
    """The positions (forward's inputs after ctx) whose default is the only thing the module's
    code ever gives: every use of the class name is a direct ``Name.apply(...)`` call, at least one
    call exists, and each call omits the input or passes a number, bool or string literal there.
    A class used any other way (aliased, passed on, subclassed) or called with ``*``/``**``
    arguments leaves every position unknown (an empty set): a default is only a fallback, and a
    caller out of sight may pass a tensor."""
    uses = apply_uses(block.context, name)
    calls = uses.calls
    if not calls or uses.other_uses:
        return set()
    names = [p.name.value for p in params]
    known = set(range(len(params)))
    for call in calls:
        if any(a.star for a in call.args):
            return set()
        positional = [a for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
        for position in list(known):
            arg = positional[position] if position < len(positional) else keywords.get(names[position])
            if arg is not None and not _is_scalar_literal(arg.value):
                known.discard(position)
    return known


class GradientForNonTensorInput(Rule):
    """## What it does
    Checks that `backward` returns `None` for inputs of `forward` that are not tensors:
    parameters annotated `int`/`float`/`bool`/`str` (an error), and parameters whose
    default is a number, a bool or a string when every call of the Function in the module
    leaves that default or passes a literal number there (a warning: a caller out of sight
    might pass a tensor). Without a visible call, or when one passes something else (a
    tensor, a name), or when the class is used other than by `Cls.apply(...)`, a default
    says nothing about what callers pass: no finding.

    ## Why is this bad?
    Measured with torch 2.13: a non-None gradient for an input that was a Python
    number, bool or None raises, when backward runs, `RuntimeError: function
    ScaleBackward returned a gradient different than None at position 2, but the
    corresponding forward input was not a Variable` (the position counts from 1). It is
    a plain RuntimeError, so `gradcheck(raise_exception=False)` does not catch it
    either. (For an integer tensor input, the gradient is silently ignored.)

    ## Example
    ```python
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha: float):
            ctx.alpha = alpha
            return x * alpha

        @staticmethod
        def backward(ctx, g):
            return g * ctx.alpha, g.sum()
    ```

    Use instead:
    ```python
        @staticmethod
        def backward(ctx, g):
            return g * ctx.alpha, None
    ```

    ## Fix safety
    No fix: a gradient computed for that slot may really belong to another input.
    """

    code = "GL022"
    name = "gradient-for-non-tensor-input"
    severity = Severity.ERROR
    summary = "backward returns a gradient for an int/float/bool/str input of forward (RuntimeError)"
    requires = DEFINES_BACKWARD

    VALID = [
        Valid("""
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, alpha: float):
                    ctx.alpha = alpha
                    return x * alpha

                @staticmethod
                def backward(ctx, g):
                    return g * ctx.alpha, None
            """),
        Valid("""
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, alpha: float):
                    ctx.alpha = alpha
                    return x * alpha

                @staticmethod
                def backward(ctx, g):
                    grad_alpha = None
                    return g * ctx.alpha, grad_alpha
            """),
        Valid("""
            import torch
            class LeakyReLU(torch.autograd.Function):
                # no call in sight: the default is only a fallback, a caller may pass a tensor
                @staticmethod
                def forward(ctx, x, slope=0.01):
                    ctx.save_for_backward(x)
                    ctx.slope = slope
                    return torch.where(x > 0, x, x * slope)

                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return torch.where(x > 0, g, g * ctx.slope), (g * x * (x < 0)).sum()
            """),
        Valid("""
            import torch
            class LeakyReLU(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, slope=0.01):
                    ctx.save_for_backward(x)
                    ctx.slope = slope
                    return torch.where(x > 0, x, x * slope)

                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return torch.where(x > 0, g, g * ctx.slope), (g * x * (x < 0)).sum()

            def leaky_relu(x, slope):
                return LeakyReLU.apply(x, slope)  # the caller's slope may be a tensor
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, alpha: float):
                    ctx.alpha = alpha
                    return x * alpha

                @staticmethod
                def backward(ctx, g):
                    return g * ctx.alpha, g.sum()
            """,
            message="backward returns a gradient (`g.sum()`) for `alpha`, a float input: torch "
                    "raises RuntimeError (\"returned a gradient different than None at position 2, "
                    "but the corresponding forward input was not a Variable\"); return None there",
            range=(10, 31, 10, 38),
        ),
        Invalid(
            """
            import torch
            class LeakyReLU(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, slope=0.01):
                    ctx.save_for_backward(x)
                    ctx.slope = slope
                    return torch.where(x > 0, x, x * slope)

                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    grad_slope = (g * x * (x < 0)).sum()
                    return torch.where(x > 0, g, g * ctx.slope), grad_slope

            def leaky_relu(x):
                return LeakyReLU.apply(x, 0.2)
            """,
            message="backward returns a gradient (`grad_slope`) for `slope`, a float input: torch "
                    "raises RuntimeError (\"returned a gradient different than None at position 2, "
                    "but the corresponding forward input was not a Variable\"); return None there",
            severity="warning",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            backward = function.backward
            signature = function.forward_inputs()
            if backward is None or signature is None or "backward" in function.inherited:
                continue
            params = signature[0]
            kinds = [_scalar_kind(p) for p in params]
            if any(kind is not None and not kind[1] for kind in kinds):
                scalar_calls = _callers_pass_scalars(block, function.name, params)
                kinds = [kind if kind is None or kind[1] or position in scalar_calls else None
                         for position, kind in enumerate(kinds)]
            if not any(kinds):
                continue
            for returned in backward_returns(backward):
                if returned.values is None:
                    continue
                for position, (value, kind) in enumerate(zip(returned.values, kinds)):
                    if kind is None or not certainly_not_none(value, backward):
                        continue
                    what, annotated = kind
                    shown = " ".join(block.code(value).split())
                    if len(shown) > 40:
                        shown = shown[:39] + "…"
                    message = (f"backward returns a gradient (`{shown}`) for "
                               f"`{params[position].name.value}`, a {what} input: torch raises "
                               f"RuntimeError (\"returned a gradient different than None at "
                               f"position {position + 1}, but the corresponding forward input was "
                               f"not a Variable\"); return None there")
                    yield Report(value, message, returned.site,
                                 severity=None if annotated else Severity.WARNING)
