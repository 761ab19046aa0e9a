"""What a gradcheck call checks: the code its ``func`` argument runs.

``func`` may be ``MyFn.apply``, a name bound to it, a lambda, or a function defined in the
module or in the enclosing function. The model gives the code's parameters (which the
inputs bind to, in order), its body, and the custom Functions it applies (directly, or by
a call written in the body: ``lambda x: MyFn.apply(x, 2)``). Anything else (a function
from another module, ``functools.partial``, a module instance) is unknown: None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import libcst as cst

from . import memos, traverse
from .autograd_functions import AutogradFunction, model_of_class
from .gradcheck_calls import GradcheckCall
from .names import BindingKind
from .scopes import ModuleContext, Scope, Site, find_site, function_scope, walk_statements


@dataclass(frozen=True)
class Applied:
    """A call ``MyFn.apply(args...)`` inside checked code."""

    function: AutogradFunction
    call: cst.Call | None  # None: ``func`` is the apply itself (the inputs are its arguments)


@dataclass
class CheckedCode:
    func: cst.BaseExpression  # the argument, as written in the call
    # positional parameters the inputs bind to (a lambda's or def's), None for ``Fn.apply``
    params: list[str] | None
    body: list[cst.CSTNode]  # the lambda's expression, or the def's statements
    scope: Scope | None
    applied: list[Applied] = field(default_factory=list)

    @property
    def direct(self) -> AutogradFunction | None:
        """The Function whose apply is ``func`` itself."""
        for applied in self.applied:
            if applied.call is None:
                return applied.function
        return None

    @property
    def functions(self) -> list[AutogradFunction]:
        seen: dict[int, AutogradFunction] = {}
        for applied in self.applied:
            seen.setdefault(id(applied.function.node), applied.function)
        return list(seen.values())


class FunctionIndex:
    """Finds the Function class a name refers to (memoised per module)."""

    def __init__(self, context: ModuleContext):
        self.context = context
        self._models: dict[int, AutogradFunction | None] = {}

    def function_class(self, expr: cst.BaseExpression, scope: Scope) -> AutogradFunction | None:
        if not isinstance(expr, cst.Name):
            return None
        owner = scope.binding_scope(expr.value)
        if owner is None or owner.kind == "class":
            return None
        bindings = owner.table.bindings.get(expr.value, [])
        if len(bindings) != 1 or bindings[0].kind is not BindingKind.CLASS:
            return None
        node = bindings[0].node
        assert isinstance(node, cst.ClassDef)
        key = id(node)
        if key not in self._models:
            site = find_site(owner.statements, owner, node)
            self._models[key] = model_of_class(node, site, self.context) if site is not None else None
        return self._models[key]

    def applied_function(self, call: cst.Call, scope: Scope) -> AutogradFunction | None:
        """``MyFn.apply(...)``, or ``op(...)`` with a module-level ``op = MyFn.apply``."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "apply":
            return self.function_class(func.value, scope)
        if isinstance(func, cst.Name):
            value = _single_assignment(func.value, scope)
            if isinstance(value, cst.Attribute) and value.attr.value == "apply":
                owner = scope.binding_scope(func.value)
                return self.function_class(value.value, owner) if owner is not None else None
        return None


def _single_assignment(name: str, scope: Scope) -> cst.BaseExpression | None:
    owner = scope.binding_scope(name)
    if owner is None:
        return None
    binding = owner.table.single_assignment(name)
    return binding.value if binding is not None else None


def checked_code(call: GradcheckCall, index: FunctionIndex) -> CheckedCode | None:
    if call.func is None:
        return None
    return _resolve(call.func.value, call.site.scope, call.site, index, 0)


def _resolve(expr: cst.BaseExpression, scope: Scope, site: Site | None, index: FunctionIndex,
             depth: int) -> CheckedCode | None:
    if depth > 3:
        return None
    if isinstance(expr, cst.Attribute) and expr.attr.value == "apply":
        function = index.function_class(expr.value, scope)
        if function is None:
            return None
        return CheckedCode(expr, None, [], None, [Applied(function, None)])
    if isinstance(expr, cst.Lambda):
        if site is None:
            return None
        inner = function_scope(expr, scope, site)
        code = CheckedCode(expr, _positional(expr.params), [expr.body], inner)
        code.applied = _applied_in([expr.body], inner, index)
        return code
    if not isinstance(expr, cst.Name):
        return None
    owner = scope.binding_scope(expr.value)
    if owner is None or owner.kind == "class":
        return None
    bindings = owner.table.bindings.get(expr.value, [])
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if binding.kind is BindingKind.DEF:
        node = binding.node
        assert isinstance(node, cst.FunctionDef)
        if node.decorators or node.asynchronous is not None:
            return None
        def_site = find_site(owner.statements, owner, node)
        if def_site is None:
            return None
        inner = function_scope(node, owner, def_site)
        code = CheckedCode(expr, _positional(node.params), list(inner.statements), inner)
        code.applied = _applied_in(inner.statements, inner, index)
        return code
    if binding.kind is BindingKind.ASSIGN and binding.value is not None:
        value = binding.value
        if isinstance(value, cst.Attribute) and value.attr.value == "apply":
            return _resolve(value, owner, None, index, depth + 1)
        if isinstance(value, cst.Lambda):
            value_site = _site_of_small(owner, binding.node)
            return _resolve(value, owner, value_site, index, depth + 1)
        if isinstance(value, cst.Name):
            return _resolve(value, owner, None, index, depth + 1)
    return None


