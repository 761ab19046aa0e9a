from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.autograd_functions import AutogradFunction
from ...analysis.backward_returns import gets_gradient
from ...analysis.block import BlockAnalysis
from ...analysis.gradcheck_calls import calls_in_statement
from ...analysis.names import BindingKind
from ...analysis.scopes import Scope, Site, walk_statements
from ...analysis.traceable import stays_in_graph
from ...findings import Applicability, Severity
from ..base import APPLIES_A_FUNCTION, FixProposal, Invalid, Replacement, Report, Rule, Valid

# decorators that keep a function out of torch.compile's graph
NOT_COMPILED = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})


class SameTensorTwiceToApply(Rule):
    """## What it does
    Checks for one tensor passed twice to a custom autograd Function's `apply`:
    `MyMul.apply(x, x)`, where the code may run under `torch.compile`.

    ## Why is this bad?
    Dynamo cannot trace a Function call whose forward inputs share a tensor. Measured
    with torch 2.13: `torch.compile(lambda x: MyMul.apply(x, x).sum(), fullgraph=True)`
    raises `torch._dynamo.exc.Unsupported: autograd.Function.apply: duplicate tensor
    input` ("Dynamo does not support tracing autograd.Function.apply when the same tensor
    is passed to multiple forward inputs"); without `fullgraph` the graph breaks there and
    the Function runs eagerly (the gradient is then right, and the call is not compiled).
    torch 2.11 and 2.12 compiled it instead and gave wrong gradients: half the eager one,
    or one slot's gradient dropped (pytorch#183604, pytorch#181146). Passing a copy,
    `MyMul.apply(x, x.clone())`, compiles with `fullgraph=True` and gives the eager
    gradient (measured).

    A name counts as a tensor when backward returns a gradient in one of its positions;
    a name passed only where backward returns None (often a number or a flag: Dynamo
    minds only tensors), one bound to a number or string, `None`/`True`/`False`, and
    calls in a function decorated with `torch.compiler.disable` are left alone.

    So is a Function whose code the graph leaves anyway, or may leave as far as the code
    shows: Dynamo traces `forward`, `setup_context` and `backward` as a whole, and one graph
    break there (a call into C through `ctypes` with `x.data_ptr()`, `x.numpy()`,
    `x.item()`, a helper or library gradlint does not follow) runs the whole `apply`
    eagerly, duplicate or not; the copy would then only cost memory. Measured with torch
    2.13: `K.apply(x, x.clone())` with a forward that copies through `ctypes.memmove`
    fails `fullgraph=True` just like `K.apply(x, x)` ("Unsupported method call"), one
    that calls `.item()` raises `InternalTorchDynamoError` (`PendingUnbackedSymbolNotFound`),
    and without `fullgraph` both run eagerly with the right gradient. The rule
    speaks only when every call in those methods is a torch or `math` function, a builtin,
    or a method of a value the method holds (`analysis/traceable.py`).

    ## Example
    ```python
    def square(x):
        return MyMul.apply(x, x)
    ```

    Use instead:
    ```python
    def square(x):
        return MyMul.apply(x, x.clone())
    ```

    ## Fix safety
    The fix passes `x.clone()` in the second position. It is unsafe: it copies the
    tensor (memory), and a Function that modifies an input in place would modify the copy.
    """

    code = "GL045"
    name = "same-tensor-twice-to-apply"
    severity = Severity.WARNING
    summary = "one tensor passed twice to Function.apply: torch.compile breaks the graph (wrong gradients before 2.13)"
    requires = APPLIES_A_FUNCTION
    requires_in_code = True

    VALID = [
        Valid("""
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b
                @staticmethod
                def backward(ctx, g):
                    a, b = ctx.saved_tensors
                    return g * b, g * a
            def square(x):
                return Mul.apply(x, x.clone())
            """, why="a copy is a different tensor: compile-ready"),
        Valid("""
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, k, j):
                    return x * k * j
                @staticmethod
                def backward(ctx, g):
                    return g, None, None
            def f(x):
                k = 2
                return Scale.apply(x, k, k)
            """, why="a number given twice is no tensor input"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b
                @staticmethod
                def backward(ctx, g):
                    a, b = ctx.saved_tensors
                    return g * b, g * a
            def square(x):
                return Mul.apply(x, x)
            """,
            message="`x` is passed twice to `Mul.apply`: torch.compile cannot trace a Function whose "
                    "inputs share a tensor (torch 2.13 breaks the graph there: \"duplicate tensor "
                    "input\"; torch 2.11-2.12 compiled wrong gradients, pytorch#183604); pass a copy, "
                    "`x.clone()`",
            range=(12, 25, 12, 26),
            fixed="""
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b
                @staticmethod
                def backward(ctx, g):
                    a, b = ctx.saved_tensors
                    return g * b, g * a
            def square(x):
                return Mul.apply(x, x.clone())
            """,
            applicability="unsafe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        context = block.context
        index = block.function_index
        for stmt, site in walk_statements(context.statements, context.scope, indexes=block.indexes):
            for call in calls_in_statement(stmt):
                function = index.applied_function(call, site.scope)
                if function is None or _not_compiled(site, block):
                    continue
                block.reads(function.site)
                report = _repeated(call, function, site)
                # (the Function's methods are walked only for a repeat: the graph breaks in them
                # anyway, or the code does not show that it does not, and the rule says nothing)
                if report is not None and stays_in_graph(function, context):
                    yield report


def _repeated(call: cst.Call, function: AutogradFunction, site: Site) -> Report | None:
    """The second of two positions given one name, when the name is a tensor: backward
    returns a gradient for one of the positions (a name bound only to a literal, or
    passed where backward returns None, may be a number: Dynamo minds tensors only)."""
    name = function.name
    seen: dict[str, int] = {}
    for position, arg in enumerate(call.args):
        if arg.star or arg.keyword is not None:
            return None  # positions unknown from here on
        value = arg.value
        if not isinstance(value, cst.Name) or value.value in _CONSTANTS or _not_a_tensor(value.value, site.scope):
            continue
        first = seen.setdefault(value.value, position)
        if first != position and (gets_gradient(function, first) or gets_gradient(function, position)):
            message = (f"`{value.value}` is passed twice to `{name}.apply`: torch.compile cannot trace a "
                       f"Function whose inputs share a tensor (torch 2.13 breaks the graph there: "
                       f"\"duplicate tensor input\"; torch 2.11-2.12 compiled wrong gradients, "
                       f"pytorch#183604); pass a copy, `{value.value}.clone()`")
            fix = FixProposal(f"Pass a copy of `{value.value}`", Applicability.UNSAFE,
                              (Replacement(value, f"{value.value}.clone()", site),))
            return Report(value, message, site, fix)
    return None


_CONSTANTS = frozenset({"None", "True", "False", "Ellipsis", "NotImplemented"})
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _not_a_tensor(name: str, scope: Scope) -> bool:
    """Is ``name`` bound only to a number or string literal (or None/True/False)?"""
    owner = scope.binding_scope(name)
    if owner is None:
        return False
    bindings = owner.table.bindings.get(name, [])
    if not bindings:
        return False
    for binding in bindings:
        value = binding.value
        if binding.kind is not BindingKind.ASSIGN:
            return False
        if isinstance(value, cst.UnaryOperation):
            value = value.expression
        if isinstance(value, _LITERALS):
            continue
        if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
            continue
        return False
    return True


def _not_compiled(site: Site, block: BlockAnalysis) -> bool:
    """Is the call inside a function decorated with torch.compiler.disable?"""
    scope: Scope | None = site.scope
    while scope is not None and scope.kind != "module":
        node = getattr(scope, "node", None)
        if isinstance(node, cst.FunctionDef):
            for deco in node.decorators:
                expr = deco.decorator.func if isinstance(deco.decorator, cst.Call) else deco.decorator
                if block.context.qualified(expr, scope.parent if scope.parent else scope) in NOT_COMPILED:
                    return True
        scope = scope.parent
    return False
