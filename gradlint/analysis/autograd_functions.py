"""Models of custom ``torch.autograd.Function`` classes: their inputs, gradients, saves.

Both styles are understood:

* ``forward(ctx, *inputs)``: ``apply`` passes the caller's arguments through, so the
  number of gradients backward must return is the number of arguments at the call
  (parameters with defaults may be left out);
* ``forward(*inputs)`` + ``setup_context(ctx, inputs, output)``: ``apply`` binds the
  defaults, so backward returns one gradient per ``forward`` parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Sequence

import libcst as cst

from . import memos, torch_api
from .names import BindingKind, ScopeTable, body_statements, compound_bodies, dotted_name
from .scopes import ModuleContext, Scope, Site, function_scope, walk_statements

# Decorators known to turn a method into something else than a function with the same
# parameters; any other decorator (custom_fwd, once_differentiable, a project's own
# `@contiguous`...) is taken to keep the signature, as decorators on forward/backward do.
_SIGNATURE_CHANGING = frozenset({
    "property", "cached_property", "partialmethod", "contextmanager", "asynccontextmanager",
    "overload", "singledispatchmethod", "abstractproperty",
})


@dataclass
class Method:
    node: cst.FunctionDef
    scope: Scope
    owner: "AutogradFunction"

    @cached_property
    def is_classmethod(self) -> bool:
        """(Kept once known: ``params``, which rules read again and again, asks it; the
        answer reads only the method's node, which never changes.)"""
        return any(_decorator_name(d) == "classmethod" for d in self.node.decorators)

    @property
    def params(self) -> list[cst.Param]:
        """The parameters the method is called with (a classmethod's ``cls`` is bound)."""
        params = [*self.node.params.posonly_params, *self.node.params.params]
        return params[1:] if self.is_classmethod else params

    @property
    def has_star_args(self) -> bool:
        return isinstance(self.node.params.star_arg, cst.Param)

    @property
    def context_name(self) -> str | None:
        """Name of the ``ctx`` parameter (first parameter), when there is one."""
        params = self.params
        return params[0].name.value if params else None

    @property
    def transparent(self) -> bool:
        """Only decorators that keep the signature (or none at all)."""
        for decorator in self.node.decorators:
            name = _decorator_name(decorator)
            if name is None or name in _SIGNATURE_CHANGING:
                return False
        return True


def gradient_names(param: str) -> set[str]:
    """Names that say "the gradient of `param`" (`grad_x`, `x_grad`, `dx`, ...)."""
    return {f"grad_{param}", f"{param}_grad", f"grad{param}", f"d_{param}", f"d{param}",
            f"g_{param}", f"{param}_g", f"grad_{param}s", f"{param}_grads"}


def _decorator_name(decorator: cst.Decorator) -> str | None:
    """The last part of a decorator's name (``custom_fwd`` for ``@amp.custom_fwd(...)``)."""
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    name = dotted_name(expr)
    return name.split(".")[-1] if name is not None else None


@dataclass
class AutogradFunction:
    node: cst.ClassDef
    site: Site  # where the class statement is
    scope: Scope  # the class body
    forward: Method | None = None
    backward: Method | None = None
    setup_context: Method | None = None
    style: str | None = None  # "ctx" | "setup_context" | None (unknown)
    inherited: set[str] = field(default_factory=set)  # methods taken from a base class
    lineage: "Lineage | None" = None

    @property
    def name(self) -> str:
        return self.node.name.value

    def defines(self, method: str) -> bool | None:
        """Does the class (or a same-file base) define ``method``? None: a base class
        gradlint cannot see might."""
        for node in (self.node, *(self.lineage.ancestors if self.lineage else ())):
            if method in _class_methods(node):
                return True
        return False if self.lineage is not None and self.lineage.complete else None

    def forward_inputs(self) -> tuple[list[cst.Param], int] | None:
        """(input parameters, how many are required), or None when unknown."""
        if self.forward is None or self.style is None or not self.forward.transparent:
            return None
        if self.forward.has_star_args:
            return None
        params = self.forward.params
        names = [p.name.value for p in params]
        if (names and names[0] == "cls") or "ctx" in names[1:]:
            return None  # `forward(cls, ctx, ...)`: a helper subclasses call, not the real forward
        if self.style == "ctx":
            if not params:
                return None
            params = params[1:]
            required = sum(1 for p in params if p.default is None)
            return params, required
        return params, len(params)


def _class_methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef | None]:
    """Methods defined in a class body; None for names bound some other way.

    Remembered per class for the lint: a class is looked at as a Function, as a base of
    others, and for each method asked of it; the answer reads only the class's node."""
    known = memos.recall(_CLASS_METHODS, id(node), node)
    if known is memos.MISSING:
        known = _find_class_methods(node)
        memos.remember(_CLASS_METHODS, id(node), node, known)
    return dict(known)  # type: ignore[call-overload]


