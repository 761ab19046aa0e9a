"""Where custom ``torch.autograd.Function``s run under ``torch.func`` transforms.

A transform call (``torch.func.vmap(f)``, ``functorch.grad(f)``, ``torch.vmap``, nested as
in ``vmap(grad(f))``) runs ``f`` under the transforms. ``f`` is followed when it is
``MyFn.apply``, a lambda, or a function of the same module (and the same-module functions
it calls, a few levels deep); every ``MyFn.apply`` found there, with ``MyFn`` a Function
class of this module, is a *transformed apply*.

What each Function supports is read from the class and its same-file bases: ``forward``
taking ``ctx`` or a ``setup_context``, a ``vmap`` staticmethod or ``generate_vmap_rule =
True``, a ``jvp`` staticmethod. Anything gradlint cannot see (a base from another module,
``generate_vmap_rule = SOME_FLAG``) is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import libcst as cst

from . import traverse
from .autograd_functions import FunctionResolver
from .names import BindingKind, ScopeTable, body_statements
from .scopes import ModuleContext, Scope, Site, find_site, function_scope, walk_statements

_TRANSFORM_NAMES = ("vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd",
                    "hessian", "functionalize", "linearize")
TRANSFORMS: dict[str, str] = {}
for _name in _TRANSFORM_NAMES:
    for _module in ("torch.func", "functorch", "torch._functorch.apis",
                    "torch._functorch.eager_transforms"):
        TRANSFORMS[f"{_module}.{_name}"] = _name
TRANSFORMS["torch.vmap"] = "vmap"
TRANSFORMS["torch._functorch.vmap.vmap"] = "vmap"

# measured with torch 2.13: which transforms need what from a Function
NEEDS_SETUP_CONTEXT = frozenset(_TRANSFORM_NAMES) - {"linearize"}
NEEDS_VMAP_RULE = frozenset({"vmap", "jacfwd", "hessian"})
NEEDS_JVP = frozenset({"jvp", "jacfwd", "hessian", "linearize"})
_PARTIAL = frozenset({"functools.partial"})
_DEPTH = 3  # same-module function calls followed from the transformed function


@dataclass
class FunctionSupport:
    """What a Function class offers torch.func (None: unknown)."""

    node: cst.ClassDef
    site: Site
    style: str | None  # "ctx" (forward takes ctx) | "setup_context" | None
    has_vmap: bool | None  # a vmap staticmethod or generate_vmap_rule = True
    has_jvp: bool | None
    both_vmap_rules: bool = False  # generate_vmap_rule = True and a vmap staticmethod

    @property
    def name(self) -> str:
        return self.node.name.value


@dataclass
class TransformedApply:
    function: FunctionSupport
    apply: cst.Attribute  # `MyFn.apply`
    apply_site: Site
    transforms: tuple[str, ...]  # short names, outermost first: ("vmap", "grad")
    call: cst.Call  # the outermost transform call
    call_site: Site
    report_node: cst.CSTNode  # `MyFn.apply` when inside the call, else the argument naming f
    via: str | None  # the function that calls apply, when it is not written in the call


def transformed_applies(context: ModuleContext, indexes: Sequence[int] | None = None
                        ) -> list[TransformedApply]:
    """Every Function.apply run under a transform called in the top-level statements at
    ``indexes`` (default: the whole module)."""
    return list(_Finder(context).run(indexes))


class _Calls(cst.CSTVisitor):
    """Calls in a statement's own expressions (not in nested statements or scopes)."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        return False

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


class _Applies(cst.CSTVisitor):
    """`X.apply` attributes and calls of plain names in a function body or expression."""

    def __init__(self) -> None:
        self.applies: list[cst.Attribute] = []
        self.called: list[cst.Name] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "apply":
            self.applies.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.called.append(node.func)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


