from __future__ import annotations

import re
from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...analysis.test_context import expects_exception
from ...findings import Applicability, Severity
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Replacement, Report, Rule, Valid

MENTIONS_SPARSE_NNZ = re.compile(r"check_sparse_nnz")


class DeprecatedGradcheckOption(Rule):
    """## What it does
    Checks for `check_sparse_nnz=` in `gradcheck`/`gradgradcheck` calls.

    ## Why is this bad?
    `check_sparse_nnz` was deprecated in torch 2.1 in favour of `masked` (same meaning)
    and is gone from torch 2.13: `gradcheck(f, (x,), check_sparse_nnz=True)` raises
    `TypeError: gradcheck() got an unexpected keyword argument 'check_sparse_nnz'`
    (`gradgradcheck()` likewise), even with `False`, before anything is checked.

    ## Example
    ```python
    gradcheck(torch.sparse.sum, (s,), check_sparse_nnz=True)
    ```

    Use instead:
    ```python
    gradcheck(torch.sparse.sum, (s,), masked=True)
    ```

    ## Fix safety
    The fix renames the keyword to `masked`, which torch introduced with the same
    meaning. It is safe: the call raised TypeError before. There is no fix when the call
    also passes `masked=`.
    """

    code = "GL025"
    name = "deprecated-gradcheck-option"
    severity = Severity.ERROR
    summary = "check_sparse_nnz= in gradcheck (removed: TypeError); use masked="
    requires = MENTIONS_SPARSE_NNZ
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)
    # it reports on gradcheck calls, found only through names that say gradcheck
    requires_in_file = MENTIONS_GRADCHECK

    VALID = [
        Valid("""
            import torch
            torch.autograd.gradcheck(torch.sparse.sum, (s,), masked=True)
            """),
        Valid("""
            def check(helper, s):
                helper.gradcheck(s, check_sparse_nnz=True)
            """, why="not torch's gradcheck"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            torch.autograd.gradcheck(torch.sparse.sum, (s,), check_sparse_nnz=True)
            """,
            message="gradcheck no longer accepts `check_sparse_nnz` (TypeError in torch 2.13); "
                    "its replacement is `masked`",
            range=(2, 50, 2, 66),
            fixed="""
            import torch
            torch.autograd.gradcheck(torch.sparse.sum, (s,), masked=True)
            """,
            applicability="safe",
        ),
        Invalid(
            """
            from torch.autograd import gradgradcheck
            gradgradcheck(f, (s,), check_sparse_nnz=False, masked=False)
            """,
            message="gradgradcheck no longer accepts `check_sparse_nnz` (TypeError in torch 2.13); "
                    "remove it, `masked` is already given",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            arg = call.keyword("check_sparse_nnz")
            if arg is None or arg.keyword is None:
                continue
            if call.keyword("masked") is not None:
                advice, fix = "remove it, `masked` is already given", None
            else:
                advice = "its replacement is `masked`"
                fix = FixProposal("Rename `check_sparse_nnz` to `masked`", Applicability.SAFE,
                                  (Replacement(arg.keyword, "masked", call.site),))
            message = (f"{call.variant} no longer accepts `check_sparse_nnz` (TypeError in torch "
                       f"2.13); {advice}")
            yield Report(arg.keyword, message, call.site, fix)
