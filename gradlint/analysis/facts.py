"""What can be known, without running anything, about the values given to gradcheck.

The evaluator answers "which dtype does this tensor have, does it require grad, and
where in the source was that decided?" for an expression at a site. It follows local
assignments backwards through straight-line code, and gives up ("unknown") as soon as a
branch, loop, call or anything else could have changed the answer: gradlint only reports
what it knows.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator, Sequence, Union

import libcst as cst

from . import torch_api, transfer
from .names import BindingKind, compound_bodies, statement_bindings, target_names
from .scopes import Frame, ModuleContext, Scope, Site, find_site, function_scope, walk_statements


# -- facts -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Origin:
    """Where a property of a tensor was decided, for fixes to edit.

    kind: ``factory`` (a factory call that takes ``dtype=``/``requires_grad=``),
    ``cast`` (``x.float()``), ``to`` (``x.to(torch.float32)``), or ``expression`` (a
    whole expression a method like ``.requires_grad_()`` can be appended to).
    """

    kind: str
    node: cst.BaseExpression
    site: Site


@dataclass(frozen=True)
class TensorFact:
    dtype: str | None
    requires_grad: bool | None
    dtype_origin: Origin | None = None
    grad_origin: Origin | None = None
    default_dtype: bool = False  # the dtype is torch's default floating dtype


@dataclass(frozen=True)
class SequenceFact:
    kind: str  # "tuple" | "list"
    elements: tuple["Fact", ...] | None  # None: length or content unknown
    node: cst.Tuple | cst.List | None = None  # the literal the elements come from


@dataclass(frozen=True)
class DtypeFact:
    dtype: str | None


@dataclass(frozen=True)
class OpaqueFact:
    """A known non-tensor value: number, none, bool, string, generator, dict, set, callable."""

    kind: str
    value: object = None  # numbers: the value, when it is a literal


@dataclass(frozen=True)
class UnknownFact:
    pass


UNKNOWN = UnknownFact()
Fact = Union[TensorFact, SequenceFact, DtypeFact, OpaqueFact, UnknownFact]

_MAX_DEPTH = 24
_PURE_BUILTINS = frozenset({
    "print", "len", "isinstance", "type", "id", "repr", "str", "float", "int", "bool",
    "tuple", "list", "dict", "set", "sorted", "enumerate", "zip", "range", "hash", "format",
})


# -- evaluation ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Bound:
    value: cst.BaseExpression
    site: Site
    element: int | None = None  # unpacking `a, b = x, y`: which element


@dataclass(frozen=True)
class _Mutation:
    requires_grad: bool | None  # the new value; None: unknown
    dtype_unknown: bool = False
    # handed to unknown code: it may call `requires_grad_()`, but nothing turns a tensor
    # that requires grad into one that does not, and no call changes a tensor's dtype
    keeps_true: bool = False


class _Unknown:
    pass


_STOP = _Unknown()


class Evaluator:
    def __init__(self, context: ModuleContext, fixtures: "FixtureSource | None" = None):
        self.context = context
        self.fixtures = fixtures  # pytest fixtures of conftest.py files above the module
        # values of parameters, by (function node id, name): a helper's arguments, a
        # pytest fixture's value, a parametrize case
        self.parameters: dict[tuple[int, str], Fact] = {}
        # comprehension variables being evaluated, by (scope node id, name)
        self._comprehension: dict[tuple[int, str], Fact] = {}
        self._active: set[int] = set()  # helpers being evaluated (recursion guard)
        from .callees import Callees

        self.callees = Callees(self)

    # public ------------------------------------------------------------------------
    def fact(self, expr: cst.BaseExpression, site: Site, depth: int = 0) -> Fact:
        if depth > _MAX_DEPTH:
            return UNKNOWN
        if isinstance(expr, cst.Name):
            if expr.value == "None":
                return OpaqueFact("none")
            if expr.value in ("True", "False"):
                return OpaqueFact("bool", expr.value == "True")
            bound = self._comprehension.get((id(site.scope.node), expr.value))
            if bound is not None:
                return bound
            return self.name_fact(expr.value, site, depth + 1)
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
            return OpaqueFact("number", _number(expr))
        if isinstance(expr, cst.UnaryOperation) and isinstance(
                expr.expression, (cst.Integer, cst.Float, cst.Imaginary)):
            value = _number(expr.expression)
            if isinstance(expr.operator, cst.Minus) and value is not None:
                value = -value  # type: ignore[operator]
            return OpaqueFact("number", value)
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return OpaqueFact("string")
        if isinstance(expr, (cst.Tuple, cst.List)):
            kind = "tuple" if isinstance(expr, cst.Tuple) else "list"
            if any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return SequenceFact(kind, None)
            return SequenceFact(kind, tuple(self.fact(e.value, site, depth + 1) for e in expr.elements),
                                expr)
        if isinstance(expr, cst.GeneratorExp):
            return OpaqueFact("generator")
        if isinstance(expr, (cst.Dict, cst.DictComp)):
            return OpaqueFact("dict")
        if isinstance(expr, (cst.Set, cst.SetComp)):
            return OpaqueFact("set")
        if isinstance(expr, cst.ListComp):
            return SequenceFact("list", self._mapped(expr, site, depth))
        if isinstance(expr, cst.Lambda):
            return OpaqueFact("callable")
        if isinstance(expr, cst.Attribute):
            return self._attribute_fact(expr, site, depth)
        if isinstance(expr, cst.Call):
            return self._call_fact(expr, site, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self._binary_fact(expr, site, depth)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            operand = self.fact(expr.expression, site, depth + 1)
            if isinstance(operand, TensorFact):
                return self._transferred(transfer.METHODS["neg"], [operand], [], expr, site)
            return UNKNOWN
        if isinstance(expr, cst.Subscript):
            return self._subscript_fact(expr, site, depth)
        return UNKNOWN

    def qualified(self, expr: cst.BaseExpression, site: Site) -> str | None:
        return self.context.qualified(expr, site.scope)

    def builtin_name(self, expr: cst.BaseExpression, site: Site) -> str | None:
        """``expr`` names a Python builtin (not rebound anywhere visible)."""
        if isinstance(expr, cst.Name) and site.scope.binding_scope(expr.value) is None:
            return expr.value
        return None

    # names -------------------------------------------------------------------------
    def name_fact(self, name: str, site: Site, depth: int) -> Fact:
        mutations: list[_Mutation] = []
        frames = site.frames
        for level in range(len(frames) - 1, -1, -1):
            frame = frames[level]
            prefix = frames[:level]
            for index in range(frame.index - 1, -1, -1):
                stmt = frame.statements[index]
                here = Site(site.scope, prefix + (Frame(frame.statements, index, frame.owner,
                                                        frame.handler),))
                outcome = self._examine(stmt, name, here, mutations)
                if outcome is _STOP:
                    return UNKNOWN
                if isinstance(outcome, _Bound):
                    return self._bound_fact(outcome, mutations, depth)
            owner = frame.owner
            if owner is not None and self._leaving_is_unsafe(owner, frame, name, mutations,
                                                             Site(site.scope, frames[:level + 1])):
                return UNKNOWN
        return self._outer_fact(name, site.scope, mutations, depth)

    def _leaving_is_unsafe(self, owner: cst.CSTNode, frame: Frame, name: str,
                           mutations: list[_Mutation], site: Site) -> bool:
        """Going up out of a loop or a try: could the name have other values here?"""
        if isinstance(owner, (cst.For, cst.While)):
            if any(b.name == name for b in statement_bindings(owner)):
                return True
            probe: list[_Mutation] = []
            self._mutations_inside(owner, name, probe, site)
            mutations.extend(probe)
        if isinstance(owner, (cst.Try, cst.TryStar)) and frame.statements is not _body_of(owner):
            if any(b.name == name for b in statement_bindings(owner)):
                return True
        return False

    def _outer_fact(self, name: str, scope: Scope, mutations: list[_Mutation], depth: int) -> Fact:
        if name in scope.table:
            # a parameter (or a name bound later in this scope)
            if not any(b.kind is BindingKind.PARAM for b in scope.table.bindings[name]):
                return UNKNOWN
            return _apply(self._parameter_fact(name, scope, depth), list(reversed(mutations)))
        outer = scope.parent
        while outer is not None and outer.kind == "class":
            outer = outer.parent
        if outer is None:
            return UNKNOWN
        owner = outer.binding_scope(name)
        if owner is None or owner.kind == "class":
            return UNKNOWN
        binding = owner.table.single_assignment(name)
        if binding is None:
            return UNKNOWN
        binding_site = self._statement_site(owner, binding.node)
        if binding_site is None:
            return UNKNOWN
        # mutations that follow the binding in its own statement list
        later: list[_Mutation] = []
        frame = binding_site.frames[-1]
        for index in range(frame.index + 1, len(frame.statements)):
            stmt = frame.statements[index]
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            probe: list[_Mutation] = []
            self._examine(stmt, name, binding_site.with_index(index), probe)
            later.extend(reversed(probe))
        value = binding.value
        assert value is not None
        fact = self.fact(value, binding_site, depth + 1)
        return _apply(fact, later + list(reversed(mutations)))

    @contextmanager
    def bound(self, function: cst.CSTNode, values: dict[str, Fact]) -> Iterator[None]:
        """Evaluate with ``function``'s parameters bound to ``values`` (a parametrize case)."""
        saved = {name: self.parameters.get((id(function), name)) for name in values}
        for name, value in values.items():
            self.parameters[(id(function), name)] = value
        try:
            yield
        finally:
            for name, old in saved.items():
                if old is None:
                    self.parameters.pop((id(function), name), None)
                else:
                    self.parameters[(id(function), name)] = old

    def _parameter_fact(self, name: str, scope: Scope, depth: int) -> Fact:
        """A parameter's value: an argument of the helper call being followed, a pytest
        parametrize case, or a pytest fixture."""
        bound = self.parameters.get((id(scope.node), name))
        if bound is not None:
            return bound
        return self.callees.fixture(name, scope, depth)

    def _statement_site(self, scope: Scope, small: cst.CSTNode) -> Site | None:
        for index, stmt in enumerate(scope.statements):
            if isinstance(stmt, cst.SimpleStatementLine) and any(s is small for s in stmt.body):
                return Site(scope, (Frame(scope.statements, index),))
        # nested in a compound statement of that scope
        for stmt in _simple_lines(scope.statements):
            if any(s is small for s in stmt.body):
                return find_site(scope.statements, scope, stmt)
        return None

    def _bound_fact(self, bound: _Bound, mutations: list[_Mutation], depth: int) -> Fact:
        value = bound.value
        if bound.element is not None:
            assert isinstance(value, (cst.Tuple, cst.List))
            value = value.elements[bound.element].value
        fact = self.fact(value, bound.site, depth + 1)
        return _apply(fact, list(reversed(mutations)))

    def _examine(self, stmt: cst.BaseStatement, name: str, site: Site,
                 mutations: list[_Mutation]) -> object:
        """Look at one earlier statement: a binding of ``name``, a mutation, or nothing."""
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in reversed(stmt.body):
                outcome = self._examine_small(small, name, site, mutations)
                if outcome is not None:
                    return outcome
            return None
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return _STOP if stmt.name.value == name else None
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                if item.asname is not None and name in set(target_names(item.asname.name)):
                    return _STOP
            body = _body_of(stmt)
            for index in range(len(body) - 1, -1, -1):
                inner = Site(site.scope, site.frames + (Frame(body, index, stmt),))
                outcome = self._examine(body[index], name, inner, mutations)
                if outcome is not None:
                    return outcome
            return None
        # if / for / while / try / match: no flow merging
        if any(b.name == name for b in statement_bindings(stmt)):
            return _STOP
        probe: list[_Mutation] = []
        self._mutations_inside(stmt, name, probe, site)
        if probe:
            # on some paths only: what they set is not certain, what they keep is
            dtype_unknown = any(m.dtype_unknown for m in probe)
            keeps = all(m.keeps_true or m.requires_grad is True for m in probe)
            mutations.append(_Mutation(None, dtype_unknown=dtype_unknown, keeps_true=keeps))
        return None

    def _mutations_inside(self, stmt: cst.BaseStatement, name: str, found: list[_Mutation],
                          site: Site) -> None:
        """The mutations of ``name`` anywhere in a compound statement (same scope)."""
        for line in _simple_lines([stmt]):
            for small in line.body:
                self._mutation_of(small, name, found, site)

    def _examine_small(self, small: cst.BaseSmallStatement, name: str, site: Site,
                       mutations: list[_Mutation]) -> object:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                tgt = target.target
                if isinstance(tgt, cst.Name) and tgt.value == name:
                    return _Bound(small.value, site)
                if isinstance(tgt, (cst.Tuple, cst.List)) and name in set(target_names(tgt)):
                    return self._unpacked(tgt, small.value, name, site)
        elif isinstance(small, cst.AnnAssign):
            if isinstance(small.target, cst.Name) and small.target.value == name:
                return _Bound(small.value, site) if small.value is not None else None
        elif isinstance(small, (cst.AugAssign, cst.Del)):
            if name in set(target_names(small.target)):
                return _STOP
        elif isinstance(small, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)):
            for binding in statement_bindings(cst.SimpleStatementLine(body=[small])):
                if binding.name == name:
                    return _STOP
        self._mutation_of(small, name, mutations, site)
        return None

    def _unpacked(self, target: cst.Tuple | cst.List, value: cst.BaseExpression, name: str,
                  site: Site) -> object:
        if not isinstance(value, (cst.Tuple, cst.List)):
            return _STOP
        names = target.elements
        if len(names) != len(value.elements) or any(
                isinstance(e, cst.StarredElement) for e in (*names, *value.elements)):
            return _STOP
        for position, element in enumerate(names):
            if isinstance(element.value, cst.Name) and element.value.value == name:
                return _Bound(value, site, position)
        return _STOP

    def _mutation_of(self, small: cst.BaseSmallStatement, name: str,
                     mutations: list[_Mutation], site: Site | None) -> None:
        """Record how ``small`` changes the tensor bound to ``name`` (in place)."""
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            func = call.func
            if isinstance(func, cst.Attribute) and _is_name(func.value, name):
                method = func.attr.value
                if method == "requires_grad_":
                    mutations.append(_Mutation(_bool_argument(call, "requires_grad", True)))
                    return
                if method == "detach_":
                    mutations.append(_Mutation(False))
                    return
                if method in ("set_", "type_"):
                    mutations.append(_Mutation(None, dtype_unknown=True))
                    return
        if isinstance(small, cst.Assign):
            for target in small.targets:
                tgt = target.target
                if isinstance(tgt, cst.Attribute) and _is_name(tgt.value, name):
                    if tgt.attr.value == "requires_grad":
                        value = _literal_bool(small.value)
                        mutations.append(_Mutation(value))
                    elif tgt.attr.value == "data":
                        mutations.append(_Mutation(None, dtype_unknown=True))
        # handing the tensor to unknown code: it may call `requires_grad_()` on it
        for call in _calls_receiving(small, name):
            if site is None or not self._is_harmless_call(call, site):
                mutations.append(_Mutation(None, keeps_true=True))
                return

    def _is_harmless_call(self, call: cst.Call, site: Site) -> bool:
        qualified = self.qualified(call.func, site)
        if qualified is not None and qualified.split(".")[0] == "torch":
            return True  # torch functions never change an argument's requires_grad
        builtin = self.builtin_name(call.func, site)
        if builtin in _PURE_BUILTINS:
            return True
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value.startswith("assert"):
            return True  # unittest assertions
        return False

    # expressions -------------------------------------------------------------------
    def _attribute_fact(self, expr: cst.Attribute, site: Site, depth: int) -> Fact:
        qualified = self.qualified(expr, site)
        if qualified in torch_api.DTYPES:
            return DtypeFact(torch_api.DTYPES[qualified])
        if qualified is not None:
            return UNKNOWN
        attr = expr.attr.value
        if attr in ("data", "T", "mT", "H", "mH"):
            base = self.fact(expr.value, site, depth + 1)
            if isinstance(base, TensorFact):
                if attr == "data":
                    return TensorFact(base.dtype, False, base.dtype_origin, None, base.default_dtype)
                return self._transferred(transfer.METHODS["t"], [base], [], expr, site)
        return UNKNOWN

    def _call_fact(self, call: cst.Call, site: Site, depth: int) -> Fact:
        qualified = self.qualified(call.func, site)
        if qualified is not None:
            return self._torch_call_fact(qualified, call, site, depth)
        builtin = self.builtin_name(call.func, site)
        if builtin in ("tuple", "list") and len(call.args) == 1 and not call.args[0].star:
            argument = call.args[0].value
            if isinstance(argument, cst.GeneratorExp):
                return SequenceFact(builtin, self._mapped(argument, site, depth))
            inner = self.fact(argument, site, depth + 1)
            if isinstance(inner, SequenceFact):
                return SequenceFact(builtin, inner.elements, inner.node)
            if isinstance(inner, OpaqueFact) and inner.kind == "generator":
                return SequenceFact(builtin, None)
            return UNKNOWN
        if isinstance(call.func, cst.Attribute):
            receiver = self.fact(call.func.value, site, depth + 1)
            if isinstance(receiver, TensorFact):
                return self._method_fact(receiver, call, site, depth)
            if isinstance(receiver, UnknownFact) and call.func.attr.value in _TENSOR_ONLY_CASTS:
                # `load(a).double()`: whatever `load` returns, a cast decides the dtype
                return self._method_fact(TensorFact(None, None), call, site, depth)
        return self.callees.result(call, site, depth)

    # operators -----------------------------------------------------------------------
    def _binary_fact(self, expr: cst.BinaryOperation, site: Site, depth: int) -> Fact:
        operator = type(expr.operator).__name__
        if operator not in transfer.BINARY_OPERATORS:
            return UNKNOWN
        tensors: list[TensorFact] = []
        numbers: list[str] = []
        for operand in (expr.left, expr.right):
            fact = self.fact(operand, site, depth + 1)
            if isinstance(fact, TensorFact):
                tensors.append(fact)
            elif isinstance(fact, OpaqueFact) and fact.kind in ("number", "bool"):
                kind = _literal_kind(operand) or ("float" if isinstance(fact.value, float) else None)
                if kind is None:
                    return UNKNOWN
                numbers.append(kind)
            else:
                return UNKNOWN
        if not tensors:
            return UNKNOWN
        division = operator == "Divide"
        return self._transferred(transfer.Transfer(transfer.PROMOTE, 1, true_division=division),
                                 tensors, numbers, expr, site)

    def _subscript_fact(self, expr: cst.Subscript, site: Site, depth: int) -> Fact:
        base = self.fact(expr.value, site, depth + 1)
        if isinstance(base, TensorFact):
            return self._transferred(transfer.METHODS["select"], [base], [], expr, site)
        if isinstance(base, SequenceFact) and base.elements is not None and len(expr.slice) == 1:
            index = expr.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, (cst.Integer, cst.UnaryOperation)):
                value = self.fact(index.value, site, depth + 1)
                if isinstance(value, OpaqueFact) and isinstance(value.value, int):
                    if -len(base.elements) <= value.value < len(base.elements):
                        return base.elements[value.value]
        return UNKNOWN

    def _mapped(self, comprehension: cst.GeneratorExp | cst.ListComp, site: Site,
                depth: int) -> tuple[Fact, ...] | None:
        """``(f(t) for t in seq)`` over a known sequence: the facts of each ``f(t)``."""
        clause = comprehension.for_in
        if clause.inner_for_in is not None or clause.ifs or clause.asynchronous is not None or \
                not isinstance(clause.target, cst.Name):
            return None
        source = self.fact(clause.iter, site, depth + 1)
        if not isinstance(source, SequenceFact) or source.elements is None:
            return None
        key = (id(site.scope.node), clause.target.value)
        saved = self._comprehension.get(key)
        results = []
        try:
            for element in source.elements:
                self._comprehension[key] = element
                results.append(_without_origins(self.fact(comprehension.elt, site, depth + 1)))
        finally:
            if saved is None:
                self._comprehension.pop(key, None)
            else:
                self._comprehension[key] = saved
        return tuple(results)

    def _transferred(self, rule: transfer.Transfer, tensors: Sequence[TensorFact],
                     numbers: list[str], expr: cst.BaseExpression, site: Site,
                     others: Sequence[bool | None] = ()) -> TensorFact:
        """The result of an operation on ``tensors`` (the receiver first) and ``numbers``;
        ``others``: requires_grad of further arguments that may be tensors."""
        dtypes = [t.dtype for t in tensors]
        dtype = transfer.result_dtype(rule, dtypes, numbers, self.context.default_dtype)
        grads = [t.requires_grad for t in tensors] + list(others)
        grad = transfer.result_requires_grad(rule, grads, grad_mode_disabled(site, self))
        receiver = tensors[0]
        same = dtype is not None and all(t.dtype == dtype for t in tensors)
        origin = receiver.dtype_origin if same and len(tensors) == 1 else None
        default = same and all(t.default_dtype for t in tensors)
        return TensorFact(dtype, grad, origin, Origin("expression", expr, site), default)

    def _torch_call_fact(self, qualified: str, call: cst.Call, site: Site, depth: int) -> Fact:
        if qualified in torch_api.PARAMETER or qualified in torch_api.VARIABLE:
            data = _argument(call, 0, "data")
            inner = self.fact(data, site, depth + 1) if data is not None else UNKNOWN
            default = qualified in torch_api.PARAMETER
            grad = _bool_argument(call, "requires_grad", default, position=1)
            if isinstance(inner, TensorFact):
                return TensorFact(inner.dtype, grad, inner.dtype_origin, None, inner.default_dtype)
            return UNKNOWN
        if qualified == "torch.device":
            return OpaqueFact("device")
        if qualified in transfer.FUNCTIONS:
            return self._function_fact(transfer.FUNCTIONS[qualified], call, site, depth)
        if qualified in transfer.SEQUENCE_FUNCTIONS:
            return self._sequence_function_fact(call, site, depth)
        if qualified == "torch.from_numpy":
            return TensorFact(None, False, None, Origin("expression", call, site))
        factory = _FACTORY_KINDS.get(qualified)
        if factory is None:
            if qualified in torch_api.LEGACY_CONSTRUCTORS:
                fixed = torch_api.LEGACY_CONSTRUCTORS[qualified]
                dtype = fixed if fixed is not None else self.context.default_dtype
                return TensorFact(dtype, False, None, Origin("expression", call, site),
                                  default_dtype=fixed is None)
            return UNKNOWN
        grad = _bool_argument(call, "requires_grad", False)
        dtype_arg = _keyword(call, "dtype")
        default = False
        if dtype_arg is not None and not _is_none(dtype_arg):
            dtype_fact = self.fact(dtype_arg, site, depth + 1)
            dtype = dtype_fact.dtype if isinstance(dtype_fact, DtypeFact) else None
        elif factory == "default":
            dtype, default = self.context.default_dtype, True
        elif factory == "integer":
            dtype = torch_api.INTEGER_FACTORIES[qualified]
        elif factory == "like":
            source = _argument(call, 0, "input")
            source_fact = self.fact(source, site, depth + 1) if source is not None else UNKNOWN
            dtype = source_fact.dtype if isinstance(source_fact, TensorFact) else None
            default = isinstance(source_fact, TensorFact) and source_fact.default_dtype
        else:
            dtype, default = self._inferred_dtype(qualified, call)
        origin = Origin("factory", call, site)
        return TensorFact(dtype, grad, origin, origin, default)

    def _inferred_dtype(self, qualified: str, call: cst.Call) -> tuple[str | None, bool]:
        if qualified == "torch.tensor":
            data = _argument(call, 0, "data")
            kind = _literal_kind(data) if data is not None else None
        elif qualified == "torch.full":
            value = _argument(call, 1, "fill_value")
            kind = _literal_kind(value) if value is not None else None
        elif qualified == "torch.range":
            kind = "float"
        else:  # arange
            kinds = [_literal_kind(a.value) for a in call.args if a.keyword is None]
            if not kinds or None in kinds:
                kind = None
            else:
                kind = max(kinds, key=_KIND_ORDER.index)
        default = self.context.default_dtype
        if kind == "float":
            return default, True
        if kind == "int":
            return "int64", False
        if kind == "bool":
            return "bool", False
        if kind == "complex":
            if default == "float64":
                return "complex128", True
            return ("complex64", True) if default == "float32" else (None, False)
        return None, False

    def _method_fact(self, receiver: TensorFact, call: cst.Call, site: Site, depth: int) -> Fact:
        assert isinstance(call.func, cst.Attribute)
        method = call.func.attr.value
        grad = _cast_grad(receiver.requires_grad, grad_mode_disabled(site, self))
        expression = Origin("expression", call, site)
        if method in torch_api.CAST_METHODS and not call.args:
            return TensorFact(torch_api.CAST_METHODS[method], grad, Origin("cast", call, site),
                              expression)
        if method == "to":
            dtype, changed = self._to_dtype(receiver, call, site, depth)
            origin = Origin("to", call, site) if changed else receiver.dtype_origin
            return TensorFact(dtype, grad, origin, expression,
                              receiver.default_dtype and not changed)
        if method == "type":
            if not call.args:
                return OpaqueFact("string")
            target = call.args[0].value
            qualified = self.qualified(target, site)
            dtype = torch_api.DTYPES.get(qualified or "") or torch_api.TENSOR_TYPES.get(qualified or "")
            if dtype is None and isinstance(target, cst.SimpleString):
                dtype = torch_api.TENSOR_TYPE_STRINGS.get(str(target.evaluated_value))
            return TensorFact(dtype, grad, None, expression)
        if method == "requires_grad_":
            value = _bool_argument(call, "requires_grad", True)
            return TensorFact(receiver.dtype, value, receiver.dtype_origin, expression,
                              receiver.default_dtype)
        if method == "detach":
            return TensorFact(receiver.dtype, False, receiver.dtype_origin, expression,
                              receiver.default_dtype)
        if method in ("retain_grad", "mT", "T", "H", "mH"):
            return TensorFact(receiver.dtype, receiver.requires_grad, receiver.dtype_origin,
                              expression, receiver.default_dtype)
        rule = transfer.METHODS.get(method)
        if rule is None:
            return UNKNOWN
        return self._apply_rule(rule, receiver, call, site, depth)

    def _function_fact(self, rule: transfer.Transfer, call: cst.Call, site: Site, depth: int) -> Fact:
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return UNKNOWN
        receiver = self.fact(call.args[0].value, site, depth + 1)
        if not isinstance(receiver, TensorFact):
            return UNKNOWN
        return self._apply_rule(rule, receiver, call, site, depth, skip=1)

    def _apply_rule(self, rule: transfer.Transfer, receiver: TensorFact, call: cst.Call,
                    site: Site, depth: int, skip: int = 0) -> Fact:
        """A table operation: its operands are the first positional arguments after the
        receiver; any other argument that may be a tensor may carry requires_grad."""
        tensors = [receiver]
        numbers: list[str] = []
        others: list[bool | None] = []
        positional = 0
        for arg in call.args[skip:]:
            if arg.star:
                return UNKNOWN
            fact = self.fact(arg.value, site, depth + 1)
            operand = arg.keyword is None and positional < rule.operands
            if arg.keyword is None:
                positional += 1
            if isinstance(fact, TensorFact):
                (tensors.append(fact) if operand else others.append(fact.requires_grad))
            elif isinstance(fact, OpaqueFact) and fact.kind in ("number", "bool"):
                if operand:
                    kind = _literal_kind(arg.value) or (
                        "float" if isinstance(fact.value, float) else None)
                    if kind is None:
                        return UNKNOWN
                    numbers.append(kind)
            elif isinstance(fact, (OpaqueFact, DtypeFact)):
                continue
            elif isinstance(fact, SequenceFact) and not operand:
                continue  # sizes and dims
            else:
                if operand:
                    return UNKNOWN
                others.append(None)
        if positional < rule.operands:
            return UNKNOWN
        return self._transferred(rule, tensors, numbers, call, site, others)

    def _sequence_function_fact(self, call: cst.Call, site: Site, depth: int) -> Fact:
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return UNKNOWN
        sequence = self.fact(call.args[0].value, site, depth + 1)
        if not isinstance(sequence, SequenceFact) or not sequence.elements or \
                not all(isinstance(e, TensorFact) for e in sequence.elements):
            return UNKNOWN
        tensors = [e for e in sequence.elements if isinstance(e, TensorFact)]
        fact = self._transferred(transfer.Transfer(transfer.PROMOTE), tensors, [], call, site)
        return replace(fact, dtype_origin=None)

    def _to_dtype(self, receiver: TensorFact, call: cst.Call, site: Site,
                  depth: int) -> tuple[str | None, bool]:
        keyword = _keyword(call, "dtype")
        if keyword is not None:
            fact = self.fact(keyword, site, depth + 1)
            return (fact.dtype if isinstance(fact, DtypeFact) else None), True
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in positional):
            return None, True
        for arg in positional[:2]:
            fact = self.fact(arg.value, site, depth + 1)
            if isinstance(fact, DtypeFact):
                return fact.dtype, True
            if isinstance(fact, TensorFact):
                return fact.dtype, True
            if isinstance(fact, OpaqueFact) and fact.kind in ("string", "device"):
                continue
            return None, True
        return receiver.dtype, False


