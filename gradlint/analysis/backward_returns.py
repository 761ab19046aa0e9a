"""What the backward of an autograd Function returns: each `return` with how many values it
gives (when known), and what that says about each input of forward (shared by the rules
that ask)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from . import memos
from .autograd_functions import AutogradFunction, Method
from .names import BindingKind, compound_bodies
from .scopes import Site, find_site
from .traverse import visit

__all__ = ["Returned", "backward_returns", "certainly_not_none", "differentiable_inputs",
           "gets_gradient", "returned_values", "tuple_arithmetic"]

# torch functions and tensor methods that return tuples, never a single tensor
_TUPLE_RETURNING = frozenset({
    "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "sort", "topk",
    "kthvalue", "mode", "median", "max", "min", "aminmax", "svd", "qr", "eig", "eigh", "slogdet",
    "lu", "frexp", "histogram", "unique", "unique_consecutive", "meshgrid", "broadcast_tensors",
    "where", "nonzero", "cummax", "cummin", "tolist", "size", "shape", "lstsq", "std_mean",
    "var_mean", "grad",
})


@dataclass(frozen=True)
class Returned:
    """One `return` of a backward: how many values it gives, and which."""

    count: int
    values: tuple[cst.BaseExpression, ...] | None  # the returned expressions, when literal
    node: cst.Return
    site: Site


class _Returns(cst.CSTVisitor):
    def __init__(self) -> None:
        self.returns: list[cst.Return] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.returns.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def backward_returns(method: Method) -> Iterator[Returned]:
    """Every `return` of a backward with how many values it gives (when known).

    Several rules ask, some once per input: the answer is remembered for the lint. It is
    safe to share: it reads only ``method`` (its nodes and scope, which belong to the same
    lint), and ``Returned`` is frozen."""
    known = memos.recall(_BACKWARD_RETURNS, id(method), method)
    if known is memos.MISSING:
        known = tuple(_backward_returns(method))
        memos.remember(_BACKWARD_RETURNS, id(method), method, known)
    return iter(known)


_BACKWARD_RETURNS: dict = memos.memo(memos.NEAR_ENTRIES)  # id(method) -> (method, its returns)


def _backward_returns(method: Method) -> Iterator[Returned]:
    visitor = _Returns()
    for stmt in method.scope.statements:
        visit(stmt, visitor)
    for node in visitor.returns:
        site = _return_site(method, node)
        if site is None:
            continue
        if _is_none_return(node) and _guarded_by_needs_input_grad(site):
            continue  # `if not any(ctx.needs_input_grad): return None` never runs
        counted = _count(node.value, method, site)
        if counted is not None:
            count, values = counted
            yield Returned(count, values, node, site)


def _is_none_return(node: cst.Return) -> bool:
    return node.value is None or (isinstance(node.value, cst.Name) and node.value.value == "None")


def _guarded_by_needs_input_grad(site: Site) -> bool:
    for frame in site.frames:
        owner = frame.owner
        if isinstance(owner, cst.If) and _mentions_needs_input_grad(owner.test):
            return True
    return False


def _mentions_needs_input_grad(node: cst.CSTNode) -> bool:
    found = []

    class Visitor(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            if attribute.attr.value == "needs_input_grad":
                found.append(attribute)

    visit(node, Visitor())
    return bool(found)


def _return_site(method: Method, node: cst.Return) -> Site | None:
    for line in _lines(method.scope.statements):
        if any(small is node for small in line.body):
            return find_site(method.scope.statements, method.scope, line)
    return None


def _lines(statements):
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            for body, _ in compound_bodies(stmt):
                yield from _lines(body)


def _count(value: cst.BaseExpression | None, method: Method, site: Site
           ) -> tuple[int, tuple[cst.BaseExpression, ...] | None] | None:
    """(how many values a return gives, the values when written out) or None if unknown."""
    if value is None:
        return 1, (cst.Name("None"),)
    if isinstance(value, cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return len(value.elements), tuple(e.value for e in value.elements)
    if isinstance(value, cst.List):
        return 1, (value,)  # torch takes a list as one value
    if isinstance(value, cst.BinaryOperation):
        counted = tuple_arithmetic(value)
        if counted is not None:
            return counted
    if isinstance(value, cst.IfExp):
        body = _count(value.body, method, site)
        orelse = _count(value.orelse, method, site)
        if body is not None and orelse is not None and body[0] == orelse[0]:
            return body[0], None
        return None
    if isinstance(value, cst.Name):
        if value.value == "None":
            return 1, (value,)
        counted = _name_count(value.value, method)
        if counted is not None and counted[0] == 1:
            return 1, (value,)
        return counted
    if _single_tensor(value):
        return 1, (value,)
    return None


def tuple_arithmetic(value: cst.BinaryOperation) -> tuple[int, tuple | None] | None:
    """`(a, b) + (None,) * 2`: tuples concatenated and repeated by literal counts."""
    if isinstance(value.operator, cst.Add):
        left, right = _literal_tuple(value.left), _literal_tuple(value.right)
        if left is None or right is None:
            return None
        return len(left) + len(right), left + right
    if isinstance(value.operator, cst.Multiply):
        for items, times in ((value.left, value.right), (value.right, value.left)):
            elements = _literal_tuple(items)
            if elements is not None and isinstance(times, cst.Integer):
                repeat = int(times.value)
                return len(elements) * repeat, elements * repeat
    return None


def _literal_tuple(node: cst.BaseExpression) -> tuple[cst.BaseExpression, ...] | None:
    if isinstance(node, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in node.elements):
        return tuple(e.value for e in node.elements)
    if isinstance(node, cst.BinaryOperation):
        counted = tuple_arithmetic(node)
        if counted is not None and counted[1] is not None:
            return counted[1]
    return None


def _name_count(name: str, method: Method) -> tuple[int, tuple | None] | None:
    bindings = method.scope.table.bindings.get(name, [])
    if not bindings or any(b.kind is not BindingKind.ASSIGN for b in bindings):
        return None
    counts = set()
    for binding in bindings:
        value = binding.value
        if value is None:
            return None
        if isinstance(value, cst.Tuple):
            if any(isinstance(e, cst.StarredElement) for e in value.elements):
                return None
            counts.add(len(value.elements))
        elif (isinstance(value, cst.Name) and value.value == "None") or _single_tensor(value):
            counts.add(1)
        else:
            return None
    if len(counts) == 1:
        return counts.pop(), None
    return None


def _single_tensor(expr: cst.BaseExpression) -> bool:
    """An expression that evaluates to one tensor (never a tuple)."""
    if isinstance(expr, cst.BinaryOperation):
        return _arithmetic_operand(expr.left) and _arithmetic_operand(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _arithmetic_operand(expr.expression)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        if expr.func.attr.value == "where":  # where(cond) gives a tuple, where(c, a, b) a tensor
            return len(expr.args) == 3
        return expr.func.attr.value in _TENSOR_RESULT
    return False


# tensor methods (and torch functions of the same name) that return a single tensor
_TENSOR_RESULT = frozenset({
    "clone", "contiguous", "mul", "mul_", "div", "div_", "add", "add_", "sub", "sub_", "neg",
    "mm", "bmm", "matmul", "mv", "sum", "mean", "prod", "view", "view_as", "reshape",
    "reshape_as", "expand", "expand_as", "t", "transpose", "permute", "unsqueeze", "squeeze",
    "flatten", "masked_fill", "masked_fill_", "masked_scatter", "index_select", "gather",
    "scatter", "scatter_add", "index_add", "pow", "exp", "log", "sqrt", "rsqrt", "abs", "sign",
    "sigmoid", "tanh", "relu", "clamp", "clamp_min", "clamp_max", "to", "type_as", "double",
    "float", "half", "new_zeros", "new_ones", "new_full", "new_empty", "zeros_like", "ones_like",
    "full_like", "empty_like", "cat", "stack", "outer", "einsum", "conj", "real", "imag",
    "narrow", "select", "roll", "flip", "repeat", "repeat_interleave", "tile", "tril", "triu",
    "diag", "diag_embed", "diagonal", "cumsum", "cumprod", "softmax", "log_softmax", "addmm",
    "addcmul", "addcdiv", "lerp", "reciprocal", "square", "mul_scalar", "sum_to_size",
})


def _arithmetic_operand(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Tuple, cst.List, cst.ListComp, cst.GeneratorExp)):
        return False
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
        return _single_tensor(expr)
    if isinstance(expr, cst.Call):
        return not (isinstance(expr.func, cst.Name) and expr.func.value in ("tuple", "list")) and \
            not (isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _TUPLE_RETURNING)
    return True


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