class _Finder:
    def __init__(self, context: ModuleContext):
        self.context = context
        self.resolver = FunctionResolver(context)
        self.support: dict[int, FunctionSupport | None] = {}

    def run(self, indexes: Sequence[int] | None) -> Iterator[TransformedApply]:
        consumed: set[int] = set()
        for stmt, site in walk_statements(self.context.statements, self.context.scope,
                                          indexes=indexes):
            visitor = _Calls()
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            traverse.visit(stmt, visitor)
            for call in visitor.calls:
                if id(call) in consumed:
                    continue
                transform = TRANSFORMS.get(self.context.qualified(call.func, site.scope) or "")
                if transform is None:
                    continue
                yield from self._transform_call(call, transform, site, consumed)

    def _transform_call(self, call: cst.Call, transform: str, site: Site, consumed: set[int]
                        ) -> Iterator[TransformedApply]:
        transforms = [transform]
        target = _function_argument(call)
        # vmap(grad(f)): the inner transform's function runs under both
        while isinstance(target, cst.Call):
            inner = TRANSFORMS.get(self.context.qualified(target.func, site.scope) or "")
            if inner is not None:
                consumed.add(id(target))
                transforms.append(inner)
                target = _function_argument(target)
            elif self.context.qualified(target.func, site.scope) in _PARTIAL and target.args:
                target = target.args[0].value
            else:
                break
        if target is None:
            return
        for apply, apply_site, via in self._applies_in(target, site, site.scope, _DEPTH, set()):
            support = self._support(apply.value, apply_site.scope)
            if support is None:
                continue
            report = apply if via is None else target
            yield TransformedApply(support, apply, apply_site, tuple(transforms), call, site,
                                   report, via)

    def _applies_in(self, expr: cst.BaseExpression, site: Site, scope: Scope, depth: int,
                    seen: set[int]) -> Iterator[tuple[cst.Attribute, Site, str | None]]:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "apply":
            yield expr, site, None
            return
        if isinstance(expr, cst.Lambda):
            visitor = _Applies()
            traverse.visit(expr.body, visitor)
            for apply in visitor.applies:
                yield apply, site, None
            inner = function_scope(expr, scope, site)
            for name in visitor.called:
                yield from self._through(name, site, inner, depth, seen, None)
            return
        if isinstance(expr, cst.Name):
            yield from self._through(expr, site, scope, depth, seen, None)

    def _through(self, name: cst.Name, site: Site, scope: Scope, depth: int, seen: set[int],
                 via: str | None) -> Iterator[tuple[cst.Attribute, Site, str | None]]:
        """The applies in the same-module function ``name`` refers to (and its callees)."""
        if depth <= 0:
            return
        found = self._function(name, scope)
        if found is None or id(found[0]) in seen:
            return
        node, owner = found
        seen.add(id(node))
        def_site = find_site(owner.statements, owner, node)
        if def_site is None:
            return
        inner = function_scope(node, owner, def_site)
        label = via or node.name.value
        for stmt, stmt_site in walk_statements(inner.statements, inner):
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            visitor = _Applies()
            traverse.visit(stmt, visitor)
            for apply in visitor.applies:
                yield apply, stmt_site, label
            for called in visitor.called:
                yield from self._through(called, stmt_site, stmt_site.scope, depth - 1, seen, label)

    def _function(self, name: cst.Name, scope: Scope) -> tuple[cst.FunctionDef, Scope] | None:
        owner = scope.binding_scope(name.value)
        if owner is None:
            return None
        bindings = owner.table.bindings.get(name.value, [])
        if len(bindings) == 1 and bindings[0].kind is BindingKind.DEF:
            node = bindings[0].node
            assert isinstance(node, cst.FunctionDef)
            return node, owner
        return None

    def _support(self, expr: cst.BaseExpression, scope: Scope) -> FunctionSupport | None:
        if not isinstance(expr, cst.Name):
            return None
        owner = scope.binding_scope(expr.value)
        if owner is None:
            return None
        bindings = owner.table.bindings.get(expr.value, [])
        if len(bindings) != 1 or bindings[0].kind is not BindingKind.CLASS:
            return None
        node = bindings[0].node
        assert isinstance(node, cst.ClassDef)
        if id(node) not in self.support:
            self.support[id(node)] = self._class_support(node, owner)
        return self.support[id(node)]

    def _class_support(self, node: cst.ClassDef, owner: Scope) -> FunctionSupport | None:
        site = find_site(owner.statements, owner, node)
        if site is None:
            return None
        lineage = self.resolver.lineage(node, owner)
        if lineage.is_function is not True:
            return None
        classes = [node, *lineage.ancestors]

        def lookup(name: str) -> tuple[cst.CSTNode | None, bool]:
            """(the binding's node, known): the first class that binds ``name``."""
            for cls in classes:
                table = ScopeTable.of_statements(body_statements(cls.body))
                bindings = table.bindings.get(name)
                if bindings:
                    if len(bindings) != 1:
                        return None, False
                    return bindings[0].node, True
            return None, lineage.complete

        forward, forward_known = lookup("forward")
        setup, setup_known = lookup("setup_context")
        vmap, vmap_known = lookup("vmap")
        jvp, jvp_known = lookup("jvp")
        rule, rule_known = _generate_vmap_rule(classes, lineage.complete)
        style = None
        if isinstance(setup, cst.FunctionDef):
            style = "setup_context"
        elif setup is None and setup_known and isinstance(forward, cst.FunctionDef):
            params = [*forward.params.posonly_params, *forward.params.params]
            if params and params[0].name.value == "ctx":
                style = "ctx"
        has_vmap = None
        if vmap is not None or rule is True:
            has_vmap = True
        elif vmap_known and rule_known and rule is False:
            has_vmap = False
        has_jvp = True if jvp is not None else (False if jvp_known else None)
        return FunctionSupport(node, site, style, has_vmap, has_jvp,
                               both_vmap_rules=vmap is not None and rule is True)


def _generate_vmap_rule(classes: list[cst.ClassDef], complete: bool) -> tuple[bool | None, bool]:
    """(the value of generate_vmap_rule, known) from the first class that sets it."""
    for cls in classes:
        table = ScopeTable.of_statements(body_statements(cls.body))
        bindings = table.bindings.get("generate_vmap_rule")
        if not bindings:
            continue
        if len(bindings) == 1 and bindings[0].kind is BindingKind.ASSIGN:
            value = bindings[0].value
            if isinstance(value, cst.Name) and value.value in ("True", "False"):
                return value.value == "True", True
        return None, False
    return False, complete


def _function_argument(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "func":
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[0].value if positional else None


def class_body_start(node: cst.ClassDef) -> cst.BaseStatement | None:
    """The first statement of a class body after its docstring (where to add an attribute)."""
    statements = list(body_statements(node.body))
    if not isinstance(node.body, cst.IndentedBlock):
        return None
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
                isinstance(stmt.body[0], cst.Expr) and \
                isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            continue
        return stmt
    return None