# -- helpers ------------------------------------------------------------------------------
_FACTORY_KINDS: dict[str, str] = {
    **{name: "default" for name in torch_api.DEFAULT_FLOAT_FACTORIES},
    **{name: "inferred" for name in torch_api.INFERRED_FACTORIES},
    **{name: "like" for name in torch_api.LIKE_FACTORIES},
    **{name: "integer" for name in torch_api.INTEGER_FACTORIES},
}
_KIND_ORDER = ["bool", "int", "float", "complex"]


_TENSOR_ONLY_CASTS = frozenset({"double", "float", "half", "bfloat16", "cdouble", "cfloat"})


def _number(node: cst.BaseExpression) -> object:
    try:
        if isinstance(node, cst.Integer):
            return int(node.value.replace("_", ""), 0)
        if isinstance(node, cst.Float):
            return float(node.value.replace("_", ""))
    except ValueError:
        return None
    return None


def without_origins(fact: Fact) -> Fact:
    """The fact without places to edit (a value from another function or module)."""
    if isinstance(fact, TensorFact):
        return replace(fact, dtype_origin=None, grad_origin=None)
    if isinstance(fact, SequenceFact) and fact.elements is not None:
        return SequenceFact(fact.kind, tuple(without_origins(e) for e in fact.elements), None)
    return fact