_CLASS_METHODS: dict = memos.memo()  # id(class node) -> (node, its methods)


def _find_class_methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef | None]:
    methods: dict[str, cst.FunctionDef | None] = {}
    table = ScopeTable.of_statements(body_statements(node.body))
    for name, bindings in table.bindings.items():
        if len(bindings) == 1 and bindings[0].kind is BindingKind.DEF:
            node_def = bindings[0].node
            assert isinstance(node_def, cst.FunctionDef)
            methods[name] = node_def
        else:
            methods[name] = None
    return methods


@dataclass(frozen=True)
class Lineage:
    # True: derives from torch's Function; None: it might (through a base gradlint cannot
    # see); False: certainly not.
    is_function: bool | None
    complete: bool  # every base class, transitively, is known
    ancestors: tuple[cst.ClassDef, ...]  # same-file base classes, in lookup order


class FunctionResolver:
    """Decides which classes are autograd Functions, following same-file bases."""

    def __init__(self, context: ModuleContext):
        self.context = context
        self._memo: dict[int, Lineage] = {}

    def lineage(self, node: cst.ClassDef, scope: Scope) -> Lineage:
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = Lineage(None, False, ())  # cycle guard
        reaches_function = False
        complete = True
        ancestors: list[cst.ClassDef] = []
        for arg in node.bases:
            if arg.keyword is not None or arg.star:
                continue
            if self.context.qualified(arg.value, scope) in torch_api.FUNCTION_BASES:
                reaches_function = True
                continue
            if isinstance(arg.value, cst.Name) and arg.value.value == "object" and \
                    scope.binding_scope("object") is None:
                continue
            base = self._same_file_class(arg.value, scope)
            if base is None:
                complete = False
                continue
            inner = self.lineage(*base)
            ancestors.append(base[0])
            ancestors.extend(inner.ancestors)
            reaches_function = reaches_function or inner.is_function is True
            complete = complete and inner.complete
        verdict: bool | None = True if reaches_function else (False if complete else None)
        result = Lineage(verdict, complete, tuple(ancestors))
        self._memo[key] = result
        return result

    def _same_file_class(self, expr: cst.BaseExpression, scope: Scope
                         ) -> tuple[cst.ClassDef, Scope] | None:
        if not isinstance(expr, cst.Name):
            return None
        owner = scope.binding_scope(expr.value)
        if owner is None:
            return None
        bindings = owner.table.bindings.get(expr.value, [])
        if len(bindings) == 1 and bindings[0].kind is BindingKind.CLASS:
            node = bindings[0].node
            assert isinstance(node, cst.ClassDef)
            return node, owner
        return None


def class_base_names(context: ModuleContext) -> frozenset[str]:
    """The names classes of the module derive from (``B`` of ``class C(B)`` and of
    ``class C(mod.B)``), classes nested anywhere included: whether a Function has subclasses
    here. Found once per lint (rules ask for each Function; a walk of the module per
    Function was quadratic in the number of Functions)."""
    found = context.models.get("class_base_names")
    if found is None:
        found = context.models["class_base_names"] = frozenset(_base_names(context.statements))
    return found  # type: ignore[return-value]


