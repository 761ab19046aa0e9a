from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.autograd_functions import Method
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import custom_ops, ops_given_a_gradient
from ...analysis.gradcheck_calls import calls_in_statement
from ...analysis.scopes import Site, walk_statements
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid

DEFINES_FORWARD = re.compile(r"def\s+forward\b")
# a file that may call a custom op: `torch.ops.`, or one that defines an op
MENTIONS_OPS = re.compile(r"ops\.|custom_op|library")
# torch's own operator namespaces (their ops have autograd formulas of torch's)
TORCH_NAMESPACES = frozenset({
    "aten", "prims", "prim", "quantized", "_quantized", "quantized_decomposed", "higher_order",
    "c10d", "_c10d_functional", "_c10d_functional_autograd", "_dtensor", "profiler", "rngprims",
    "debugprims", "mkldnn", "onednn", "inductor", "_inductor_test", "_test", "sparse", "cuda",
})
_OPS_CALL = re.compile(r"^torch\.ops\.(\w+)\.(\w+)")

MESSAGE = ("`{function}.forward` calls the custom op `{op}`: torch's custom-op guide advises giving the op its "
           "gradient with torch.library.register_autograd instead of an autograd.Function around it (the "
           "composition has given silently wrong results under torch.compile, pytorch#180642); with torch 2.13 the "
           "registered op loses eager torch.func support, so keep the Function if you rely on it")