_without_origins = without_origins


def merge_facts(facts: Sequence[Fact]) -> Fact:
    """What is certain about a value that is one of ``facts``."""
    if not facts:
        return UNKNOWN
    first = facts[0]
    if all(f == first for f in facts):
        return first
    if all(isinstance(f, TensorFact) for f in facts):
        tensors = [f for f in facts if isinstance(f, TensorFact)]
        dtypes = {t.dtype for t in tensors}
        grads = {t.requires_grad for t in tensors}
        return TensorFact(dtypes.pop() if len(dtypes) == 1 else None,
                          grads.pop() if len(grads) == 1 else None, None, None,
                          all(t.default_dtype for t in tensors))
    if all(isinstance(f, OpaqueFact) and f.kind == first.kind for f in facts):  # type: ignore[union-attr]
        return OpaqueFact(first.kind)  # type: ignore[union-attr]
    return UNKNOWN


def _cast_grad(source: bool | None, disabled: bool | None) -> bool | None:
    """requires_grad after a cast (`.double()`, `.to(...)`): a cast that changes nothing
    returns the tensor itself, so under no_grad the result is only known when False."""
    if source is False or disabled is False:
        return source
    return None


_GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                       "torch.autograd.grad_mode.no_grad", "torch.autograd.inference_mode"})
_GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad"})
_GRAD_SET = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})


