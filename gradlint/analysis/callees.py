"""What a call to a function of the same module gives, and what a pytest fixture gives.

``x = make_input()`` with ``def make_input(): return torch.randn(3, requires_grad=True)``
in the module, ``def test_f(x)`` with a ``@pytest.fixture def x(): ...`` in the module,
the test class, or a ``conftest.py`` above it: the value is followed into the function's
``return`` (or the fixture's ``yield``) with the arguments bound to its parameters. Every
``return`` must agree, or the fact is unknown. Values that come from another function
carry no origin: a fix there would change every caller.

A decorated function is followed only when the decorator keeps its result: staticmethod,
classmethod, ``functools.lru_cache``/``cache`` (the same object for every caller),
``torch.no_grad()``/``enable_grad()`` (the body's grad mode is modelled), and the
module's own pass-through decorator (``def deco(fn)`` returning ``fn``, or a
``functools.wraps(fn)`` wrapper that returns ``fn(*args, **kwargs)``). A name bound to
a ``def`` inside a function (a fixture returning a factory) is called like a module-level
function; a parameter left to its literal default (``requires_grad=True``) has that value.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterator

import libcst as cst

from . import memos
from .fact_types import (UNKNOWN, Fact, OpaqueFact, SequenceFact, TensorFact, merge_facts,
                         without_origins)
from .names import BindingKind, dotted_name, parameter_names
from .scopes import (Frame, ModuleContext, Scope, Site, find_site, function_scope, statement_site,
                     walk_statements)
from .traverse import visit

if TYPE_CHECKING:
    from .facts import Evaluator

_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})
_CACHING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})
_GRAD_MODE_DECORATORS = frozenset({"torch.no_grad", "torch.enable_grad", "torch.autograd.no_grad",
                                   "torch.autograd.enable_grad", "torch.autograd.grad_mode.no_grad",
                                   "torch.autograd.grad_mode.enable_grad"})
_MAX_RETURNS = 8


def is_fixture_decorator(decorator: cst.Decorator) -> bool:
    expr = decorator.decorator
    func = expr.func if isinstance(expr, cst.Call) else expr
    name = dotted_name(func) or ""
    return name.split(".")[-1] in ("fixture", "yield_fixture")


def fixture_name(node: cst.FunctionDef) -> str | None:
    """The name a fixture is requested by, or None when ``node`` is not a plain fixture
    (``params=`` fixtures are several values: not followed)."""
    for decorator in node.decorators:
        if not is_fixture_decorator(decorator):
            continue
        expr = decorator.decorator
        name = node.name.value
        if isinstance(expr, cst.Call):
            for arg in expr.args:
                if arg.keyword is None:
                    continue
                if arg.keyword.value == "params":
                    return None
                if arg.keyword.value == "name" and isinstance(arg.value, cst.SimpleString):
                    name = str(arg.value.evaluated_value)
        return name
    return None


def is_pytest_function(node: cst.CSTNode | None) -> bool:
    """A test function or a fixture: pytest fills its parameters with fixtures."""
    if not isinstance(node, cst.FunctionDef):
        return False
    return node.name.value.startswith("test") or any(is_fixture_decorator(d) for d in node.decorators)


class Callees:
    def __init__(self, evaluator: "Evaluator"):
        self.evaluator = evaluator
        self._module_fixtures: dict[str, tuple[cst.FunctionDef, Site]] | None = None

    # helpers ---------------------------------------------------------------------------
    def result(self, call: cst.Call, site: Site, depth: int) -> "Fact":
        target = self._callee(call.func, site)
        if target is None and isinstance(call.func, cst.Name):
            target = self._local_function_value(call.func, site, depth)
        if target is None:
            return UNKNOWN
        node, def_site, skip_first = target
        if not all(self._keeps_result(d, def_site) for d in node.decorators):
            return UNKNOWN  # an unknown decorator may return anything
        arguments = self._bind(node, call, site, depth, skip_first)
        if arguments is None:
            return UNKNOWN
        value = self.value_of(node, def_site, arguments, depth)
        if any(self._caches(d, def_site) for d in node.decorators):
            return _shared(value)
        return value

    def _caches(self, decorator: cst.Decorator, def_site: Site) -> bool:
        expr = decorator.decorator
        func = expr.func if isinstance(expr, cst.Call) else expr
        return self.evaluator.context.qualified(func, def_site.scope) in _CACHING_DECORATORS

    def _local_function_value(self, func: cst.Name, site: Site, depth: int
                              ) -> tuple[cst.FunctionDef, Site, bool] | None:
        """``make(3)`` where ``make`` holds a function defined in another function: a
        fixture that returns a factory (``def make(...): ...; return make``)."""
        fact = self.evaluator.fact(func, site, depth + 1)
        if isinstance(fact, OpaqueFact) and fact.kind == "callable" and isinstance(fact.value, tuple):
            node, def_site = fact.value
            return node, def_site, False
        return None

    def _keeps_result(self, decorator: cst.Decorator, def_site: Site) -> bool:
        """Does the decorated function return what its body returns? staticmethod,
        classmethod, caching (``functools.lru_cache``/``cache``: the same object again, see
        _shared) and grad-mode decorators (``torch.no_grad()``: the body's grad mode is
        modelled)."""
        expr = decorator.decorator
        if (dotted_name(expr) or "") in _PLAIN_DECORATORS:
            return True
        func = expr.func if isinstance(expr, cst.Call) else expr
        qualified = self.evaluator.context.qualified(func, def_site.scope)
        if qualified in _CACHING_DECORATORS:
            return True
        if qualified in _GRAD_MODE_DECORATORS and isinstance(expr, cst.Call):
            return True
        if isinstance(expr, cst.Name):  # the module's own `def passthrough(fn): ...`
            owner = def_site.scope.binding_scope(expr.value)
            found = _single_def(owner, expr.value) if owner is not None and owner.kind != "class" else None
            if found is None or found.decorators:
                return False
            context = self.evaluator.context
            return _passes_through(found, lambda f: context.qualified(f, owner) == "functools.wraps")
        return False

    def value_of(self, node: cst.FunctionDef, def_site: Site, arguments: dict[str, "Fact"],
                 depth: int, yields: bool = False) -> "Fact":
        """What ``node`` returns (or yields, for a fixture) with its parameters bound to
        ``arguments`` (parameters left out are unknown)."""
        evaluator = self.evaluator
        if id(node) in evaluator._active:
            return UNKNOWN
        scope = function_scope(node, def_site.scope, def_site)
        values = list(_results(scope, yields))
        if not values or len(values) > _MAX_RETURNS:
            return UNKNOWN
        saved = {}
        for name, value in arguments.items():
            key = (id(node), name)
            saved[key] = evaluator.parameters.get(key)
            evaluator.parameters[key] = value
        evaluator._active.add(id(node))
        try:
            facts = [evaluator.fact(value, value_site, depth + 1) for value, value_site in values]
        finally:
            evaluator._active.discard(id(node))
            for key, old in saved.items():
                if old is None:
                    evaluator.parameters.pop(key, None)
                else:
                    evaluator.parameters[key] = old
        return without_origins(merge_facts(facts))

    def _callee(self, func: cst.BaseExpression, site: Site
                ) -> tuple[cst.FunctionDef, Site, bool] | None:
        if isinstance(func, cst.Name):
            owner = site.scope.binding_scope(func.value)
            if owner is None or owner.kind == "class":
                return None
            found = _single_def(owner, func.value)
            if found is None:
                return None
            def_site = _site_in(owner, found, self.evaluator.context)
            return (found, def_site, False) if def_site is not None else None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            method_scope = site.scope
            while method_scope is not None and method_scope.kind != "function":
                method_scope = method_scope.parent
            if method_scope is None or not isinstance(method_scope.node, cst.FunctionDef):
                return None
            params = parameter_names(method_scope.node.params)
            class_scope = method_scope.parent
            if not params or params[0] != func.value.value or class_scope is None or \
                    class_scope.kind != "class":
                return None
            found = _single_def(class_scope, func.attr.value)
            if found is None:
                return None
            def_site = find_site(class_scope.statements, class_scope, found)
            if def_site is None:
                return None
            static = any(dotted_name(d.decorator) == "staticmethod" for d in found.decorators)
            return found, def_site, not static
        return None

    def _bind(self, node: cst.FunctionDef, call: cst.Call, site: Site, depth: int,
              skip_first: bool) -> dict[str, "Fact"] | None:
        params = [*node.params.posonly_params, *node.params.params]
        if skip_first:
            params = params[1:]
        keyword_params = {p.name.value: p for p in (*params, *node.params.kwonly_params)}
        bound: dict[str, Fact] = {}
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in call.args):
            return {}  # nothing certain about any parameter
        star_param = node.params.star_arg if isinstance(node.params.star_arg, cst.Param) else None
        if len(positional) > len(params) and star_param is None:
            return None  # a call that fails
        if star_param is not None:
            bound[star_param.name.value] = UNKNOWN
        for param, arg in zip(params, positional):
            bound[param.name.value] = without_origins(self.evaluator.fact(arg.value, site, depth + 1))
        for arg in call.args:
            if arg.keyword is not None:
                if arg.keyword.value not in keyword_params:
                    return None
                bound[arg.keyword.value] = without_origins(
                    self.evaluator.fact(arg.value, site, depth + 1))
        for name, param in keyword_params.items():
            if name not in bound:
                # a literal default (`requires_grad=True`) is that value; other defaults
                # are evaluated where the def is: not followed
                default = param.default
                literal = default is not None and (
                    isinstance(default, (cst.Integer, cst.Float)) or
                    isinstance(default, cst.Name) and default.value in ("True", "False", "None"))
                bound[name] = self.evaluator.fact(default, site, depth + 1) if literal else UNKNOWN
        return bound

    # pytest fixtures -------------------------------------------------------------------
    def fixture(self, name: str, scope: Scope, depth: int) -> "Fact":
        node = scope.node
        if not is_pytest_function(node) or name in ("request", "self", "cls"):
            return UNKNOWN
        assert isinstance(node, cst.FunctionDef)
        params = parameter_names(node.params)
        if scope.parent is not None and scope.parent.kind == "class" and params and params[0] == name:
            return UNKNOWN
        found = self._local_fixture(name, scope)
        if found is not None:
            fixture, fixture_site = found
            if fixture is node:
                return UNKNOWN  # a fixture overriding one of the same name further up
            return self.value_of(fixture, fixture_site, {}, depth, yields=True)
        source = self.evaluator.fixtures
        if source is None:
            return UNKNOWN
        return source.value(name, depth)

    def _local_fixture(self, name: str, scope: Scope) -> tuple[cst.FunctionDef, Site] | None:
        class_scope = scope.parent
        if class_scope is not None and class_scope.kind == "class":
            found = _class_fixtures(class_scope).get(name)
            if found is not None:
                return found
        return self.module_fixtures().get(name)

    def module_fixtures(self) -> dict[str, tuple[cst.FunctionDef, Site]]:
        if self._module_fixtures is None:
            context = self.evaluator.context
            found: dict[str, tuple[cst.FunctionDef, Site]] = {}
            for index, stmt in enumerate(context.statements):
                if isinstance(stmt, cst.FunctionDef) and stmt.decorators:
                    name = fixture_name(stmt)
                    if name is not None:
                        found[name] = (stmt, Site(context.scope, (Frame(context.statements, index),)))
            self._module_fixtures = found
        return self._module_fixtures


def _shared(fact: "Fact") -> "Fact":
    """A cached helper's result: the same object every caller gets, so any of them may
    have called ``requires_grad_()`` on it. As for a tensor handed to unknown code, a
    tensor that requires grad is taken to keep requiring it, and its dtype cannot change
    in place; one that does not may require grad by now."""
    if isinstance(fact, TensorFact):
        if fact.requires_grad is True:
            return replace(fact, grad_origin=None)
        return replace(fact, requires_grad=None, grad_origin=None)
    if isinstance(fact, SequenceFact) and fact.elements is not None:
        return SequenceFact(fact.kind, tuple(_shared(e) for e in fact.elements), None)
    return fact


def _single_def(scope: Scope, name: str) -> cst.FunctionDef | None:
    bindings = scope.table.bindings.get(name, [])
    if len(bindings) == 1 and bindings[0].kind is BindingKind.DEF:
        node = bindings[0].node
        assert isinstance(node, cst.FunctionDef)
        return node
    return None


_CLASS_FIXTURES: dict = memos.memo()  # id(class node) -> (node, {name: (def, site)})


def _class_fixtures(class_scope: Scope) -> dict[str, tuple[cst.FunctionDef, Site]]:
    """The pytest fixtures a class defines, by name (the first of each name), found once
    per lint: asked for every parameter of every test method."""
    known = memos.recall(_CLASS_FIXTURES, id(class_scope.node), class_scope.node)
    if known is memos.MISSING:
        known = {}
        for stmt in class_scope.statements:
            if isinstance(stmt, cst.FunctionDef):
                name = fixture_name(stmt)
                if name is not None and name not in known:
                    site = find_site(class_scope.statements, class_scope, stmt)
                    if site is not None:
                        known[name] = (stmt, site)
        memos.remember(_CLASS_FIXTURES, id(class_scope.node), class_scope.node, known)
    return known  # type: ignore[return-value]


def _site_in(owner: Scope, node: cst.FunctionDef, context: ModuleContext) -> Site | None:
    if owner.kind == "module":
        return statement_site(context.statements, context.scope, node)
    return find_site(owner.statements, owner, node)


def _results(scope: Scope, yields: bool) -> Iterator[tuple[cst.BaseExpression, Site]]:
    """The expressions a function returns (and, for fixtures, yields) with their sites;
    nothing at all when a plain function is a generator."""
    found: list[tuple[cst.BaseExpression, Site]] = []
    for stmt, site in walk_statements(scope.statements, scope):
        if site.scope is not scope or not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Return):
                if small.value is None:
                    return
                found.append((small.value, site))
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Yield):
                value = small.value.value
                if not yields or value is None or isinstance(value, cst.From):
                    return
                found.append((value, site))
            elif _has_yield(small):
                return
    yield from found


def _has_yield(node: cst.CSTNode) -> bool:
    class Finder(cst.CSTVisitor):
        found = False

        def visit_Yield(self, _: cst.Yield) -> None:
            Finder.found = True

        def visit_Lambda(self, _: cst.Lambda) -> bool:
            return False

    finder = Finder()
    visit(node, finder)
    return Finder.found


def _passes_through(decorator: cst.FunctionDef, is_wraps: Callable[[cst.BaseExpression], bool]
                    ) -> bool:
    """``def deco(fn): [@functools.wraps(fn)] def inner(*args, **kwargs): return fn(*args,
    **kwargs); return inner`` (or ``return fn``): the decorated function's result is the
    function's own. (``is_wraps`` tells whether an expression names functools.wraps.)"""
    params = decorator.params
    if len(params.params) != 1 or params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or \
            params.kwonly_params or params.star_kwarg is not None or params.posonly_params:
        return False
    fn = params.params[0].name.value
    body = [s for s in decorator.body.body if not (
        isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)
        and isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))] \
        if isinstance(decorator.body, cst.IndentedBlock) else []
    last = body[-1] if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and
            isinstance(last.body[0], cst.Return) and isinstance(last.body[0].value, cst.Name)):
        return False
    returned = last.body[0].value.value
    if returned == fn and len(body) == 1:
        return True
    if len(body) != 2 or not isinstance(body[0], cst.FunctionDef) or body[0].name.value != returned:
        return False
    inner = body[0]
    for d in inner.decorators:  # only functools.wraps(fn)
        call = d.decorator
        if not (isinstance(call, cst.Call) and is_wraps(call.func)
                and len(call.args) == 1 and isinstance(call.args[0].value, cst.Name)
                and call.args[0].value.value == fn):
            return False
    ip = inner.params
    if ip.params or ip.posonly_params or ip.kwonly_params or not isinstance(ip.star_arg, cst.Param) or \
            not isinstance(ip.star_kwarg, cst.Param) or not isinstance(inner.body, cst.IndentedBlock) or \
            len(inner.body.body) != 1:
        return False
    stmt = inner.body.body[0]
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return)):
        return False
    call = stmt.body[0].value
    args, kwargs = ip.star_arg.name.value, ip.star_kwarg.name.value
    if fn in (args, kwargs):  # `def inner(*fn, **kw)` shadows the wrapped function
        return False
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == fn and \
        len(call.args) == 2 and call.args[0].star == "*" and isinstance(call.args[0].value, cst.Name) and \
        call.args[0].value.value == args and call.args[1].star == "**" and \
        isinstance(call.args[1].value, cst.Name) and call.args[1].value.value == kwargs