def _positional(params: cst.Parameters) -> list[str] | None:
    if isinstance(params.star_arg, cst.Param):
        return None
    return [p.name.value for p in (*params.posonly_params, *params.params)]


def _site_of_small(scope: Scope, small: cst.CSTNode) -> Site | None:
    for stmt, site in walk_statements(scope.statements, scope):
        if site.scope is scope and isinstance(stmt, cst.SimpleStatementLine) and \
                any(s is small for s in stmt.body):
            return site
    return None


def _applied_in(body: Sequence[cst.CSTNode], scope: Scope, index: FunctionIndex) -> list[Applied]:
    found = []
    for call in calls_in(body):
        function = index.applied_function(call, scope)
        if function is not None:
            found.append(Applied(function, call))
    return found


def calls_in(body: Sequence[cst.CSTNode]) -> list[cst.Call]:
    """Every call in checked code (nested functions and classes excluded), in source
    order: the calls ``calls_with_context`` finds (and remembers), without their context."""
    return [found.call for found in calls_with_context(body)]


@dataclass(frozen=True)
class Region:
    """Part of the checked code: the lambda/def body, or the forward of an applied
    Function; ``statements`` are nodes to visit, ``scope`` is where their names live."""

    body: tuple[cst.CSTNode, ...]
    scope: Scope
    function: AutogradFunction | None  # the Function whose method this is


def regions(code: CheckedCode, method: str = "forward") -> list[Region]:
    """The checked code's own body and ``method`` of each Function it applies."""
    found = []
    if code.scope is not None:
        found.append(Region(tuple(code.body), code.scope, None))
    for function in code.functions:
        body = getattr(function, method)
        if body is not None:
            found.append(Region(tuple(body.scope.statements), body.scope, function))
    return found


@dataclass(frozen=True, slots=True)  # (slots: remembered by the thousand, see _CALLS_WITH_CONTEXT)
class CallInContext:
    call: cst.Call
    conditional: bool  # inside an `if`, a conditional expression or an `assert`


class _CallsInContext(cst.CSTVisitor):
    skip_trivia = True  # (traverse.visit: layout nodes are neither calls nor conditions)

    def __init__(self) -> None:
        self.found: list[CallInContext] = []
        self._conditional = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in _DEFINITIONS:
            return False
        if kind is cst.Call:
            self.found.append(CallInContext(node, self._conditional > 0))
        elif kind in _CONDITIONS:
            self._conditional += 1
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if type(original_node) in _CONDITIONS:
            self._conditional -= 1


_DEFINITIONS = traverse.exact_types(cst.FunctionDef, cst.ClassDef)
_CONDITIONS = traverse.exact_types(cst.If, cst.IfExp, cst.Assert, cst.While)
assert not cst.Call.__subclasses__()


def calls_with_context(body: Sequence[cst.CSTNode]) -> list[CallInContext]:
    found: list[CallInContext] = []
    for node in body:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        known = memos.recall(_CALLS_WITH_CONTEXT, id(node), node)
        if known is memos.MISSING:
            visitor = _CallsInContext()
            traverse.visit(node, visitor)
            known = tuple(visitor.found)
            memos.remember(_CALLS_WITH_CONTEXT, id(node), node, known)
        found.extend(known)
    return found


# id(node) -> (node, its calls in context): rules ask for the calls of the same forward
# and backward bodies once per gradcheck call that reaches them, and what a node holds
# never changes. The visitor's count of enclosing conditions is back at zero after each
# top-level node, so visiting the nodes one by one gives what one visitor over the whole
# body gave.
_CALLS_WITH_CONTEXT: dict = memos.memo(memos.NEAR_ENTRIES)


@dataclass(frozen=True)
class InputTarget:
    """The parameter an input binds to, in a body of the checked code."""

    param: str
    region: Region


def input_targets(code: CheckedCode, index: int) -> list[InputTarget]:
    """Where input ``index`` arrives: the lambda/def parameter, and (one hop further) the
    ``forward`` parameter of a Function the body applies to that parameter unchanged;
    for ``MyFn.apply``, the ``forward`` parameter. Rebound parameters are left out."""
    found: list[InputTarget] = []
    if code.params is not None and code.scope is not None:
        if index >= len(code.params):
            return []
        param = code.params[index]
        found.append(InputTarget(param, Region(tuple(code.body), code.scope, None)))
        for applied in code.applied:
            if applied.call is None:
                continue
            for position, arg in enumerate(applied.call.args):
                if arg.keyword is None and not arg.star and isinstance(arg.value, cst.Name) and \
                        arg.value.value == param:
                    found.extend(_forward_target(applied.function, position))
    elif code.direct is not None:
        found.extend(_forward_target(code.direct, index))
    return [t for t in found if not _rebound(t.region.scope, t.param)]


def _forward_target(function: AutogradFunction, position: int) -> list[InputTarget]:
    signature = function.forward_inputs()
    forward = function.forward
    if signature is None or forward is None or position >= len(signature[0]):
        return []
    region = Region(tuple(forward.scope.statements), forward.scope, function)
    return [InputTarget(signature[0][position].name.value, region)]


def _rebound(scope: Scope, name: str) -> bool:
    return any(b.kind is not BindingKind.PARAM for b in scope.table.bindings.get(name, []))
