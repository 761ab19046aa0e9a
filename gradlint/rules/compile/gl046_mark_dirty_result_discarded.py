from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.autograd_functions import AutogradFunction, Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import ctx_calls
from ...analysis.scopes import walk_statements
from ...findings import Applicability, Severity
from ..base import APPLIES_A_FUNCTION, FixProposal, Invalid, Replacement, Report, Rule, Valid

MENTIONS_MARK_DIRTY = re.compile(r"mark_dirty")


class MarkDirtyResultDiscarded(Rule):
    """## What it does
    Checks for a statement that calls `apply` of a Function whose forward marks an
    input dirty (`ctx.mark_dirty(x)`: it modifies `x` in place) and throws the result
    away: `Scale_.apply(y)` on a line of its own, leaving the code to go on with `y`.

    ## Why is this bad?
    The call's result is the tensor autograd knows as modified; code that goes on with
    the input instead leans on how autograd and the compiler track the aliasing. torch's
    compiler got that wrong: with torch 2.11 and 2.12, `torch.compile` (every backend,
    `fullgraph=True` included) gave a wrong gradient when the returned tensor was
    discarded (pytorch#184113, fixed by pytorch#184267). Measured with torch 2.13: eager
    and compiled (`aot_eager`, `fullgraph=True`) gradients agree for `x.mul_(3);
    ctx.mark_dirty(x); return x` whether the result is kept or discarded, and a forward
    that returns `x.mul_(3)` directly breaks the graph ("autograd.Function.apply:
    mark_dirty input not returned") either way, then runs eagerly with the right gradient.
    So on torch 2.13 this is a portability warning: the same code computes wrong
    gradients when compiled on 2.11-2.12.

    ## Example
    ```python
    y = x * 2
    Scale_.apply(y)
    loss = (y * y).sum()
    ```

    Use instead:
    ```python
    y = x * 2
    y = Scale_.apply(y)
    loss = (y * y).sum()
    ```

    ## Fix safety
    The fix binds the result to the name passed in the dirty position. It is safe: the
    result is that tensor modified in place (the same values and storage).
    """

    code = "GL046"
    name = "mark-dirty-result-discarded"
    severity = Severity.WARNING
    summary = "result of a mark_dirty Function's apply discarded: wrong compiled gradients before torch 2.13"
    requires = APPLIES_A_FUNCTION
    requires_in_code = True
    requires_in_file = MENTIONS_MARK_DIRTY  # the Function is usually defined in another block

    VALID = [
        Valid("""
            import torch
            class Scale_(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.mul_(3)
                    ctx.mark_dirty(x)
                    return x
                @staticmethod
                def backward(ctx, g):
                    return g * 3
            def f(x):
                y = x * 2
                y = Scale_.apply(y)
                return (y * y).sum()
            """),
        Valid("""
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 3
                @staticmethod
                def backward(ctx, g):
                    return g * 3
            def f(x):
                Scale.apply(x)
                return x.sum()
            """, why="no mark_dirty: a discarded result is dead code, another rule's business"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Scale_(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.mul_(3)
                    ctx.mark_dirty(x)
                    return x
                @staticmethod
                def backward(ctx, g):
                    return g * 3
            def f(x):
                y = x * 2
                Scale_.apply(y)
                return (y * y).sum()
            """,
            message="the result of `Scale_.apply`, which modifies its input in place (mark_dirty), is "
                    "discarded: use it (`y = Scale_.apply(y)`); torch.compile gave wrong gradients for "
                    "this before torch 2.13 (pytorch#184113)",
            range=(13, 5, 13, 20),
            fixed="""
            import torch
            class Scale_(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.mul_(3)
                    ctx.mark_dirty(x)
                    return x
                @staticmethod
                def backward(ctx, g):
                    return g * 3
            def f(x):
                y = x * 2
                y = Scale_.apply(y)
                return (y * y).sum()
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        context = block.context
        index = block.function_index
        for stmt, site in walk_statements(context.statements, context.scope, indexes=block.indexes):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
                    continue
                call = small.value
                function = index.applied_function(call, site.scope)
                if function is None:
                    continue
                block.reads(function.site)  # the finding depends on the class's block
                dirty = _dirty_positions(function)
                if dirty is None:
                    continue
                name = _dirty_argument(call, dirty)
                use = (f"`{name} = {_one_line(block.code(call))}`" if name is not None
                       else "bind it to the name of the input it modifies")
                message = (f"the result of `{function.name}.apply`, which modifies its input in place "
                           f"(mark_dirty), is discarded: use it ({use}); torch.compile gave wrong "
                           f"gradients for this before torch 2.13 (pytorch#184113)")
                fix = None
                if name is not None:
                    fix = FixProposal(f"Bind the result to `{name}`", Applicability.SAFE,
                                      (Replacement(call, f"{name} = {block.code(call)}", site),))
                yield Report(call, message, site, fix)


def _dirty_positions(function: AutogradFunction) -> list[int | None] | None:
    """Positions (in apply's arguments) of the inputs forward marks dirty (None: a
    position not known); None when the Function marks nothing dirty."""
    positions: list[int | None] = []
    inputs = function.forward_inputs()
    names = [p.name.value for p in inputs[0]] if inputs is not None else []
    if function.forward is not None:
        for found in ctx_calls(function.forward, "mark_dirty"):
            positions.extend(_named_position(arg, names) for arg in found.call.args)
    if function.setup_context is not None:
        for found in ctx_calls(function.setup_context, "mark_dirty"):
            positions.extend(_inputs_position(arg, function.setup_context) for arg in found.call.args)
    return positions or None


def _named_position(arg: cst.Arg, names: list[str]) -> int | None:
    """`ctx.mark_dirty(x)` in forward: the position of the parameter `x`."""
    value = arg.value
    if arg.star or not isinstance(value, cst.Name) or value.value not in names:
        return None
    return names.index(value.value)


def _inputs_position(arg: cst.Arg, method: Method) -> int | None:
    """`ctx.mark_dirty(inputs[0])` in `setup_context(ctx, inputs, output)`: 0 (a name
    `inputs` is rebound, or another expression: None)."""
    params = method.params
    value = arg.value
    if arg.star or len(params) < 2 or not isinstance(value, cst.Subscript) or len(value.slice) != 1:
        return None
    inputs = params[1].name.value
    index = value.slice[0].slice
    if not (isinstance(value.value, cst.Name) and value.value.value == inputs
            and isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)):
        return None
    if len(method.scope.table.bindings.get(inputs, [])) > 1:
        return None
    return int(index.value.value)


def _dirty_argument(call: cst.Call, positions: list[int | None]) -> str | None:
    """The plain name passed in the one dirty position, if there is exactly one."""
    if len(positions) != 1 or positions[0] is None:
        return None
    if any(arg.star or arg.keyword is not None for arg in call.args):
        return None
    if positions[0] >= len(call.args):
        return None
    value = call.args[positions[0]].value
    return value.value if isinstance(value, cst.Name) else None


def _one_line(code: str) -> str:
    text = " ".join(code.split())
    return text if len(text) <= 60 else text[:57] + "..."
