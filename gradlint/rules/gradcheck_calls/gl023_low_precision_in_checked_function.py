from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis import torch_api, torch_ops
from ...analysis.block import BlockAnalysis
from ...analysis.checked_code import calls_with_context, input_targets
from ...analysis.facts import TensorFact
from ...analysis.gradcheck_calls import input_elements
from ...analysis.scopes import ModuleContext, Scope
from ...analysis.test_context import expects_exception
from ...findings import Severity
from .. import edits
from ..base import MENTIONS_GRADCHECK, Invalid, Report, Rule, Valid

_HIGH_PRECISION = frozenset({"float64", "complex128"})


class LowPrecisionInCheckedFunction(Rule):
    """## What it does
    Checks for a float64 (or complex128) gradcheck input that the checked function
    casts to a lower precision first thing: `x.float()`, `x.half()`, `x.bfloat16()`,
    `x.to(torch.float32)` (or `dtype=` float16/bfloat16) applied to the parameter the
    input binds to, in a lambda, a function of the module, or the `forward` of
    `MyFn.apply`. Casts under an `if` (`if x.dtype == torch.float16: ...`) are not
    reported.

    ## Why is this bad?
    gradcheck's dtype warning only looks at the inputs, which are float64, so nothing
    is printed; but the function computes in float32 (or less), so the finite
    differences with `eps=1e-6` lose most of their digits. Measured with torch 2.13:
    `gradcheck(lambda t: t.float().exp().double(), (x,))` raises `GradcheckError:
    Jacobian mismatch for output 0 with respect to input 0` (numerical 2.6226 against
    analytical 2.7183), as do `.to(torch.float32)`, `.half()` (a numerical Jacobian of
    zeros) and a Function that computes forward and backward in float32. A cast of a
    mask (`(t > 0).float()`) is exact and passes; it is not reported.

    ## Example
    ```python
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.float().exp()
            ctx.save_for_backward(y)
            return y.to(x.dtype)
        ...

    gradcheck(Exp.apply, (torch.randn(3, dtype=torch.float64, requires_grad=True),))
    ```

    Use instead: compute in the input's dtype (`x.exp()`), or upcast only low-precision
    inputs (`x.float() if x.dtype in (torch.float16, torch.bfloat16) else x`).

    ## Fix safety
    No fix: the cast is often deliberate (a float32 kernel); the check or the function
    must change, which is the author's call.
    """

    code = "GL023"
    name = "low-precision-in-checked-function"
    severity = Severity.WARNING
    summary = "the function under gradcheck casts its float64 input to float32/float16"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            x = torch.randn(3, dtype=torch.float64, requires_grad=True)
            torch.autograd.gradcheck(lambda t: t * (t > 0).float(), (x,))
            """, why="measured: the cast mask is exact"),
        Valid("""
            import torch
            x = torch.randn(3, dtype=torch.float64, requires_grad=True)
            def f(t):
                if t.dtype == torch.float16:
                    t = t.float()
                return t.exp()
            torch.autograd.gradcheck(f, (x,))
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def test_exp():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(lambda t: t.float().exp().double(), (x,))
            """,
            message="gradcheck input `x` is float64, but the checked function casts it with "
                    "`t.float()`: the finite differences are computed in float32 and the check "
                    "fails for a correct gradient",
            range=(4, 40, 4, 49),
        ),
        Invalid(
            """
            import torch
            class Exp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    y = x.to(torch.float32).exp()
                    ctx.save_for_backward(y)
                    return y.to(x.dtype)

                @staticmethod
                def backward(ctx, g):
                    y, = ctx.saved_tensors
                    return (g * y).to(g.dtype)

            def test_exp():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(Exp.apply, (x,))
            """,
            message="gradcheck input `x` is float64, but `Exp.forward` casts it with "
                    "`x.to(torch.float32)`: the finite differences are computed in float32 and "
                    "the check fails for a correct gradient",
            range=(16, 30, 16, 39),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            elements = input_elements(call, block.evaluator)
            if elements is None:
                continue
            code = None
            for element in elements:
                fact = block.evaluator.fact(element.expr, call.site) if element.inline else element.fact
                if not (isinstance(fact, TensorFact) and fact.requires_grad is True and
                        fact.dtype in _HIGH_PRECISION):
                    continue
                code = code or block.checked_code(call)
                if code is None:
                    break
                for target in input_targets(code, element.index):
                    found = _cast_of(block.context, target.region.body, target.param,
                                     target.region.scope)
                    if found is None:
                        continue
                    node, dtype = found
                    where = (f"`{target.region.function.name}.forward`"
                             if target.region.function is not None else "the checked function")
                    shown = edits.label(element.expr, block.code(element.expr), element.index)
                    message = (f"gradcheck input {shown} is {fact.dtype}, but {where} casts it "
                               f"with `{block.code(node)}`: the finite differences are computed in "
                               f"{dtype} and the check fails for a correct gradient")
                    inline = edits.contains(call.node, node)
                    assert code.func is not None
                    yield Report(node if inline else code.func, message, call.site)
                    break


def _cast_of(context: ModuleContext, body, param: str, scope: Scope) -> tuple[cst.Call, str] | None:
    """An unconditional cast of ``param`` to a low-precision dtype, and that dtype."""
    for found in calls_with_context(body):
        if found.conditional:
            continue
        call = found.call
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and
                func.value.value == param):
            continue
        method = func.attr.value
        if method in torch_ops.LOW_PRECISION_CASTS and not call.args:
            return call, torch_ops.LOW_PRECISION_CASTS[method]
        if method in ("to", "type"):
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value != "dtype":
                    continue
                dtype = torch_api.DTYPES.get(context.qualified(arg.value, scope) or "")
                if dtype in ("float32", "float16", "bfloat16"):
                    return call, dtype
    return None