def _base_names(statements: Sequence[cst.BaseStatement]) -> set[str]:
    found: set[str] = set()
    pending = list(statements)
    while pending:  # (classes are statements: statement lists lead to every one)
        stmt = pending.pop()
        if isinstance(stmt, cst.ClassDef):
            for base in stmt.bases:
                if isinstance(base.value, cst.Name):
                    found.add(base.value.value)
                elif isinstance(base.value, cst.Attribute):
                    found.add(base.value.attr.value)
            pending.extend(body_statements(stmt.body))
        elif isinstance(stmt, cst.FunctionDef):
            pending.extend(body_statements(stmt.body))
        elif isinstance(stmt, cst.Match):  # (which compound_bodies leaves out)
            for case in stmt.cases:
                pending.extend(body_statements(case.body))
        else:
            for body, _ in compound_bodies(stmt):
                pending.extend(body)
    return found


def find_autograd_functions(statements: Sequence[cst.BaseStatement], indexes: Sequence[int],
                            context: ModuleContext) -> Iterator[AutogradFunction]:
    resolver = FunctionResolver(context)
    for stmt, site in walk_statements(statements, context.scope, indexes=indexes):
        if not isinstance(stmt, cst.ClassDef):
            continue
        lineage = resolver.lineage(stmt, site.scope)
        if lineage.is_function is False:
            continue
        model = _model(stmt, site, lineage)
        if model is not None:
            yield model


def model_of_class(node: cst.ClassDef, site: Site, context: ModuleContext) -> AutogradFunction | None:
    """The model of one class statement (at ``site``) when it is an autograd Function."""
    lineage = FunctionResolver(context).lineage(node, site.scope)
    if lineage.is_function is False:
        return None
    return _model(node, site, lineage)


def _first_param(node: cst.FunctionDef | None) -> str | None:
    """The first parameter a method is called with (after a classmethod's ``cls``)."""
    if node is None:
        return None
    params = [*node.params.posonly_params, *node.params.params]
    if any(_decorator_name(d) == "classmethod" for d in node.decorators):
        params = params[1:]
    return params[0].name.value if params else None


def _model(node: cst.ClassDef, site: Site, lineage: Lineage) -> AutogradFunction | None:
    from .scopes import class_scope

    own = _class_methods(node)
    chain = [_class_methods(ancestor) for ancestor in lineage.ancestors]
    inherited: set[str] = set()

    def lookup(name: str) -> tuple[cst.FunctionDef | None, bool]:
        """(the method, whether that answer is certain)."""
        for index, methods in enumerate([own, *chain]):
            if name in methods:
                if index:
                    inherited.add(name)
                return methods[name], methods[name] is not None
        return None, lineage.complete  # torch's own default, when every base is known

    forward, forward_known = lookup("forward")
    backward, _ = lookup("backward")
    if backward is None:
        backward, _ = lookup("vjp")
    setup, setup_known = lookup("setup_context")

    if lineage.is_function is None:
        # Maybe a Function through a base gradlint cannot see. Only a class written the
        # way Functions are (both methods here, taking `ctx`) is judged.
        if "forward" not in own or "backward" not in own:
            return None
        if _first_param(own["backward"]) != "ctx":
            return None
        if "setup_context" not in own and _first_param(own["forward"]) != "ctx":
            return None
    if forward is None and not forward_known:
        return None

    cls_scope = class_scope(node, site.scope, site)
    model = AutogradFunction(node, site, cls_scope, inherited=inherited, lineage=lineage)
    if forward is not None:
        model.forward = Method(forward, function_scope(forward, cls_scope, site), model)
    if backward is not None:
        model.backward = Method(backward, function_scope(backward, cls_scope, site), model)
    if setup is not None:
        model.setup_context = Method(setup, function_scope(setup, cls_scope, site), model)
        model.style = "setup_context"
    elif setup_known or _first_param(forward) == "ctx":
        model.style = "ctx"
    return model
