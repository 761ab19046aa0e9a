"""A model of the ``torch.library`` custom operators of a module.

Found by syntax (names resolved through imports and aliases):

* ``@torch.library.custom_op("ns::name", mutates_args=..., schema=...)`` on a def, the
  call form ``custom_op("ns::name", mutates_args=...)(fn)`` / ``custom_op("ns::name", fn,
  ...)``, and ``triton_op`` (which infers the schema the same way);
* ``torch.library.define("ns::name", "(Tensor x) -> Tensor")`` and
  ``Library("ns", ...).define("name(...) -> ...")``, with kernels from
  ``torch.library.impl`` (decorator or call) and ``Library.impl``;
* registrations, on the op object or by name: ``register_autograd(backward,
  setup_context=...)``, ``register_fake`` / ``impl_abstract``, ``register_kernel``,
  ``register_vmap``.

Every op keeps where each piece is (nodes and sites), so rules can report precisely and
the runner can find the op, its backward and its fake implementation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import libcst as cst

from .codegen import node_code
from .arguments import has_unknown_double_star, literal_mapping
from .gradcheck_calls import StatementExpressions
from .names import BindingKind, dotted_name
from .op_types import SchemaArgument, Verdict, parameter_verdict, parse_schema, return_verdict
from .scopes import ModuleContext, Scope, Site, find_site, function_scope, walk_statements

# Code that defines or registers custom ops mentions one of these (the `lib.impl(...)` and
# `lib.define(...)` of a Library object included). Every API it resolves lives in
# torch.library or torch._library: a name bound to one names that module (`torch.library.X`,
# `from torch import library`), not just any "library" (torch's own sources say it in 40%
# of their lines' files).
MENTIONS_TORCH_LIBRARY = re.compile(
    r"custom_op|triton_op|torch\._?library|Library|_scoped_library"
    r"|register_(?:autograd|fake|kernel|vmap)|impl_abstract|\bimpl\(|\bdefine\("
    r"|from\s+torch\s+import\s*\(?[\w\s,]*\b_?library\b")


# An op is created only by a call resolved to `custom_op`/`triton_op`/`torch.library.define`
# or by `<a Library>.define(...)`. Names resolve through the module's own bindings and
# attributes, so the code of a module that creates an op holds one of these names as a whole
# word (`_triton_ops` is not one); the custom-op rules need nothing else (registrations and
# backwards are found through the ops). torch's sources register ops by name (`lib.impl`,
# `register_fake("aten::...")`) in far more files than create one (torch 2.13: 183 files
# mention torch.library, 48 of them create an op).
CREATES_CUSTOM_OP = re.compile(r"(?<!\w)(?:custom_op|triton_op|define)(?!\w)")


def library_aliases(context: ModuleContext) -> list[str]:
    """Module-level names bound to torch.library's API under other names
    (`from torch.library import custom_op as op`): code using them is relevant too."""
    found = []
    for name in context.scope.table.bindings:
        qualified = context.resolve_name(name, context.scope) or ""
        if qualified.startswith(("torch.library.", "torch._library.")) and \
                not MENTIONS_TORCH_LIBRARY.search(name):
            found.append(name)
    return found

CUSTOM_OP = frozenset({
    "torch.library.custom_op", "torch._library.custom_ops.custom_op",
    "torch.library.triton_op", "torch._library.triton.triton_op", "torch._library.triton_op",
})
DEFINE = frozenset({"torch.library.define"})
LIBRARY = frozenset({"torch.library.Library", "torch.library._scoped_library"})
IMPL = frozenset({"torch.library.impl"})
REGISTER_KERNEL = frozenset({"torch.library.register_kernel"})
REGISTER_FAKE = frozenset({"torch.library.register_fake", "torch.library.impl_abstract"})
REGISTER_AUTOGRAD = frozenset({"torch.library.register_autograd"})
REGISTER_VMAP = frozenset({"torch.library.register_vmap"})
# methods of the op object (CustomOpDef) that register a function, by registration kind
_OP_METHODS = {"register_fake": "fake", "register_kernel": "kernel", "register_vmap": "vmap"}

POSITIONAL_ONLY = "positional_only"
POSITIONAL = "positional"
KEYWORD_ONLY = "keyword_only"
VAR_POSITIONAL = "var_positional"
VAR_KEYWORD = "var_keyword"


@dataclass
class OpParameter:
    name: str
    kind: str  # POSITIONAL | KEYWORD_ONLY | POSITIONAL_ONLY | VAR_POSITIONAL | VAR_KEYWORD
    node: cst.Param | None  # None when the op's signature comes from a schema string
    annotation: cst.Annotation | None = None
    annotation_text: str | None = None
    verdict: Verdict = field(default_factory=Verdict)  # infer_schema's view of the annotation
    schema_type: str | None = None  # "Tensor", "Tensor?", "SymInt[]"...; None: unknown
    default_text: str | None = None
    mutable: bool = False  # declared mutated (mutates_args or `Tensor(a!)`)

    @property
    def has_default(self) -> bool:
        return self.default_text is not None

    @property
    def is_tensor(self) -> bool | None:
        """A Tensor, an optional Tensor or a list of them; None when unknown."""
        if self.schema_type is None:
            return None
        return self.schema_type.startswith("Tensor")


@dataclass
class FunctionRef:
    """A Python function registered for (or implementing) an op."""

    node: cst.FunctionDef | cst.Lambda
    site: Site  # where the def (or the statement holding the lambda) is
    scope: Scope  # the function's own scope
    qualname: str | None  # dotted path from the module ("f", "Ops.f"); None if not reachable

    @property
    def name(self) -> str | None:
        return self.node.name.value if isinstance(self.node, cst.FunctionDef) else None


@dataclass
class Registration:
    kind: str  # "backward" | "setup_context" | "fake" | "kernel" | "vmap" | "impl"
    function: FunctionRef | None  # None when gradlint cannot resolve the function
    node: cst.CSTNode  # the decorator expression or the registering call
    site: Site  # the statement holding the decorator/call
    reference: cst.BaseExpression | None = None  # the argument naming the function


@dataclass
class MutatesArgs:
    node: cst.BaseExpression | None  # the `mutates_args=` value (None: from a schema)
    names: tuple[str, ...] | None  # the listed names; None when not a literal
    unknown: bool = False  # `mutates_args="unknown"`
    invalid_string: str | None = None  # a string other than "unknown" (torch raises)
    elements: tuple[cst.SimpleString, ...] = ()  # the literal's strings, in order


@dataclass
class CustomOp:
    name: str | None  # "ns::name"
    style: str  # "custom_op" | "triton_op" | "define"
    call: cst.Call  # custom_op(...) / define(...) / lib.define(...)
    site: Site  # the statement that creates the op (the def, for a decorator)
    python_name: str | None = None  # the Python name bound to the op object
    qualname: str | None = None  # importable dotted path of that name ("Ops.f")
    function: FunctionRef | None = None  # the custom_op function
    params: list[OpParameter] | None = None  # None: unknown
    returns: cst.Annotation | None = None
    return_verdict: Verdict = field(default_factory=Verdict)
    schema: str | None = None  # an explicit schema string
    schema_node: cst.BaseExpression | None = None  # `schema=` value; not a literal: no schema
    mutates_args: MutatesArgs | None = None
    tags_node: cst.BaseExpression | None = None
    registrations: list[Registration] = field(default_factory=list)

    def registered(self, kind: str) -> list[Registration]:
        return [r for r in self.registrations if r.kind == kind]

    @property
    def backward(self) -> Registration | None:
        found = self.registered("backward")
        return found[-1] if found else None

    @property
    def setup_context(self) -> Registration | None:
        found = self.registered("setup_context")
        return found[-1] if found else None

    @property
    def autograd_registration(self) -> Registration | None:
        """The backward registration (its node is the register_autograd call)."""
        return self.backward

    @property
    def fakes(self) -> list[Registration]:
        return self.registered("fake")

    @property
    def kernels(self) -> list[Registration]:
        """Implementations: the custom_op function's own kernels, register_kernel, impl."""
        return self.registered("kernel") + self.registered("impl")

    @property
    def infers_schema(self) -> bool:
        """The schema comes from the function's annotations (no `schema=`)."""
        return self.style != "define" and self.schema_node is None

    @property
    def known_functional(self) -> bool:
        """Does the code show that the op is functional (no mutated input, some output), the
        kind of op ``register_autograd`` accepts? False when it mutates or it is unknown."""
        if self.params is None or any(p.mutable for p in self.params):
            return False
        if self.mutates_args is not None and (self.mutates_args.unknown or self.mutates_args.names is None):
            return False  # "unknown", or a list gradlint cannot read
        if self.schema is not None:
            return "!" not in self.schema and not _returns_nothing(self.schema)
        return self.mutates_args is not None and self.infers_schema and \
            self.return_verdict.schema_type not in (None, "()")

    def positional(self) -> list[OpParameter] | None:
        if self.params is None:
            return None
        return [p for p in self.params if p.kind in (POSITIONAL, POSITIONAL_ONLY)]

    def keyword_only(self) -> list[OpParameter] | None:
        if self.params is None:
            return None
        return [p for p in self.params if p.kind == KEYWORD_ONLY]

    def sites(self) -> Iterator[Site]:
        """Every statement holding a piece of the op (to know which blocks it spans)."""
        yield self.site
        if self.function is not None:
            yield self.function.site
        for registration in self.registrations:
            yield registration.site
            if registration.function is not None:
                yield registration.function.site