class FunctionWrapsCustomOp(Rule):
    """## What it does
    Checks for a `torch.autograd.Function` whose `forward` calls a functional
    `torch.library` custom op this module defines (`@torch.library.custom_op` or
    `torch.library.define`, called by name or as `torch.ops.mylib.op(...)`) and gives no
    gradient with `register_autograd`.

    ## Why is this bad?
    A custom op gets its gradient from `torch.library.register_autograd`; the custom-ops
    tutorial warns that wrapping one in an autograd.Function instead is a composition
    that "can lead to (and has led to) silent incorrectness when composed with
    torch.compile" (pytorch#180642: compiled custom ops gave wrong outputs in torch 2.11).

    That is advice, not a failure gradlint measured, hence a hint. Measured with torch
    2.13 (`tests/test_compile_rules_ground_truth.py`), a `setup_context` Function around
    an op with a fake impl and no `register_autograd`, against the op with
    `register_autograd` called directly:

    | | Function around the op | op with `register_autograd` |
    |---|---|---|
    | eager autograd | right gradient | right gradient |
    | eager `torch.func.grad` | right gradient | `RuntimeError`: "must override the setup_context staticmethod" |
    | `torch.compile` with autograd | right gradient | right gradient (`fullgraph=True`) |
    | `torch.compile(torch.func.grad(f))` | `TorchRuntimeError` | `TorchRuntimeError` |

    So the registration is what torch's docs ask for and what `torch.library.opcheck`
    tests, but with torch 2.13 it gives up eager `torch.func` support: keep the Function
    (and suppress this hint) if you rely on it. A module that registers autograd for the
    same op (`torch.library.register_autograd("ns::op", ...)`, `op.register_autograd(...)`)
    already does what the hint asks and keeps the Function for another path (an eager
    `torch.func` path beside `torch.compiler.is_compiling()`): left alone.

    Left alone, because the advice does not apply or the code does not show that it does:
    ops of torch's own namespaces (`torch.ops.aten...`); ops defined elsewhere (another
    module, C++: whether they mutate or already have a gradient is unknown); ops that
    mutate an input or return nothing (`mutates_args=("out",)`, a `(a!)` schema):
    `register_autograd` refuses them (torch 2.13: `RuntimeError: Cannot register autograd
    formula for non-functional operator`), so an autograd.Function is the way to give them
    a gradient.

    ## Example
    ```python
    class MySin(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return torch.ops.mylib.sin(x)
        ...
    ```

    Use instead:
    ```python
    torch.library.register_autograd("mylib::sin", backward, setup_context=setup_context)
    y = torch.ops.mylib.sin(x)
    ```

    ## Fix safety
    No fix: the backward moves to a registration.
    """

    code = "GL047"
    name = "function-wraps-custom-op"
    severity = Severity.HINT
    summary = "autograd.Function around a torch.library custom op: torch's docs advise register_autograd"
    requires = DEFINES_FORWARD
    requires_in_code = True
    requires_in_file = MENTIONS_OPS  # the op may be defined in another block

    VALID = [
        Valid("""
            import torch
            @torch.library.custom_op("mylib::sin", mutates_args=())
            def mysin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()
            @mysin.register_fake
            def _(x):
                return torch.empty_like(x)
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * x.cos()
            mysin.register_autograd(backward, setup_context=setup_context)
            @torch.compile(fullgraph=True)
            def f(x):
                return mysin(x).sum()
            """, why="compile-ready: the op carries its gradient"),
        Valid("""
            import torch
            class Mm(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return torch.ops.aten.mm(a, b)
                @staticmethod
                def backward(ctx, g):
                    a, b = ctx.saved_tensors
                    return g @ b.t(), a.t() @ g
            """, why="an op of torch's own"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            @torch.library.custom_op("mylib::sin", mutates_args=())
            def mysin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()
            @mysin.register_fake
            def _(x):
                return torch.empty_like(x)
            class MySin(torch.autograd.Function):
                @staticmethod
                def forward(x):
                    return torch.ops.mylib.sin(x)
                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])
                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return g * x.cos()
            """,
            message=MESSAGE.format(function="MySin", op="mylib::sin"),
            range=(11, 16, 11, 38),
        ),
        Invalid(
            """
            import torch
            from torch.library import custom_op
            @custom_op("mylib::cube", mutates_args=())
            def cube(x: torch.Tensor) -> torch.Tensor:
                return x ** 3
            class Cube(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return cube(x)
                @staticmethod
                def backward(ctx, g):
                    x, = ctx.saved_tensors
                    return 3 * g * x * x
            """,
            message=MESSAGE.format(function="Cube", op="mylib::cube"),
            range=(10, 16, 10, 23),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        context = block.context
        every_op = custom_ops(context)
        ops = {op.python_name: op for op in every_op if op.python_name and op.name}
        named = {}
        for op in every_op:
            if op.name:
                named[op.name] = op if op.name not in named else None  # a name defined twice: unknown
        registered = None  # ops_given_a_gradient, asked for only once an op is called
        for function in block.autograd_functions:
            forward = function.forward
            if forward is None or "forward" in function.inherited:
                continue
            for call, site in _calls(forward):
                called = _custom_op(call, site.scope, context, ops)
                op = named.get(called) if isinstance(called, str) else called
                if op is None:
                    continue  # not a custom op, or one defined elsewhere: what it is is unknown
                block.reads(op.site)
                if not op.known_functional:
                    continue  # register_autograd refuses a mutating op (torch 2.13 RuntimeError)
                if registered is None:
                    registered = ops_given_a_gradient(context)
                if op.name in registered:
                    block.reads(registered[op.name])
                    continue  # the op has its gradient registered in this module too
                yield Report(call, MESSAGE.format(function=function.name, op=op.name), site)
                break  # one report per Function


def _calls(method: Method) -> Iterator[tuple[cst.Call, Site]]:
    for stmt, site in walk_statements(method.scope.statements, method.scope):
        for call in calls_in_statement(stmt):
            yield call, site


def _custom_op(call: cst.Call, scope, context, ops: dict) -> object | None:
    """"ns::name" of the custom op ``call`` calls (or the module's CustomOp), or None."""
    qualified = context.qualified(call.func, scope)
    if qualified:
        found = _OPS_CALL.match(qualified)
        if found and found.group(1) not in TORCH_NAMESPACES:
            return "%s::%s" % (found.group(1), found.group(2))
    if isinstance(call.func, cst.Name):
        owner = scope.binding_scope(call.func.value)
        if owner is not None and owner.kind == "module" and call.func.value in ops:
            return ops[call.func.value]
    return None
