"""Classes of the module whose instances are tuples: what gradcheck makes of them.

gradcheck takes its inputs as a tensor or a sequence, and rebuilds the sequence with
``type(inputs)(map(...))`` (torch 2.13, ``_densify``). A plain ``class Inputs(tuple)``
takes that and is a tuple like any other; a NamedTuple's constructor takes its fields
one by one, so ``gradcheck(f, Pair(a, b))`` raises ``TypeError: Pair.__new__() missing 1
required positional argument: 'b'`` (measured; ``masked=True`` skips the rebuild, and
gradgradcheck passes gradcheck a tuple of its own).
"""

from __future__ import annotations

import libcst as cst

from .names import BindingKind, body_statements
from .scopes import ModuleContext

__all__ = ["named_tuple_class", "plain_tuple_subclass"]

_NAMED_TUPLE_FACTORIES = frozenset({"collections.namedtuple", "typing.NamedTuple"})


def plain_tuple_subclass(func: cst.BaseExpression, context: ModuleContext) -> bool:
    """A module-level ``class C(tuple)`` whose body defines nothing (a docstring, ``pass``,
    ``__slots__ = ()``): calling it makes a tuple of its argument's elements."""
    node = _module_class(func, context)
    if node is None or node.decorators or len(node.bases) != 1 or node.bases[0].keyword is not None \
            or not (isinstance(node.bases[0].value, cst.Name) and node.bases[0].value.value == "tuple") \
            or "tuple" in context.scope.table.bindings:
        return False
    for stmt in body_statements(node.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            if isinstance(small, cst.Pass) or isinstance(small, cst.Expr) and \
                    isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, cst.Name) and \
                    small.targets[0].target.value == "__slots__":
                continue
            return False
    return True


def named_tuple_class(func: cst.BaseExpression, context: ModuleContext) -> bool:
    """``func`` names a NamedTuple class bound once at the module's top level: ``class
    P(NamedTuple)`` without ``__new__``, or ``P = namedtuple("P", ...)``."""
    if not isinstance(func, cst.Name):
        return False
    bindings = context.scope.table.bindings.get(func.value, [])
    if len(bindings) != 1:
        return False
    binding = bindings[0]
    if binding.kind is BindingKind.CLASS:
        node = binding.node
        return isinstance(node, cst.ClassDef) and not node.decorators and \
            [context.qualified(b.value, context.scope) for b in node.bases] == ["typing.NamedTuple"] and \
            not any(isinstance(s, cst.FunctionDef) and s.name.value in ("__new__", "__init__")
                    for s in body_statements(node.body))
    value = binding.value if binding.kind is BindingKind.ASSIGN else None
    return isinstance(value, cst.Call) and \
        context.qualified(value.func, context.scope) in _NAMED_TUPLE_FACTORIES


def _module_class(func: cst.BaseExpression, context: ModuleContext) -> cst.ClassDef | None:
    if not isinstance(func, cst.Name):
        return None
    bindings = context.scope.table.bindings.get(func.value, [])
    if len(bindings) != 1 or bindings[0].kind is not BindingKind.CLASS:
        return None
    node = bindings[0].node
    return node if isinstance(node, cst.ClassDef) else None
