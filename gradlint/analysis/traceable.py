"""Does a custom autograd Function's code stay in torch.compile's graph, as far as the code shows?

Dynamo traces a Function's ``forward`` and ``backward`` (and ``setup_context``) as a whole; one
graph break in them (a call into C through ``ctypes``, ``x.data_ptr()``, ``x.numpy()``,
``x.item()``, a library Dynamo cannot see into) makes the whole ``apply`` run eagerly, so what
Dynamo would have done with the traced call no longer happens. Rules about what tracing does to a
Function (GL045) speak only when every call in those methods is one the code shows staying in the
graph:

- a torch function or a ``math`` function (named through the module's imports);
- a Python builtin (``len``, ``range``, ``isinstance``, ...) not rebound anywhere visible;
- a method of a value the method itself holds (a parameter or a local: tensors, ``ctx``), other
  than the methods that leave the graph (``item``, ``tolist``, ``numpy``, ``data_ptr``, ...);
  not of a forward input that backward never gives a gradient (it may be any object).

Anything else (the module's own helpers, imported functions, objects bound at module level,
methods inherited from a base class) is unknown: the answer is then False, and the rule stays
silent.
"""

from __future__ import annotations

import libcst as cst

from . import traverse
from .autograd_functions import AutogradFunction, Method
from .backward_returns import gets_gradient
from .scopes import ModuleContext

# builtins Dynamo traces (they keep a Function's code plain Python over tensors)
BUILTINS = frozenset({"len", "range", "tuple", "list", "isinstance", "zip", "enumerate", "min",
                      "max", "abs", "float", "int", "bool", "any", "all", "sum", "getattr",
                      "hasattr", "super", "dict", "set", "type", "print"})
# tensor methods that take values out of the graph (a graph break, or data Dynamo cannot trace)
LEAVE_THE_GRAPH = frozenset({"item", "tolist", "numpy", "data_ptr", "__array__", "untyped_storage",
                             "storage", "cuda_ptr"})
_TRACED_MODULES = ("torch.", "math.")


def stays_in_graph(function: AutogradFunction, context: ModuleContext) -> bool:
    """Is every call in the Function's forward, backward and setup_context one that Dynamo
    traces, as far as the code shows? False when a method is inherited or missing."""
    if function.forward is None or function.backward is None or function.inherited:
        return False
    methods = [function.forward, function.backward]
    if function.setup_context is not None:
        methods.append(function.setup_context)
    untyped = _inputs_without_gradient(function)
    for method in methods:
        calls = _Calls(context, method, untyped if method is function.forward else frozenset())
        traverse.visit(method.node.body, calls)
        if not calls.traced:
            return False
    return True


def _inputs_without_gradient(function: AutogradFunction) -> frozenset[str]:
    """Forward's inputs that no return of backward gives a gradient: they may be any object."""
    found = function.forward_inputs()
    if found is None:
        return frozenset()
    params, _required = found
    return frozenset(p.name.value for position, p in enumerate(params) if not gets_gradient(function, position))


class _Calls(cst.CSTVisitor):
    """Sets ``traced`` to False at the first call that may leave the graph."""

    def __init__(self, context: ModuleContext, method: Method, untyped: frozenset[str]):
        self.context = context
        self.scope = method.scope
        self.untyped = untyped
        self.traced = True

    def visit_Call(self, node: cst.Call) -> bool:
        if self.traced and not self._traced(node.func):
            self.traced = False
        return self.traced

    def _traced(self, func: cst.BaseExpression) -> bool:
        qualified = self.context.qualified(func, self.scope)
        if qualified is not None:
            return qualified.startswith(_TRACED_MODULES)
        if isinstance(func, cst.Name):
            return func.value in BUILTINS and self.scope.binding_scope(func.value) is None
        if not isinstance(func, cst.Attribute) or func.attr.value in LEAVE_THE_GRAPH:
            return False
        root = _root(func.value)
        if root is None:
            return True  # a method of a call's result, a subscript...: its parts are visited too
        owner = self.scope.binding_scope(root.value)
        if owner is not self.scope:
            return False  # an object of the module's or a builtin's: unknown
        return root.value not in self.untyped


def _root(expr: cst.BaseExpression) -> cst.Name | None:
    """The name an attribute chain starts from (``a`` of ``a.b.c``), or None when it starts
    from something else (a call, a subscript, a literal)."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None