def grad_mode_disabled(site: Site, evaluator: "Evaluator | None" = None) -> bool | None:
    """Is grad mode off where ``site`` is? True inside ``with torch.no_grad():`` (or
    ``inference_mode()``, ``set_grad_enabled(False)``) and in functions decorated with
    them; False where it is certainly on; None when it cannot be told."""
    def verdict(expr: cst.BaseExpression, scope: Scope) -> bool | None | str:
        call = expr if isinstance(expr, cst.Call) else None
        func = call.func if call is not None else expr
        name = evaluator.qualified(func, Site(scope, ())) if evaluator is not None else None
        if name is None:
            text = _dotted(func)
            last = text.split(".")[-1] if text else ""
            name = {"no_grad": "torch.no_grad", "inference_mode": "torch.inference_mode",
                    "enable_grad": "torch.enable_grad",
                    "set_grad_enabled": "torch.set_grad_enabled"}.get(last)
        if name in _GRAD_OFF:
            if call is not None and call.args:
                flag = _literal_bool(call.args[0].value)
                return None if flag is None else flag
            return True
        if name in _GRAD_ON:
            return False
        if name in _GRAD_SET:
            flag = _literal_bool(call.args[0].value) if call is not None and call.args else None
            return None if flag is None else not flag
        return "unrelated"

    state: bool | None = False
    # decorators of the enclosing functions, outermost first
    scopes = [scope for scope in site.scope.chain() if isinstance(scope.node, cst.FunctionDef)]
    for scope in reversed(scopes):
        for decorator in scope.node.decorators:  # type: ignore[union-attr]
            found = verdict(decorator.decorator, scope.parent or scope)
            if found != "unrelated":
                state = found  # type: ignore[assignment]
    for frame in site.frames:
        owner = frame.owner
        if isinstance(owner, cst.With):
            for item in owner.items:
                found = verdict(item.item, site.scope)
                if found != "unrelated":
                    state = found  # type: ignore[assignment]
    return state


