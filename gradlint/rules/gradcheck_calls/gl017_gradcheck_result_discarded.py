from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.gradcheck_calls import GradcheckCall
from ...analysis.test_context import expects_exception
from ...findings import Applicability, Severity
from .. import edits
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Report, Rule, Valid

MENTIONS_RAISE_EXCEPTION = re.compile(r"raise_exception")


class GradcheckResultDiscarded(Rule):
    """## What it does
    Checks for `gradcheck(..., raise_exception=False)` (or `gradgradcheck`) whose result
    is thrown away: the call is a statement of its own, or its result goes to a local
    variable that nothing reads.

    ## Why is this bad?
    With `raise_exception=False`, a failed check does not raise: gradcheck returns
    `False` and says nothing. Measured with torch 2.13: a Function whose backward is
    wrong (`x * x` with backward `g`) makes `gradcheck(Wrong.apply, (x,),
    raise_exception=False)` return `False`, silently; as a statement, the test passes.
    The check can never fail.

    ## Example
    ```python
    def test_square():
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        torch.autograd.gradcheck(Square.apply, (x,), raise_exception=False)
    ```

    Use instead:
    ```python
    def test_square():
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        torch.autograd.gradcheck(Square.apply, (x,))
    ```

    ## Fix safety
    The fix removes `raise_exception=False`, so that a failing check raises
    `GradcheckError` with the Jacobians in its message. It is unsafe: the test then
    fails where it used to pass (which is the point, but it changes behaviour).
    """

    code = "GL017"
    name = "gradcheck-result-discarded"
    severity = Severity.ERROR
    summary = "gradcheck(..., raise_exception=False) whose result is not used: it can never fail"
    requires = MENTIONS_RAISE_EXCEPTION
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)
    # it reports on gradcheck calls, found only through names that say gradcheck
    requires_in_file = MENTIONS_GRADCHECK

    VALID = [
        Valid("""
            import torch
            def test_square(x):
                assert torch.autograd.gradcheck(torch.square, (x,), raise_exception=False)
            """),
        Valid("""
            import torch
            def test_square(self, x):
                ok = torch.autograd.gradcheck(torch.square, (x,), raise_exception=False)
                self.assertTrue(ok)
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def test_square():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.square, (x,), raise_exception=False)
            """,
            message="the result of gradcheck(..., raise_exception=False) is discarded: a failed "
                    "check returns False silently, so this check can never fail",
            range=(4, 50, 4, 71),
            fixed="""
            import torch
            def test_square():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.square, (x,))
            """,
            applicability="unsafe",
        ),
        Invalid(
            """
            from torch.autograd import gradgradcheck
            def test_square(x):
                ok = gradgradcheck(
                    lambda t: t ** 2,
                    (x,),
                    raise_exception=False,
                )
            """,
            message="the result of gradgradcheck(..., raise_exception=False) is discarded: a failed "
                    "check returns False silently, so this check can never fail",
            fixed="""
            from torch.autograd import gradgradcheck
            def test_square(x):
                ok = gradgradcheck(
                    lambda t: t ** 2,
                    (x,),
                    )
            """,
            applicability="unsafe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            arg = call.keyword("raise_exception")
            if arg is None or not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
                continue
            if not _discarded(call):
                continue
            fix = FixProposal("Remove `raise_exception=False`", Applicability.UNSAFE,
                              edits.argument_removal(call.node, arg, call.site))
            message = (f"the result of {call.variant}(..., raise_exception=False) is discarded: a "
                       f"failed check returns False silently, so this check can never fail")
            yield Report(arg, message, call.site, fix)


def _discarded(call: GradcheckCall) -> bool:
    stmt = call.site.statement
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Expr) and small.value is call.node:
            return True
        if isinstance(small, cst.Assign) and small.value is call.node and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Name):
                return not edits.used_elsewhere(call.site, target.value, [small.targets[0]])
    return False
