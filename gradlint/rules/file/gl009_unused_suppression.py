from __future__ import annotations

import re
from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid

# only suppressions that name gradlint codes: `# noqa: E501` is another tool's business
NAMES_GRADLINT_CODE = re.compile(r"(?i)noqa\s*:[^\n]*\bGL\d|gradlint:\s*ignore\[[^\]\n]*GL\d")


class UnusedSuppression(Rule):
    """## What it does
    Reports `# noqa: GL00x` and `# gradlint: ignore[GL00x]` comments whose gradlint codes
    suppress nothing on their line: the finding they were written for is gone.

    Only codes of enabled gradlint rules are checked. A bare `# noqa` (which also serves
    other tools) and other tools' codes (`# noqa: E501`) are left alone.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line: after the float32 input
    is fixed, `# noqa: GL001` would also silence a new float32 input added there later.

    ## Example
    ```python
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    gradcheck(torch.sin, (x,))  # noqa: GL001
    ```

    Use instead:
    ```python
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    gradcheck(torch.sin, (x,))
    ```

    ## Fix safety
    The fix removes the unused codes (and the comment, when nothing else is left in it).
    It is safe: those codes suppress nothing.
    """

    code = "GL009"
    name = "unused-suppression"
    severity = Severity.WARNING
    summary = "a `# noqa`/`# gradlint: ignore` code that suppresses nothing"
    requires = NAMES_GRADLINT_CODE
    engine_level = True  # needs every finding of the file: computed by the engine

    VALID = [
        Valid("""
            import torch
            def test():
                x = torch.randn(3, requires_grad=True)
                torch.autograd.gradcheck(torch.sin, (x,))  # noqa: GL001
            """),
        Valid("""
            import torch
            x = torch.ones(3)  # noqa: E501  (another tool's code)
            y = torch.ones(3)  # noqa
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def test():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.sin, (x,))  # noqa: GL001
            """,
            message="unused suppression: no GL001 finding on this line",
            range=(4, 48, 4, 61),
            fixed="""
            import torch
            def test():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.sin, (x,))
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch
            def test():
                x = torch.randn(3, requires_grad=True)
                torch.autograd.gradcheck(torch.sin, (x,))  # gradlint: ignore[GL001, GL002]
            """,
            message="unused suppression: no GL002 finding on this line",
            fixed="""
            import torch
            def test():
                x = torch.randn(3, requires_grad=True)
                torch.autograd.gradcheck(torch.sin, (x,))  # gradlint: ignore[GL001]
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        return iter(())  # reported by the engine, which sees every finding of the file
