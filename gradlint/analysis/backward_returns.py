"""What backward returns for each input of forward (shared by the rules that ask)."""

from __future__ import annotations

import libcst as cst

from ..analysis.autograd_functions import AutogradFunction, Method
from ..analysis.names import BindingKind
from ..rules.functions.gl004_backward_gradient_count import backward_returns


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def returned_values(function: AutogradFunction) -> list[tuple[cst.BaseExpression, ...]]:
    """The values of each backward `return` written out as a tuple (others are skipped)."""
    backward = function.backward
    if backward is None or "backward" in function.inherited:
        return []
    return [r.values for r in backward_returns(backward) if r.values is not None]


def gets_gradient(function: AutogradFunction, position: int) -> bool:
    """Does some return of backward give something other than None to input ``position``
    (so that the author treats that input as a differentiable tensor)?"""
    for values in returned_values(function):
        if position < len(values) and not _is_none(values[position]):
            return True
    return False


def certainly_not_none(expr: cst.BaseExpression, method: Method, depth: int = 0) -> bool:
    """An expression that cannot evaluate to None: arithmetic, or a call of a tensor
    method, or a name every assignment of which is one of those."""
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return True  # `g.sum()`, `torch.zeros_like(x)`: methods and torch functions
    if isinstance(expr, cst.Name) and depth < 3:
        bindings = method.scope.table.bindings.get(expr.value, [])
        return bool(bindings) and all(
            b.kind is BindingKind.ASSIGN and b.value is not None and
            certainly_not_none(b.value, method, depth + 1) for b in bindings)
    return False


def differentiable_inputs(function: AutogradFunction) -> dict[str, int]:
    """Forward parameters (by name, with their position) that backward returns a
    gradient for, and that forward never rebinds: certainly tensors."""
    signature = function.forward_inputs()
    forward = function.forward
    if signature is None or forward is None:
        return {}
    found = {}
    for position, param in enumerate(signature[0]):
        name = param.name.value
        if len(forward.scope.table.bindings.get(name, [])) == 1 and gets_gradient(function, position):
            found[name] = position
    return found