def ops_by_top_statement(context: ModuleContext) -> dict[int, list[int]]:
    """id(top-level statement) -> positions in ``custom_ops(context)`` of the ops with a
    piece in it (memoized on the context: each block asks)."""
    found = context.models.get("custom_ops_by_top_statement")
    if found is None:
        found = {}
        for position, op in enumerate(custom_ops(context)):
            for site in op.sites():
                positions = found.setdefault(id(site.top_statement), [])
                if not positions or positions[-1] != position:
                    positions.append(position)
        context.models["custom_ops_by_top_statement"] = found
    return found  # type: ignore[return-value]


def custom_ops(context: ModuleContext) -> list[CustomOp]:
    """Every custom op of the module, with its registrations (memoized on the context)."""
    if "custom_ops" not in context.models:
        only = context.models.get("torch_library_statements")
        context.models["custom_ops"] = _Finder(context, only).run()  # type: ignore[arg-type]
    return context.models["custom_ops"]  # type: ignore[return-value]


def ops_given_a_gradient(context: ModuleContext) -> dict[str, Site]:
    """The ops ("ns::name") this module gives a gradient, with where: a backward registration
    of an op it defines, or ``torch.library.register_autograd("ns::name", ...)`` of an op
    defined elsewhere (in C++, another module). Memoized on the context."""
    if "ops_given_a_gradient" not in context.models:
        found: dict[str, Site] = {}
        for op in custom_ops(context):
            for registration in op.registrations:
                if op.name and registration.kind == "backward":
                    found.setdefault(op.name, registration.site)
        only = context.models.get("torch_library_statements")
        positions = sorted(only) if only is not None else None  # type: ignore[arg-type]
        for stmt, site in walk_statements(context.statements, context.scope, indexes=positions):
            for call in StatementExpressions.of(stmt, cst.Call):
                arguments = [a for a in call.args if a.keyword is None and not a.star]
                if arguments and context.qualified(call.func, site.scope) in REGISTER_AUTOGRAD:
                    name = _op_name(_string_value(arguments[0].value))
                    if name and "::" in name:
                        found.setdefault(name, site)
        context.models["ops_given_a_gradient"] = found
    return context.models["ops_given_a_gradient"]  # type: ignore[return-value]


