from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from ...analysis import traverse
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, CustomOp, FunctionRef
from ...analysis.names import body_statements
from ...analysis.scopes import real_site
from ...findings import Severity
from .helpers import functions_here, nodes_of, op_label, site_in
from ..base import MENTIONS_TORCH_LIBRARY, Invalid, Report, Rule, Valid

# what a backward's ctx has without setup_context setting it
_CTX_ATTRIBUTES = frozenset({
    "saved_tensors", "saved_variables", "needs_input_grad", "to_save", "non_differentiable",
    "dirty_tensors", "materialize_grads", "set_materialize_grads", "mark_dirty",
    "mark_non_differentiable", "mark_shared_storage", "save_for_backward", "save_for_forward",
    "saved_for_forward", "metadata", "name", "next_functions", "requires_grad", "register_hook",
    "register_prehook", "apply", "apply_jvp", "maybe_clear_saved_tensors",
})
_SAVED = ("saved_tensors", "saved_variables")


@dataclass
class _Saves:
    count: int | None = 0  # tensors saved with save_for_backward; None: unknown
    attributes: set[str] = field(default_factory=set)
    attributes_known: bool = True


class CustomOpBackwardUsesUnsavedTensor(Rule):
    """## What it does
    Checks what the backward registered for a custom op reads from `ctx` against what the
    registered `setup_context` stores there (nothing, when there is no `setup_context`):

    - `a, b = ctx.saved_tensors` (or `ctx.saved_tensors[i]`) when `setup_context` saved a
      different number of tensors with `ctx.save_for_backward(...)`;
    - `ctx.name` that `setup_context` never assigned.

    ## Why is this bad?
    It fails only when backward runs (torch 2.13): `ValueError: not enough values to unpack
    (expected 1, got 0)` for a tensor never saved, or `AttributeError:
    'GeneratedBackwardFor_mylib_sin_defaultBackward' object has no attribute 'x'`. Values
    that backward needs must be saved in `setup_context`, which torch calls with the op's
    `inputs` and `output` during the forward pass.

    gradlint stays silent when it cannot see everything `setup_context` does (`ctx` passed
    to another function, `setattr`, `save_for_backward(*tensors)`, saves in branches).

    ## Example
    ```python
    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    mysin.register_autograd(backward, setup_context=setup_context)
    ```

    Use instead:
    ```python
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
    ```

    ## Fix safety
    There is no fix: what to save is the author's decision.
    """

    code = "GL036"
    name = "custom-op-backward-uses-unsaved-tensor"
    severity = Severity.ERROR
    summary = "a custom op's backward reads from ctx what setup_context never saved"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::sin", mutates_args=())
            def sin(x: torch.Tensor, k: float) -> torch.Tensor:
                return x.sin() * k

            def setup_context(ctx, inputs, output):
                x, k = inputs
                ctx.save_for_backward(x)
                ctx.k = k

            def backward(ctx, grad):
                x, = ctx.saved_tensors
                if ctx.needs_input_grad[0]:
                    return grad * x.cos() * ctx.k, None
                return None, None

            sin.register_autograd(backward, setup_context=setup_context)
            """),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::sin", mutates_args=())
            def sin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()

            def setup_context(ctx, inputs, output):
                save_all(ctx, inputs)

            def backward(ctx, grad):
                return grad * ctx.cos_x

            sin.register_autograd(backward, setup_context=setup_context)
            """, why="ctx is handed to another function: gradlint cannot see what it sets"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::sin", mutates_args=())
            def sin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()

            def setup_context(ctx, inputs, output):
                pass

            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * x.cos()

            sin.register_autograd(backward, setup_context=setup_context)
            """,
            message="backward of custom op `mylib::sin` unpacks 1 tensor from ctx.saved_tensors, "
                    "but setup_context saves none: torch raises `ValueError: not enough values to "
                    "unpack (expected 1, got 0)` when backward runs",
            range=(11, 5, 11, 27),
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::sin", mutates_args=())
            def sin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()

            def setup_context(ctx, inputs, output):
                ctx.out = output

            def backward(ctx, grad):
                return grad * ctx.x.cos()

            sin.register_autograd(backward, setup_context=setup_context)
            """,
            message="backward of custom op `mylib::sin` reads `ctx.x`, which setup_context never "
                    "sets: torch raises `AttributeError: "
                    "'GeneratedBackwardFor_mylib_sin_defaultBackward' object has no attribute 'x'` "
                    "when backward runs",
            range=(11, 19, 11, 24),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op, _, function in functions_here(block, "backward"):
            node = function.node
            assert isinstance(node, cst.FunctionDef)
            params = [*node.params.posonly_params, *node.params.params]
            if not params:
                continue
            saves = self._saves(op)
            if saves is None:
                continue
            yield from self._reads(op, function, params[0].name.value, saves)

    def _saves(self, op: CustomOp) -> _Saves | None:
        registration = op.setup_context
        if registration is None:
            return _Saves() if op.backward is not None else None
        function = registration.function
        if function is None:
            return None
        node = function.node
        if not isinstance(node, cst.FunctionDef):
            return None
        params = [*node.params.posonly_params, *node.params.params]
        if not params or node.params.star_kwarg is not None:
            return None
        ctx = params[0].name.value
        saves = _Saves()
        calls = 0
        top = {id(s) for s in body_statements(node.body)}
        root = node.body
        for name_node, statement in nodes_of(root, cst.Name):
            if name_node.value == ctx and not _is_attribute_base(name_node, statement):
                saves.attributes_known = False  # ctx passed on, aliased, or setattr(ctx, ...)
        for call, statement in nodes_of(root, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and _is_ctx(func.value, ctx) and \
                    func.attr.value == "save_for_backward":
                calls += 1
                if any(a.star for a in call.args) or id(statement) not in top:
                    saves.count = None
                elif saves.count is not None:
                    saves.count = len(call.args)
        if calls > 1:
            saves.count = None
        for target, _ in nodes_of(root, cst.AssignTarget):
            _collect_attributes(target.target, ctx, saves.attributes)
        for target, _ in nodes_of(root, cst.AugAssign):
            _collect_attributes(target.target, ctx, saves.attributes)
        for target, _ in nodes_of(root, cst.AnnAssign):
            _collect_attributes(target.target, ctx, saves.attributes)
        return saves

    def _reads(self, op: CustomOp, function: FunctionRef, ctx: str, saves: _Saves
               ) -> Iterator[Report]:
        node = function.node
        assert isinstance(node, cst.FunctionDef)
        where = ("no setup_context is registered, so nothing is saved"
                 if op.setup_context is None else None)
        own: set[str] = set()
        for target, _ in nodes_of(node.body, cst.AssignTarget):
            _collect_attributes(target.target, ctx, own)
        for assign, statement in nodes_of(node.body, cst.Assign):
            value = assign.value
            if not (isinstance(value, cst.Attribute) and _is_ctx(value.value, ctx) and
                    value.attr.value in _SAVED) or saves.count is None:
                continue
            if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, (cst.Tuple, cst.List)):
                continue
            elements = assign.targets[0].target.elements
            if any(isinstance(e, cst.StarredElement) for e in elements) or len(elements) == saves.count:
                continue
            expected = len(elements)
            saved = "none" if saves.count == 0 else f"{saves.count}"
            error = (f"`ValueError: not enough values to unpack (expected {expected}, got "
                     f"{saves.count})`" if expected > saves.count else
                     f"`ValueError: too many values to unpack (expected {expected})`")
            message = (f"backward of custom op {op_label(op)} unpacks {expected} "
                       f"tensor{'s' if expected != 1 else ''} from ctx.{value.attr.value}, but "
                       f"{where or f'setup_context saves {saved}'}: torch raises {error} when "
                       f"backward runs")
            site = _site(function, statement)
            if site is not None:
                yield Report(assign, message, site)
        if not saves.attributes_known:
            return
        reported: set[str] = set()
        for attribute, statement in nodes_of(node.body, cst.Attribute):
            name = attribute.attr.value
            if not _is_ctx(attribute.value, ctx) or name in _CTX_ATTRIBUTES or name.startswith("_") \
                    or name in saves.attributes or name in own or name in reported:
                continue
            reported.add(name)
            generated = "GeneratedBackwardFor_..."
            if op.name is not None:
                namespace, short = op.name.split("::", 1)
                generated = f"GeneratedBackwardFor_{namespace}_{short}_defaultBackward"
            never = "but no setup_context is registered" if where else "which setup_context never sets"
            message = (f"backward of custom op {op_label(op)} reads `ctx.{name}`, {never}: torch "
                       f"raises `AttributeError: '{generated}' object has no attribute '{name}'` "
                       f"when backward runs")
            site = _site(function, statement)
            if site is not None:
                yield Report(attribute, message, site)


def _site(function: FunctionRef, statement: cst.BaseStatement):
    site = site_in(function, statement)
    return real_site(site) if site is not None else None


def _is_ctx(expr: cst.BaseExpression, ctx: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == ctx


def _is_attribute_base(name: cst.Name, statement: cst.BaseStatement) -> bool:
    """Is this use of ctx the object of an attribute access (`ctx.x`)?"""
    finder = _AttributeBases(name)
    traverse.visit(statement, finder)
    return finder.found


class _AttributeBases(cst.CSTVisitor):
    def __init__(self, name: cst.Name):
        self.name = name
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.value is self.name:
            self.found = True


def _collect_attributes(target: cst.BaseExpression, ctx: str, into: set[str]) -> None:
    if isinstance(target, cst.Attribute) and _is_ctx(target.value, ctx):
        into.add(target.attr.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _collect_attributes(element.value, ctx, into)
