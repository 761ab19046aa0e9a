from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.facts import TensorFact
from ...analysis.gradcheck_calls import GradcheckCall, input_elements
from ...analysis.test_context import expects_exception
from ...findings import Applicability, Severity
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Replacement, Report, Rule, Valid


class SameTensorTwiceInInputs(Rule):
    """## What it does
    Checks for one tensor that requires grad given twice among the inputs of a
    `gradcheck`/`gradgradcheck` call: `(x, x)`, or `(x,) * 2`.

    ## Why is this bad?
    gradcheck perturbs an input in place to compute the numerical Jacobian, and
    `autograd.grad` returns the whole gradient of the shared tensor for both positions.
    Both sides therefore see only the *sum* of the gradients of the two positions, and
    a backward that swaps or misplaces them passes. Measured with torch 2.13: a Function
    computing `a * b * b` whose backward returns the two gradients swapped passes
    `gradcheck(f, (x, x))` and `gradcheck(f, (x,) * 2)` (True, silently), and fails with
    `GradcheckError: Jacobian mismatch for output 0 with respect to input 0` on two
    distinct tensors.

    ## Example
    ```python
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    gradcheck(MyMul.apply, (x, x))
    ```

    Use instead:
    ```python
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, dtype=torch.float64, requires_grad=True)
    gradcheck(MyMul.apply, (x, y))
    ```

    ## Fix safety
    The fix replaces the repeated name by a separate leaf with the same values,
    `x.detach().clone().requires_grad_()`. It is unsafe: the check becomes stricter and
    may now fail (when the gradients of the two positions are wrong).
    """

    code = "GL024"
    name = "same-tensor-twice-in-inputs"
    severity = Severity.WARNING
    summary = "one tensor given twice as gradcheck inputs: only the sum of its gradients is checked"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            x = torch.randn(3, dtype=torch.float64, requires_grad=True)
            y = torch.randn(3, dtype=torch.float64, requires_grad=True)
            torch.autograd.gradcheck(torch.mul, (x, y))
            """),
        Valid("""
            import torch
            x = torch.randn(3, dtype=torch.float64)
            w = torch.randn(3, dtype=torch.float64, requires_grad=True)
            torch.autograd.gradcheck(lambda a, b, c: a * b * c, (x, x, w))
            """, why="a constant repeated is harmless: it is not differentiated"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def test_mul():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.mul, (x, x))
            """,
            message="`x` is given twice as a gradcheck input: both positions share one gradient, "
                    "so only the sum of their gradients is checked; pass a separate tensor",
            range=(4, 45, 4, 46),
            fixed="""
            import torch
            def test_mul():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.mul, (x, x.detach().clone().requires_grad_()))
            """,
            applicability="unsafe",
        ),
        Invalid(
            """
            import torch
            from torch.autograd import gradcheck
            x = torch.rand(4, dtype=torch.float64).requires_grad_()
            assert gradcheck(torch.atan2, (x,) * 2)
            """,
            message="`x` is given twice as a gradcheck input (`(x,) * 2`): both positions share "
                    "one gradient, so only the sum of their gradients is checked; pass a "
                    "separate tensor",
            range=(4, 31, 4, 39),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            if call.inputs is None or call.has_star_args:
                continue
            report = self._repeated_tuple(block, call) or self._repeated_name(block, call)
            if report is not None:
                yield report

    def _repeated_name(self, block: BlockAnalysis, call: GradcheckCall) -> Report | None:
        elements = input_elements(call, block.evaluator)
        if elements is None:
            return None
        seen: set[str] = set()
        for element in elements:
            expr = element.expr
            if not isinstance(expr, cst.Name):
                continue
            if expr.value in seen and _requires_grad(block, expr, call):
                message = (f"`{expr.value}` is given twice as a gradcheck input: both positions "
                           f"share one gradient, so only the sum of their gradients is checked; "
                           f"pass a separate tensor")
                if not element.inline:  # in a tuple built elsewhere: underline the argument
                    assert call.inputs is not None
                    return Report(call.inputs.value, message, call.site)
                fix = FixProposal(f"Give a separate copy of `{expr.value}`", Applicability.UNSAFE,
                                  (Replacement(expr, f"{expr.value}.detach().clone().requires_grad_()",
                                               call.site),))
                return Report(expr, message, call.site, fix)
            seen.add(expr.value)
        return None

    def _repeated_tuple(self, block: BlockAnalysis, call: GradcheckCall) -> Report | None:
        assert call.inputs is not None
        expr = call.inputs.value
        if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply)):
            return None
        for items, times in ((expr.left, expr.right), (expr.right, expr.left)):
            if isinstance(items, (cst.Tuple, cst.List)) and isinstance(times, cst.Integer) and \
                    int(times.value) >= 2:
                for element in items.elements:
                    value = element.value
                    if isinstance(value, cst.Name) and _requires_grad(block, value, call):
                        message = (f"`{value.value}` is given twice as a gradcheck input "
                                   f"(`{block.code(expr)}`): both positions share one gradient, so "
                                   f"only the sum of their gradients is checked; pass a separate "
                                   f"tensor")
                        return Report(expr, message, call.site)
        return None


def _requires_grad(block: BlockAnalysis, expr: cst.BaseExpression, call: GradcheckCall) -> bool:
    fact = block.evaluator.fact(expr, call.site)
    return isinstance(fact, TensorFact) and fact.requires_grad is True