def _dotted(node: cst.BaseExpression) -> str | None:
    from .names import dotted_name

    return dotted_name(node)


def _apply(fact: Fact, mutations: Sequence[_Mutation]) -> Fact:
    if not mutations or not isinstance(fact, TensorFact):
        return fact
    for mutation in mutations:
        if not (mutation.keeps_true and fact.requires_grad is True):
            fact = replace(fact, requires_grad=mutation.requires_grad)
        if mutation.dtype_unknown:
            fact = replace(fact, dtype=None, dtype_origin=None)
    return fact


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _argument(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    keyword = _keyword(call, name)
    if keyword is not None:
        return keyword
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional[: position + 1]):
        return None
    if position < len(positional):
        return positional[position].value
    return None


def _literal_bool(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _bool_argument(call: cst.Call, name: str, default: bool, position: int | None = None
                   ) -> bool | None:
    node = _keyword(call, name)
    if node is None and position is None and name == "requires_grad" and call.args:
        # `x.requires_grad_(False)`: positional form of the method
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            first = call.args[0]
            node = first.value if first.keyword is None else None
    if node is None and position is not None:
        node = _argument(call, position, name)
    if node is None:
        return default
    return _literal_bool(node)


def _literal_kind(node: cst.BaseExpression | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, cst.Integer):
        return "int"
    if isinstance(node, cst.Float):
        return "float"
    if isinstance(node, cst.Imaginary):
        return "complex"
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return "bool"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _literal_kind(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        if not node.elements:
            return "float"
        kinds = [_literal_kind(e.value) for e in node.elements]
        if None in kinds:
            return None
        return max(kinds, key=_KIND_ORDER.index)  # type: ignore[arg-type]
    return None


def _body_of(stmt: cst.CSTNode) -> Sequence[cst.BaseStatement]:
    from .names import body_statements

    body = getattr(stmt, "body", None)
    return body_statements(body) if isinstance(body, cst.BaseSuite) else ()


def _simple_lines(statements: Sequence[cst.BaseStatement]):
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            for body, _ in compound_bodies(stmt):
                yield from _simple_lines(body)


class _ReceivingCalls(cst.CSTVisitor):
    def __init__(self, name: str):
        self.name = name
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            if _mentions(arg.value, self.name):
                self.calls.append(node)
                break

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _mentions(node: cst.BaseExpression, name: str) -> bool:
    if isinstance(node, cst.Name):
        return node.value == name
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return any(_mentions(e.value, name) for e in node.elements)
    if isinstance(node, cst.StarredElement):
        return _mentions(node.value, name)
    return False


def _calls_receiving(small: cst.BaseSmallStatement, name: str) -> list[cst.Call]:
    visitor = _ReceivingCalls(name)
    small.visit(visitor)
    return visitor.calls