def limit_search(context: ModuleContext, positions: Iterable[int]) -> None:
    """Look for ops and registrations only in these top-level statements (positions in
    ``context.statements``): the ones whose code mentions ``MENTIONS_TORCH_LIBRARY``. The
    functions they name (a backward, a fake) are still found anywhere, by name."""
    context.models["torch_library_statements"] = frozenset(positions)
    context.models.pop("custom_ops", None)
    context.models.pop("custom_ops_by_top_statement", None)


def _key(scope: Scope) -> int:
    return id(scope.node) if scope.node is not None else 0


def _scopes_out(scope: Scope) -> Iterator[Scope]:
    current: Scope | None = scope
    while current is not None:
        yield current
        current = current.parent


class _Finder:
    def __init__(self, context: ModuleContext, only: frozenset[int] | None = None):
        self.context = context
        self.only = only
        self.ops: list[CustomOp] = []
        self.by_name: dict[str, list[CustomOp]] = {}
        self.by_binding: dict[tuple[int, str], CustomOp] = {}
        self.libraries: dict[tuple[int, str], str] = {}  # (scope, name) -> namespace
        self.statements: list[tuple[cst.BaseStatement, Site]] = []

    def run(self) -> list[CustomOp]:
        indexes = sorted(self.only) if self.only is not None else None
        self.statements = list(walk_statements(self.context.statements, self.context.scope,
                                               indexes=indexes))
        for stmt, site in self.statements:
            self._define(stmt, site)
        for stmt, site in self.statements:
            self._register(stmt, site)
        # an op made or registered with `**options` gradlint cannot read (its schema,
        # mutates_args, setup_context...) is not modelled: its rules say nothing
        return [op for op in self.ops if not _hides_arguments(op.call) and
                not any(isinstance(r.node, cst.Call) and _hides_arguments(r.node) for r in op.registrations)]

    # -- helpers ---------------------------------------------------------------------
    def qualified(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        return self.context.qualified(expr, scope)

    def _calls(self, stmt: cst.BaseStatement) -> Iterator[tuple[cst.Call, str | None]]:
        """Calls in a simple statement (with the name a plain `name = call` binds)."""
        if not isinstance(stmt, cst.SimpleStatementLine):
            return
        for small in stmt.body:
            target = None
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, cst.Name):
                target = small.targets[0].target.value
                value = small.value
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and \
                    small.value is not None:
                target = small.target.value
                value = small.value
            elif isinstance(small, cst.Expr):
                value = small.value
            else:
                continue
            if isinstance(value, cst.Call):
                yield value, target

    def _op_from_reference(self, expr: cst.BaseExpression, scope: Scope) -> CustomOp | None:
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return self.named(_op_name(value), scope) if isinstance(value, str) else None
        if isinstance(expr, cst.Name):
            owner = scope.binding_scope(expr.value)
            if owner is not None:
                op = self.by_binding.get((_key(owner), expr.value))
                if op is not None:
                    return op
        name = self.qualified(expr, scope)
        if name is not None and name.startswith("torch.ops."):
            parts = name.split(".")
            if len(parts) >= 4:
                return self.named(f"{parts[2]}::{parts[3]}", scope)
        return None

    def named(self, name: str | None, scope: Scope) -> CustomOp | None:
        """The op called ``name`` that a registration in ``scope`` refers to. When several
        ops share the name (test functions that each define "mylib::foo"), only one
        defined in ``scope`` or a scope around it qualifies; otherwise None."""
        candidates = self.by_name.get(name or "", [])
        if len(candidates) == 1:
            return candidates[0]
        enclosing = {_key(s) for s in _scopes_out(scope)}
        close = [op for op in candidates if _key(op.site.scope) in enclosing]
        return close[-1] if close and len({_key(op.site.scope) for op in close}) == 1 else None

    def _library(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        if not isinstance(expr, cst.Name):
            return None
        owner = scope.binding_scope(expr.value)
        if owner is None:
            return None
        return self.libraries.get((_key(owner), expr.value))

    def function_ref(self, expr: cst.BaseExpression, scope: Scope, site: Site) -> FunctionRef | None:
        if isinstance(expr, cst.Lambda):
            return FunctionRef(expr, site, function_scope(expr, scope, site), None)
        if not isinstance(expr, cst.Name):
            return None
        owner = scope.binding_scope(expr.value)
        if owner is None:
            return None
        bindings = owner.table.bindings.get(expr.value, [])
        if len(bindings) != 1 or bindings[0].kind is not BindingKind.DEF:
            return None
        node = bindings[0].node
        assert isinstance(node, cst.FunctionDef)
        return self.def_ref(node, owner)

    def def_ref(self, node: cst.FunctionDef, owner: Scope) -> FunctionRef | None:
        def_site = find_site(owner.statements, owner, node)
        if def_site is None:
            return None
        return FunctionRef(node, def_site, function_scope(node, owner, def_site),
                           _qualname(node.name.value, owner, self.statements))

    # -- pass 1: ops -----------------------------------------------------------------
    def _define(self, stmt: cst.BaseStatement, site: Site) -> None:
        scope = site.scope
        if isinstance(stmt, cst.FunctionDef):
            for decorator in stmt.decorators:
                expr = decorator.decorator
                if isinstance(expr, cst.Call) and self.qualified(expr.func, scope) in CUSTOM_OP:
                    function = FunctionRef(stmt, site, function_scope(stmt, scope, site),
                                           _qualname(stmt.name.value, scope, self.statements))
                    self._custom_op(expr, site, stmt.name.value, function)
            return
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                call = item.item
                if isinstance(call, cst.Call) and item.asname is not None and \
                        isinstance(item.asname.name, cst.Name) and \
                        self.qualified(call.func, scope) in LIBRARY:
                    self._remember_library(call, item.asname.name.value, scope)
            return
        for call, target in self._calls(stmt):
            func = call.func
            name = self.qualified(func, scope)
            if name in CUSTOM_OP:  # custom_op("ns::f", fn, mutates_args=...)
                positional = [a for a in call.args if a.keyword is None and not a.star]
                if len(positional) >= 2:
                    function = self.function_ref(positional[1].value, scope, site)
                    self._custom_op(call, site, target, function)
            elif isinstance(func, cst.Call) and self.qualified(func.func, scope) in CUSTOM_OP:
                arguments = [a for a in call.args if a.keyword is None and not a.star]
                function = self.function_ref(arguments[0].value, scope, site) if arguments else None
                self._custom_op(func, site, target, function, outer=call)
            elif name in LIBRARY and target is not None:
                self._remember_library(call, target, scope)
            elif name in DEFINE:
                self._define_op(call, site, target, _string_arg(call, 0, "qualname"),
                                _string_arg(call, 1, "schema"))
            elif isinstance(func, cst.Attribute) and func.attr.value == "define":
                namespace = self._library(func.value, scope)
                schema = _string_arg(call, 0, "schema")
                if namespace is not None and schema is not None:
                    parsed = parse_schema(schema)
                    if parsed is not None and parsed.name:
                        self._define_op(call, site, target, f"{namespace}::{parsed.name}", schema)

    def _remember_library(self, call: cst.Call, target: str, scope: Scope) -> None:
        namespace = _string_arg(call, 0, "ns")
        if namespace is not None:
            self.libraries[(_key(scope), target)] = namespace

    def _custom_op(self, call: cst.Call, site: Site, python_name: str | None,
                   function: FunctionRef | None, outer: cst.Call | None = None) -> None:
        scope = site.scope
        name = _string_arg(call, 0, "name")
        style = "triton_op" if (self.qualified(call.func, scope) or "").endswith("triton_op") \
            else "custom_op"
        op = CustomOp(_op_name(name) if name else None, style, call, site, python_name,
                      _qualname(python_name, scope, self.statements) if python_name else None,
                      function)
        keywords = _keywords(call)
        op.schema_node = keywords.get("schema")
        if isinstance(op.schema_node, cst.Name) and op.schema_node.value == "None":
            op.schema_node = None
        if isinstance(op.schema_node, cst.SimpleString):
            value = op.schema_node.evaluated_value
            op.schema = value if isinstance(value, str) else None
        op.tags_node = keywords.get("tags")
        if "mutates_args" in keywords:
            op.mutates_args = _mutates_args(keywords["mutates_args"])
        if function is not None and isinstance(function.node, cst.FunctionDef):
            op.params = _params_from_def(function.node, self.context, function.site.scope)
            op.returns = function.node.returns
            if op.returns is not None:
                op.return_verdict = return_verdict(op.returns, self.context, function.site.scope)
        if op.schema is not None:
            _apply_schema(op, op.schema)
        elif op.schema_node is not None:
            op.params = None  # a schema we cannot read
        if op.params is not None and op.mutates_args is not None and op.schema_node is None:
            listed = set(op.mutates_args.names or ())
            for param in op.params:
                # "unknown": torch marks every Tensor input as written
                param.mutable = (op.mutates_args.unknown and param.is_tensor is not False) or \
                    param.name in listed
        self._add(op, scope)

    def _define_op(self, call: cst.Call, site: Site, target: str | None, name: str | None,
                   schema: str | None) -> None:
        if name is None:
            return
        op = CustomOp(_op_name(name), "define", call, site, target, None, None)
        if schema is not None:
            op.schema = schema
            _apply_schema(op, schema)
        self._add(op, site.scope)

    def _add(self, op: CustomOp, scope: Scope) -> None:
        self.ops.append(op)
        if op.name is not None:
            self.by_name.setdefault(op.name, []).append(op)
        if op.python_name is not None:
            self.by_binding[(_key(scope), op.python_name)] = op

    # -- pass 2: registrations -------------------------------------------------------
    def _register(self, stmt: cst.BaseStatement, site: Site) -> None:
        scope = site.scope
        if isinstance(stmt, cst.FunctionDef):
            for decorator in stmt.decorators:
                self._decorator(decorator.decorator, stmt, site)
            return
        for call, _ in self._calls(stmt):
            self._registration_call(call, site)

    def _decorator(self, expr: cst.BaseExpression, node: cst.FunctionDef, site: Site) -> None:
        scope = site.scope
        function = None

        def ref() -> FunctionRef:
            nonlocal function
            if function is None:
                function = FunctionRef(node, site, function_scope(node, scope, site),
                                       _qualname(node.name.value, scope, self.statements))
            return function

        if _is_op_method(expr, self.qualified(expr, scope)):
            op = self._op_from_reference(expr.value, scope)  # @op.register_fake
            if op is not None:
                op.registrations.append(Registration(_OP_METHODS[expr.attr.value], ref(), expr, site))
            return
        if not isinstance(expr, cst.Call):
            return
        func = expr.func
        if _is_op_method(func, self.qualified(func, scope)):
            op = self._op_from_reference(func.value, scope)  # @op.register_kernel("cpu")
            if op is not None:
                op.registrations.append(Registration(_OP_METHODS[func.attr.value], ref(), expr, site))
            return
        name = self.qualified(func, scope)
        kind = _kind_of(name)
        if kind is None:
            return
        op = self._op_of_call(expr, name, scope)
        if op is not None:
            op.registrations.append(Registration(kind, ref(), expr, site))

    def _op_of_call(self, call: cst.Call, name: str | None, scope: Scope) -> CustomOp | None:
        if not call.args:
            return None
        first = call.args[0].value
        if name in IMPL and len(call.args) >= 2 and self._library(first, scope) is not None:
            # the deprecated impl(lib, "name", dispatch_key) form
            op_name = _string_value(call.args[1].value)
            namespace = self._library(first, scope)
            return self.named(f"{namespace}::{_op_name(op_name)}", scope) if op_name else None
        return self._op_from_reference(first, scope)

    def _registration_call(self, call: cst.Call, site: Site) -> None:
        scope = site.scope
        func = call.func
        if isinstance(func, cst.Call):  # register_fake("ns::f")(fn), impl(...)(fn), op.register_kernel("cpu")(fn)
            arguments = [a for a in call.args if a.keyword is None and not a.star]
            if not arguments:
                return
            inner = func.func
            if _is_op_method(inner, self.qualified(inner, scope)):
                op = self._op_from_reference(inner.value, scope)
                kind = _OP_METHODS[inner.attr.value]
            else:
                name = self.qualified(inner, scope)
                kind = _kind_of(name)
                op = self._op_of_call(func, name, scope) if kind else None
            if op is not None and kind is not None:
                self._add_registration(op, kind, arguments[0].value, call, site)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "register_autograd" and \
                not (self.qualified(func, scope) or "").startswith("torch."):
            op = self._op_from_reference(func.value, scope)
            if op is not None:
                self._autograd(op, call, [a for a in call.args if a.keyword is None and not a.star], site)
            return
        if _is_op_method(func, self.qualified(func, scope)):
            op = self._op_from_reference(func.value, scope)
            arguments = [a for a in call.args if a.keyword is None and not a.star]
            index = 1 if func.attr.value == "register_kernel" else 0
            if op is not None and len(arguments) > index:
                self._add_registration(op, _OP_METHODS[func.attr.value], arguments[index].value,
                                       call, site)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in ("impl", "_register_fake"):
            namespace = self._library(func.value, scope)  # lib.impl("name", fn, "CPU")
            arguments = [a for a in call.args if a.keyword is None and not a.star]
            if namespace is not None and len(arguments) >= 2:
                op_name = _string_value(arguments[0].value)
                op = self.named(f"{namespace}::{_op_name(op_name)}", scope) if op_name else None
                if op is not None:
                    kind = "impl" if func.attr.value == "impl" else "fake"
                    self._add_registration(op, kind, arguments[1].value, call, site)
            return
        name = self.qualified(func, scope)
        if name in REGISTER_AUTOGRAD:
            arguments = [a for a in call.args if a.keyword is None and not a.star]
            op = self._op_from_reference(arguments[0].value, scope) if arguments else None
            if op is not None:
                self._autograd(op, call, arguments[1:], site)
            return
        kind = _kind_of(name)
        if kind is None:
            return
        op = self._op_of_call(call, name, scope)
        if op is None:
            return
        arguments = [a for a in call.args if a.keyword is None and not a.star]
        keywords = _keywords(call)
        index = {"fake": 1, "vmap": 1, "kernel": 2, "impl": 2}[kind]
        function = keywords.get("func") if kind in ("impl", "fake", "vmap", "kernel") else None
        if function is None and len(arguments) > index:
            function = arguments[index].value
        if function is not None:
            self._add_registration(op, kind, function, call, site)

    def _add_registration(self, op: CustomOp, kind: str, reference: cst.BaseExpression,
                          node: cst.CSTNode, site: Site) -> None:
        function = self.function_ref(reference, site.scope, site)
        op.registrations.append(Registration(kind, function, node, site, reference))

    def _autograd(self, op: CustomOp, call: cst.Call, arguments: Sequence[cst.Arg],
                  site: Site) -> None:
        keywords = _keywords(call)
        backward = arguments[0].value if arguments else keywords.get("backward")
        if backward is not None:
            self._add_registration(op, "backward", backward, call, site)
        setup = keywords.get("setup_context")
        if setup is not None and not (isinstance(setup, cst.Name) and setup.value == "None"):
            self._add_registration(op, "setup_context", setup, call, site)


def _is_op_method(expr: cst.BaseExpression, qualified: str | None) -> bool:
    """``op.register_fake`` and the like (not ``torch.library.register_fake``)."""
    return isinstance(expr, cst.Attribute) and expr.attr.value in _OP_METHODS and \
        not (qualified or "").startswith("torch.")


def _kind_of(name: str | None) -> str | None:
    if name in REGISTER_FAKE:
        return "fake"
    if name in IMPL:
        return "impl"
    if name in REGISTER_KERNEL:
        return "kernel"
    if name in REGISTER_VMAP:
        return "vmap"
    return None


def _returns_nothing(schema: str) -> bool:
    parsed = parse_schema(schema)
    return parsed is None or parsed.returns.strip() == "()"


def _op_name(value: str | None) -> str | None:
    """ "ns::name.overload" -> "ns::name" """
    if value is None or "::" not in value:
        return value
    namespace, rest = value.split("::", 1)
    return f"{namespace}::{rest.split('.')[0]}"


def _string_value(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _hides_arguments(call: cst.Call) -> bool:
    return has_unknown_double_star(call) or any(a.star == "*" for a in call.args)


def _keywords(call: cst.Call) -> dict[str, cst.BaseExpression]:
    """The keyword arguments, with those of literal ``**{...}`` mappings."""
    found = {}
    for arg in call.args:
        if arg.star == "**":
            found.update(literal_mapping(arg.value) or {})
        elif arg.keyword is not None:
            found[arg.keyword.value] = arg.value
    return found


def _string_arg(call: cst.Call, index: int, keyword: str) -> str | None:
    value = _keywords(call).get(keyword)
    if value is not None:
        return _string_value(value)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if len(positional) > index:
        return _string_value(positional[index].value)
    return None


def _mutates_args(expr: cst.BaseExpression) -> MutatesArgs:
    value = _string_value(expr)
    if value is not None:
        if value == "unknown":
            return MutatesArgs(expr, None, unknown=True)
        return MutatesArgs(expr, None, invalid_string=value)
    if isinstance(expr, cst.Dict) and not expr.elements:
        return MutatesArgs(expr, ())
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        names: list[str] = []
        strings: list[cst.SimpleString] = []
        for element in expr.elements:
            if not isinstance(element, cst.Element) or not isinstance(element.value, cst.SimpleString):
                return MutatesArgs(expr, None)
            text = _string_value(element.value)
            if text is None:
                return MutatesArgs(expr, None)
            names.append(text)
            strings.append(element.value)
        return MutatesArgs(expr, tuple(names), elements=tuple(strings))
    if isinstance(expr, cst.Call) and dotted_name(expr.func) in ("tuple", "list", "set") and not expr.args:
        return MutatesArgs(expr, ())
    return MutatesArgs(expr, None)


def _params_from_def(node: cst.FunctionDef, context: ModuleContext, scope: Scope) -> list[OpParameter]:
    module = cst.Module(body=())
    params: list[OpParameter] = []

    def add(param: cst.Param, kind: str) -> None:
        annotation_text = node_code(param.annotation.annotation, module) \
            if param.annotation is not None else None
        verdict = parameter_verdict(param.annotation, context, scope) \
            if param.annotation is not None else Verdict()
        default = node_code(param.default, module) if param.default is not None else None
        params.append(OpParameter(param.name.value, kind, param, param.annotation, annotation_text,
                                  verdict, verdict.schema_type, default))

    for param in node.params.posonly_params:
        add(param, POSITIONAL_ONLY)
    for param in node.params.params:
        add(param, POSITIONAL)
    if isinstance(node.params.star_arg, cst.Param):
        add(node.params.star_arg, VAR_POSITIONAL)
    for param in node.params.kwonly_params:
        add(param, KEYWORD_ONLY)
    if node.params.star_kwarg is not None:
        add(node.params.star_kwarg, VAR_KEYWORD)
    return params


def _apply_schema(op: CustomOp, text: str) -> None:
    """Take the op's signature from a schema string (names, kinds, types, mutability)."""
    schema = parse_schema(text)
    if schema is None:
        op.params = None
        return
    by_name = {p.name: p for p in op.params or []}
    params = []
    for argument in schema.arguments:
        python = by_name.get(argument.name)
        params.append(_schema_param(argument, python))
    op.params = params
    if op.style == "define" or op.mutates_args is None:
        names = tuple(a.name for a in schema.arguments if a.mutable)
        op.mutates_args = op.mutates_args or MutatesArgs(None, names)


def _schema_param(argument: SchemaArgument, python: OpParameter | None) -> OpParameter:
    schema_type = argument.type.replace("int", "SymInt") if argument.type.startswith("int") \
        else argument.type
    return OpParameter(argument.name, KEYWORD_ONLY if argument.keyword_only else POSITIONAL,
                       python.node if python else None,
                       python.annotation if python else None,
                       python.annotation_text if python else None,
                       Verdict(schema_type), schema_type, argument.default, argument.mutable)


def _qualname(name: str | None, scope: Scope, statements: Sequence[tuple[cst.BaseStatement, Site]]
              ) -> str | None:
    """``Outer.name`` for a name bound in a module-level class (nested classes included);
    None inside functions."""
    if name is None:
        return None
    parts = [name]
    current: Scope | None = scope
    while current is not None and current.kind == "class":
        assert isinstance(current.node, cst.ClassDef)
        parts.append(current.node.name.value)
        current = current.parent
    if current is None or current.kind != "module":
        return None
    return ".".join(reversed(parts))
