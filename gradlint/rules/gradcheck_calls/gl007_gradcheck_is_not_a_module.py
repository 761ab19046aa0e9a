from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.gradcheck_calls import StatementExpressions
from ...analysis.scopes import walk_statements
from ...findings import Applicability, Severity
from ..base import FixProposal, Invalid, Replacement, Report, Rule, Valid

ATTRIBUTE_OF_GRADCHECK = re.compile(r"gradcheck\s*\.\s*\w")
_FUNCTIONS = {"torch.autograd.gradcheck": "gradcheck", "torch.autograd.gradgradcheck": "gradgradcheck"}
# attributes every function has: reading them is fine
_FUNCTION_ATTRIBUTES = frozenset(dir(lambda: None))


class GradcheckIsNotAModule(Rule):
    """## What it does
    Checks for attributes read from `torch.autograd.gradcheck` as if it were the module
    `torch/autograd/gradcheck.py`: `torch.autograd.gradcheck.gradcheck(...)`,
    `torch.autograd.gradcheck.GradcheckError`, `torch.autograd.gradcheck.gradgradcheck`.

    ## Why is this bad?
    `torch.autograd` re-exports the *function* under the module's name, so in torch 2.13
    `torch.autograd.gradcheck` is the function, and every one of these raises
    `AttributeError: 'function' object has no attribute 'GradcheckError'` (the same
    holds after `import torch.autograd.gradcheck as m`, which also binds the function).
    Only `from torch.autograd.gradcheck import GradcheckError` reaches the module.

    ## Example
    ```python
    try:
        torch.autograd.gradcheck.gradcheck(f, (x,))
    except torch.autograd.gradcheck.GradcheckError:
        ...
    ```

    Use instead:
    ```python
    from torch.autograd.gradcheck import GradcheckError

    try:
        torch.autograd.gradcheck(f, (x,))
    except GradcheckError:
        ...
    ```

    ## Fix safety
    `torch.autograd.gradcheck.gradcheck` becomes `torch.autograd.gradcheck` (and likewise
    for `gradgradcheck`) when the module has a name bound to `torch`: safe, since the
    original raises. `GradcheckError` needs an import and has no fix.
    """

    code = "GL007"
    name = "gradcheck-is-not-a-module"
    severity = Severity.ERROR
    summary = "an attribute of torch.autograd.gradcheck, which is a function, not the module"
    requires = ATTRIBUTE_OF_GRADCHECK
    requires_in_code = True
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            from torch.autograd.gradcheck import GradcheckError
            import torch
            try:
                torch.autograd.gradcheck(f, (x,))
            except GradcheckError:
                pass
            """),
        Valid("""
            import torch
            name = torch.autograd.gradcheck.__name__
            """, why="functions have a __name__"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            torch.autograd.gradcheck.gradcheck(torch.sin, (x,))
            """,
            message="`torch.autograd.gradcheck` is the gradcheck function, not its module: "
                    "`.gradcheck` raises AttributeError; call `torch.autograd.gradcheck` itself",
            range=(2, 1, 2, 35),
            fixed="""
            import torch
            torch.autograd.gradcheck(torch.sin, (x,))
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch
            def test():
                try:
                    torch.autograd.gradcheck(torch.sin, (x,))
                except torch.autograd.gradcheck.GradcheckError:
                    pass
            """,
            message="`torch.autograd.gradcheck` is the gradcheck function, not its module: "
                    "`.GradcheckError` raises AttributeError; use "
                    "`from torch.autograd.gradcheck import GradcheckError`",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        context = block.context
        for stmt, site in walk_statements(context.statements, context.scope, indexes=block.indexes):
            for node in StatementExpressions.of(stmt, cst.Attribute):
                assert isinstance(node, cst.Attribute)
                attr = node.attr.value
                if attr in _FUNCTION_ATTRIBUTES:
                    continue
                base = context.qualified(node.value, site.scope)
                function = _FUNCTIONS.get(base or "")
                if function is None:
                    continue
                shown = block.code(node.value)
                if attr in ("gradcheck", "gradgradcheck"):
                    advice = (f"call `torch.autograd.{attr}` itself" if attr == function
                              else f"call `torch.autograd.{attr}` instead")
                    replacement = _replacement(block, node, attr, site)
                    fix = FixProposal(f"Use `torch.autograd.{attr}`", Applicability.SAFE,
                                      (replacement,)) if replacement is not None else None
                else:
                    advice = f"use `from torch.autograd.gradcheck import {attr}`"
                    fix = None
                message = (f"`{shown}` is the {function} function, not its module: "
                           f"`.{attr}` raises AttributeError; {advice}")
                yield Report(node, message, site, fix)


def _replacement(block: BlockAnalysis, node: cst.Attribute, attr: str, site) -> Replacement | None:
    from ..edits import torch_module_name

    torch_name = torch_module_name(site)
    if torch_name is None:
        return None
    return Replacement(node, f"{torch_name}.autograd.{attr}", site)
