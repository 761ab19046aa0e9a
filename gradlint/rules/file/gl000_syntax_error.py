from __future__ import annotations

from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid


class SyntaxError_(Rule):
    """## What it does
    Reports a file, or a top-level block of it, that cannot be parsed, and a file that
    cannot be read or decoded (invalid UTF-8, or bytes that do not match the file's
    `# -*- coding: ... -*-` declaration). Files that never mention `torch` are not
    analysed at all, so their syntax errors are left to other tools.

    ## Why is this bad?
    Python will refuse to import the module. gradlint keeps analysing the top-level
    blocks that do parse, so the other findings of a half-typed file stay visible.

    ## Example
    ```python
    import torch

    x = torch.randn(3, dtype=torch.float64, requires_grad=True
    ```

    Use instead:
    ```python
    import torch

    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    ```

    ## Fix safety
    There is no fix: only the author knows what was meant.
    """

    code = "GL000"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "the file cannot be read or parsed"
    engine_level = True  # the engine owns parsing

    VALID = [Valid("import torch\nx = torch.ones(3)\n")]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randn(3, requires_grad=True\ny = 1\n",
            message="syntax error: '(' was never closed",
            range=(2, 16, 2, 17),
        ),
        Invalid("import torch\ndef f(:\n    pass\n", message="syntax error: invalid syntax",
                range=(2, 7, 2, 8)),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        return iter(())  # reported by the engine, which owns parsing
