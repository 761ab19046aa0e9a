"""Helpers the custom-op and torch.func rules share."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis import memos, traverse
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import (KEYWORD_ONLY, POSITIONAL, POSITIONAL_ONLY, CustomOp, FunctionRef,
                                   OpParameter, Registration)
from ...analysis.names import ScopeTable, body_statements
from ...analysis.scopes import Site, find_site


def op_label(op: CustomOp) -> str:
    if op.name:
        return f"`{op.name}`"
    return f"`{op.python_name}`" if op.python_name else "the custom op"


def functions_here(block: BlockAnalysis, kind: str) -> Iterator[tuple[CustomOp, Registration, FunctionRef]]:
    """(op, registration, def) for registered functions of ``kind`` whose def is in this block."""
    for op in block.custom_op_parts:
        for registration in op.registered(kind):
            function = registration.function
            if function is not None and isinstance(function.node, cst.FunctionDef) and \
                    block.holds(function.site):
                yield op, registration, function


def def_params(node: cst.FunctionDef) -> list[cst.Param]:
    return [*node.params.posonly_params, *node.params.params]


def returns_of(node: cst.FunctionDef) -> Iterator[tuple[cst.Return, cst.BaseStatement]]:
    """Return statements of a function (not of functions nested in it), each with the
    innermost real statement holding it (the compound statement for `if x: return y`)."""
    yield from nodes_of(node.body, cst.Return)  # type: ignore[misc]


def nodes_of(root: cst.CSTNode, kind: type) -> Iterator[tuple[cst.CSTNode, cst.BaseStatement]]:
    """Nodes of a type in a function body (not in nested functions), with their statements.

    The rules ask about the same bodies for one kind after another (calls, branches, loops,
    assignments: five kinds a body on average): one walk per body records the nodes of every
    kind, kept for the lint."""
    known = memos.recall(_NODES, id(root), root)
    if known is memos.MISSING:
        visitor = _Statements()
        traverse.visit(root, visitor)
        known = visitor.found
        memos.remember(_NODES, id(root), root, known)
    yield from known.get(kind, ())  # type: ignore[union-attr]


_NODES: dict = memos.memo(memos.NEAR_ENTRIES)  # id(root) -> (root, {node class: [(node, statement)]})


def site_in(function: FunctionRef, statement: cst.BaseStatement) -> Site | None:
    """The site of a statement of ``function`` (its own scope, nested blocks included)."""
    return find_site(function.scope.statements, function.scope, statement)


class _Statements(cst.CSTVisitor):
    skip_trivia = True  # (traverse.visit: never a statement, a scope or a kind looked for)

    def __init__(self) -> None:
        self.stack: list[cst.BaseStatement] = []
        self.found: dict[type, list[tuple[cst.CSTNode, cst.BaseStatement]]] = {}  # by exact class

    def on_visit(self, node: cst.CSTNode) -> bool:
        # (type tests: isinstance on libcst's abstract classes cost a third of this walk)
        node_type = type(node)
        if node_type in _SCOPES:
            return False
        if node_type in _STATEMENTS:
            self.stack.append(node)
        if self.stack:
            found = self.found.get(node_type)
            if found is None:
                found = self.found[node_type] = []
            found.append((node, self.stack[-1]))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if type(original_node) in _STATEMENTS and self.stack and self.stack[-1] is original_node:
            self.stack.pop()


_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
# every concrete statement class (libcst's are final: a type test answers what isinstance would)
_STATEMENTS = frozenset({cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef, cst.If, cst.For,
                         cst.While, cst.With, cst.Try, cst.TryStar, cst.Match})


def op_params_of(op: CustomOp, node: cst.FunctionDef) -> dict[str, OpParameter]:
    """The op parameter each parameter of ``node`` (the op's function, a kernel, a fake)
    receives: positional ones by position, keyword-only ones by name."""
    if op.params is None:
        return {}
    if op.function is not None and op.function.node is node:
        return {p.name: p for p in op.params}
    positional = [p for p in op.params if p.kind in (POSITIONAL, POSITIONAL_ONLY)]
    mapping: dict[str, OpParameter] = {}
    for param, op_param in zip(def_params(node), positional):
        mapping[param.name.value] = op_param
    names = {p.name.value for p in (*def_params(node), *node.params.kwonly_params)}
    for op_param in op.params:
        if op_param.kind == KEYWORD_ONLY and op_param.name in names:
            mapping[op_param.name] = op_param
    return mapping


def tensor_kinds(mapping: dict[str, OpParameter]) -> dict[str, str]:
    """Parameter name -> "tensor" | "list", for parameters known to receive tensors."""
    kinds = {}
    for name, param in mapping.items():
        if param.schema_type is None or not param.schema_type.startswith("Tensor"):
            continue
        kinds[name] = "list" if param.schema_type.endswith("[]") else "tensor"
    return kinds


def returned_values(value: cst.BaseExpression | None, function: cst.FunctionDef
                    ) -> list[cst.BaseExpression] | None:
    """The values a `return` gives torch, one per gradient; None when unknown.

    A tuple literal gives its elements; `None`, arithmetic and the backward's own gradient
    parameters give one value; a name assigned once to one of those is followed."""
    if value is None:
        return [cst.Name("None")]
    if isinstance(value, cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return [e.value for e in value.elements]
    if _tuple_arithmetic(value):
        return _tuple_values(value)
    if _one_value(value, function):
        return [value]
    if isinstance(value, cst.Name):
        table = ScopeTable.of_statements(body_statements(function.body), function.params)
        binding = table.single_assignment(value.value)
        if binding is not None and binding.value is not None and \
                not isinstance(binding.value, cst.Name):
            return returned_values(binding.value, function)
    return None


def _tuple_arithmetic(value: cst.BaseExpression) -> bool:
    """``(a, b) + (None,) * 3`` and the like: tuples built with + and *."""
    if isinstance(value, cst.Tuple):
        return True
    return isinstance(value, cst.BinaryOperation) and \
        (_tuple_arithmetic(value.left) or _tuple_arithmetic(value.right))


def _tuple_values(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The elements of a tuple built with + and * from literals; None when unknown."""
    if isinstance(value, cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return [e.value for e in value.elements]
    if not isinstance(value, cst.BinaryOperation):
        return None
    if isinstance(value.operator, cst.Add):
        left, right = _tuple_values(value.left), _tuple_values(value.right)
        return None if left is None or right is None else left + right
    if isinstance(value.operator, cst.Multiply):
        for tuple_part, count in ((value.left, value.right), (value.right, value.left)):
            values = _tuple_values(tuple_part)
            if values is not None and isinstance(count, cst.Integer):
                return values * int(count.value)
    return None


def _one_value(value: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return not _tuple_arithmetic(value)
    if isinstance(value, cst.Name):
        if value.value == "None":
            return True
        params = def_params(function)[1:]  # the gradients of the outputs
        return any(p.name.value == value.value for p in params) and \
            len(ScopeTable.of_statements(body_statements(function.body), function.params)
                .bindings.get(value.value, [])) == 1
    return False


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def surely_not_none(expr: cst.BaseExpression, function: cst.FunctionDef | None = None) -> bool:
    """Arithmetic, or (in a backward) one of the incoming gradients passed on unchanged."""
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    return function is not None and isinstance(expr, cst.Name) and _one_value(expr, function) \
        and expr.value != "None"


def call_name(function: FunctionRef) -> str:
    """The name Python puts in a TypeError about calling ``function`` (its __qualname__)."""
    node = function.node
    parts = [node.name.value if isinstance(node, cst.FunctionDef) else "<lambda>"]
    scope = function.site.scope
    while scope.kind != "module" and scope.node is not None:
        owner = scope.node
        if isinstance(owner, cst.ClassDef):
            parts.append(owner.name.value)
        elif isinstance(owner, cst.FunctionDef):
            parts += ["<locals>", owner.name.value]
        elif isinstance(owner, cst.Lambda):
            parts += ["<locals>", "<lambda>"]
        if scope.parent is None:
            break
        scope = scope.parent
    return ".".join(reversed(parts))
