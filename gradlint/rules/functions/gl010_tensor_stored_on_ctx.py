from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis import traverse
from ...analysis import torch_ops
from ...analysis.autograd_functions import AutogradFunction, Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import (
    CtxStore, assigned_from, ctx_calls, ctx_reads, ctx_stores, exclusive_branches, returned_names,
)
from ...analysis.scopes import ModuleContext
from ...findings import Severity
from ..base import DEFINES_BACKWARD, Invalid, Report, Rule, Valid
from ...analysis.backward_returns import differentiable_inputs


class TensorStoredOnCtx(Rule):
    """## What it does
    Checks for tensors that `forward` (or `setup_context`) stores as attributes of
    `ctx` (`ctx.x = x`) and `backward` then reads for their values, instead of saving
    them with `ctx.save_for_backward`. Reported for inputs that backward returns a
    gradient for, for outputs of forward, and for intermediates computed from them.
    Attributes read in backward only for their metadata (`ctx.x.shape`,
    `ctx.x.size()`, `ctx.x.dtype`) are not reported, nor a store on one branch of an
    `if` whose other branch saves the same tensor with `save_for_backward` (a deliberate
    fallback, e.g. for old torch versions).

    ## Why is this bad?
    Measured with torch 2.13:

    - no version check: after `y = F.apply(h); h.add_(10)`, a Function that kept
      `ctx.x = h` computed gradients `[22, 24, 26]` instead of `[2, 4, 6]`, silently,
      where `save_for_backward` raises `RuntimeError: one of the variables needed for
      gradient computation has been modified by an inplace operation`;
    - an output kept on ctx makes the cycle ctx → output → output.grad_fn → ctx: the
      graph is not freed when the output goes away, only by Python's cyclic garbage
      collector (measured: alive after `del`, gone after `gc.collect()`);
    - saved tensors are freed after backward (a second backward raises "Trying to
      backward through the graph a second time"); ctx attributes stay alive as long as
      the graph does (a second backward silently accumulates again);
    - ctx attributes bypass `torch.autograd.graph.saved_tensors_hooks` (activation
      offloading, checkpointing tools).

    (Double backward is not affected for inputs: measured, gradgradcheck passes with
    `ctx.x = x`.)

    ## Example
    ```python
    @staticmethod
    def forward(ctx, x, w):
        ctx.x, ctx.w = x, w
        return x @ w

    @staticmethod
    def backward(ctx, g):
        return g @ ctx.w.t(), ctx.x.t() @ g
    ```

    Use instead:
    ```python
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.t(), x.t() @ g
    ```

    ## Fix safety
    No fix: backward must unpack `ctx.saved_tensors` instead, in the order saved.
    """

    code = "GL010"
    name = "tensor-stored-on-ctx"
    severity = Severity.WARNING
    summary = "a tensor kept as a ctx attribute for backward instead of ctx.save_for_backward"
    requires = DEFINES_BACKWARD

    VALID = [
        Valid("""
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, factor):
                    ctx.factor = factor
                    ctx.shape = x.shape
                    return x * factor

                @staticmethod
                def backward(ctx, g):
                    return g * ctx.factor, None
            """, why="non-tensors belong on ctx"),
        Valid("""
            import torch
            class Sum(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.x = x
                    return x.sum()

                @staticmethod
                def backward(ctx, g):
                    return g.expand(ctx.x.shape)
            """, why="only metadata is read (better: store the shape, but not a gradient bug)"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class MatMul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.x = x
                    ctx.save_for_backward(w)
                    return x @ w

                @staticmethod
                def backward(ctx, g):
                    w, = ctx.saved_tensors
                    return g @ w.t(), ctx.x.t() @ g
            """,
            message="forward keeps input `x` as `ctx.x` for backward instead of saving it with "
                    "ctx.save_for_backward: no version check, so an in-place change of `x` after "
                    "forward silently gives wrong gradients, and the tensor lives as long as the graph",
            range=(5, 9, 5, 14),
        ),
        Invalid(
            """
            import torch
            class Exp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    result = x.exp()
                    ctx.result = result
                    return result

                @staticmethod
                def backward(ctx, g):
                    return g * ctx.result
            """,
            message="forward keeps its output `result` as `ctx.result` for backward instead of "
                    "saving it with ctx.save_for_backward: ctx → output → grad_fn → ctx is a "
                    "reference cycle (the graph is freed only by the cyclic garbage collector), "
                    "and there is no version check",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            backward = function.backward
            forward = function.forward
            if backward is None or forward is None or function.style != "ctx" or \
                    {"forward", "backward"} & function.inherited:
                continue
            value_reads = _value_reads(function)
            if not value_reads:
                continue
            inputs = differentiable_inputs(function)
            outputs = returned_names(forward) or set()
            tensors = _tensor_names(block.context, forward, set(inputs))
            params = {p.name.value for p in forward.params}
            saves = ctx_calls(forward, "save_for_backward")
            for store in ctx_stores(forward):
                if store.attr not in value_reads or not isinstance(store.value, cst.Name):
                    continue
                name = store.value.value
                if any(exclusive_branches(store.site, save.site) and _passes(save.call, name)
                       for save in saves):
                    continue  # the other branch saves it: a deliberate fallback
                if name in inputs:
                    kind = "input"
                elif name in params:
                    continue  # an input backward gives no gradient: maybe not a tensor
                elif name in outputs and name in tensors:
                    kind = "output"
                elif name in tensors:
                    kind = "intermediate"
                else:
                    continue
                yield _report(store, name, kind)


def _report(store: CtxStore, name: str, kind: str) -> Report:
    target = f"`ctx.{store.attr}`"
    if kind == "input":
        what = f"input `{name}`"
        why = (f"no version check, so an in-place change of `{name}` after forward silently "
               f"gives wrong gradients, and the tensor lives as long as the graph")
    elif kind == "output":
        what = f"its output `{name}`"
        why = ("ctx → output → grad_fn → ctx is a reference cycle (the graph is freed only by "
               "the cyclic garbage collector), and there is no version check")
    else:
        what = f"the intermediate `{name}`"
        why = ("it stays alive as long as the graph instead of being freed after backward, and "
               "saved-tensor hooks do not see it")
    message = (f"forward keeps {what} as {target} for backward instead of saving it with "
               f"ctx.save_for_backward: {why}")
    return Report(store.target, message, store.site)


def _passes(call: cst.Call, name: str) -> bool:
    return any(isinstance(a.value, cst.Name) and a.value.value == name for a in call.args)


def _value_reads(function: AutogradFunction) -> set[str]:
    """ctx attributes that backward reads for more than their metadata (`.shape`,
    `.dtype`, `torch.zeros_like(...)`, `is None`), directly or through a local name."""
    backward = function.backward
    if backward is None:
        return set()
    found: set[str] = set()
    aliases: dict[str, set[str]] = {}
    for attr, node, parent in ctx_reads(backward):
        if _metadata_use(parent, node):
            continue
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and \
                isinstance(parent.targets[0].target, cst.Name) and parent.value is node:
            aliases.setdefault(parent.targets[0].target.value, set()).add(attr)
            continue
        found.add(attr)
    for name, attrs in aliases.items():
        if len(backward.scope.table.bindings.get(name, [])) != 1 or \
                not all(_metadata_use(parent, node) for node, parent in _name_uses(backward, name)):
            found |= attrs
    return found


def _metadata_use(parent: cst.CSTNode | None, node: cst.CSTNode) -> bool:
    if isinstance(parent, cst.Attribute) and parent.value is node:
        return parent.attr.value in torch_ops.METADATA
    if isinstance(parent, cst.Comparison) and parent.left is node and all(
            isinstance(c.operator, (cst.Is, cst.IsNot)) for c in parent.comparisons):
        return True
    if isinstance(parent, cst.Call) and _like_call(parent) and parent.args and \
            parent.args[0].value is node:
        return True
    return False


def _like_call(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else \
        func.value if isinstance(func, cst.Name) else ""
    return name in ("zeros_like", "ones_like", "empty_like", "full_like")


class _Uses(cst.CSTVisitor):
    """Uses of a name with their parent node (an argument's parent is its call)."""

    skip_trivia = True  # (traverse.visit: a name is never inside, nor the child of, a layout node)

    def __init__(self, name: str):
        self.name = name
        self.found: list[tuple[cst.Name, cst.CSTNode | None]] = []
        self._parents: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        parent = self._parents[-1] if self._parents else None
        if isinstance(node, cst.Name) and node.value == self.name and \
                not (isinstance(parent, cst.Attribute) and parent.attr is node):
            if isinstance(parent, cst.Arg) and len(self._parents) > 1:
                parent = self._parents[-2]
            self.found.append((node, parent))
        self._parents.append(node)
        return not isinstance(node, cst.AssignTarget)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._parents.pop()


def _name_uses(method: Method, name: str) -> list[tuple[cst.Name, cst.CSTNode | None]]:
    visitor = _Uses(name)
    for stmt in method.scope.statements:
        traverse.visit(stmt, visitor)
    return visitor.found


def _tensor_names(context: ModuleContext, forward: Method, known: set[str]) -> set[str]:
    """Names of forward bound to tensors: ``known`` ones, what save_for_backward takes,
    and locals computed from tensors by torch ops, tensor methods and arithmetic."""
    tensors = set(known)
    for saved in ctx_calls(forward, "save_for_backward"):
        tensors |= {a.value.value for a in saved.call.args if isinstance(a.value, cst.Name)
                    and not a.star}
    changed = True
    while changed:
        changed = False
        for name in forward.scope.table.bindings:
            if name in tensors:
                continue
            values = assigned_from(forward, name)
            if values and all(_tensor_valued(context, forward, value, tensors) for value in values):
                tensors.add(name)
                changed = True
    return tensors


def _tensor_valued(context: ModuleContext, method: Method, expr: cst.BaseExpression,
                   tensors: set[str]) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value in tensors
    if isinstance(expr, cst.BinaryOperation):
        return any(_tensor_valued(context, method, side, tensors) for side in (expr.left, expr.right))
    if isinstance(expr, cst.UnaryOperation):
        return _tensor_valued(context, method, expr.expression, tensors)
    if isinstance(expr, cst.Call):
        qualified = context.qualified(expr.func, method.scope)
        if qualified is not None:
            short = qualified.rsplit(".", 1)[-1]
            return qualified in (f"torch.{short}", f"torch.nn.functional.{short}") and \
                short in torch_ops.TENSOR_RESULT
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in torch_ops.TENSOR_RESULT:
            return _tensor_valued(context, method, func.value, tensors)
    return False
