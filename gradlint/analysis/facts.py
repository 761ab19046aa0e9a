"""What can be known, without running anything, about the values given to gradcheck.

The evaluator answers "which dtype does this tensor have, does it require grad, and
where in the source was that decided?" for an expression at a site. It follows local
assignments backwards through straight-line code, and gives up ("unknown") as soon as a
branch, loop, call or anything else could have changed the answer: gradlint only reports
what it knows.
"""

from __future__ import annotations

import bisect
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterator, Sequence

import libcst as cst

from . import memos, torch_api, transfer, traverse
from .callees import Callees
from .expressions import TENSOR_ONLY_CASTS, Expressions, bool_argument, literal_bool, literal_number
from .fact_types import (UNKNOWN, DtypeFact, Fact, OpaqueFact, Origin, SequenceFact,  # noqa: F401
                         TensorFact, UnknownFact, merge_facts, without_origins)
from .held_values import attribute_targets, field_value, is_test_case, set_up_value
from .names import BindingKind, compound_bodies, statement_bindings, target_names
from .scopes import Frame, ModuleContext, Scope, Site, find_site
from .traverse import visit
from .tuple_classes import named_tuple_class, plain_tuple_subclass

if TYPE_CHECKING:
    from .conftest_fixtures import FixtureSource


_MAX_DEPTH = 24
_MAX_RANGE = 64  # longer ranges are iterated, not spread into gradcheck calls
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
    unpacked: int | None = None  # unpacking `a, b = pair` (not a literal): how many names


@dataclass(frozen=True)
class _Mutation:
    requires_grad: bool | None  # the new value; None: unknown
    dtype_unknown: bool = False
    # handed to unknown code: it may call `requires_grad_()`, but nothing turns a tensor
    # that requires grad into one that does not, and no call changes a tensor's dtype
    keeps_true: bool = False


class _Unknown:
    pass


@dataclass(frozen=True, eq=False)
class _Function:
    """A name bound by a ``def`` in a function body."""
    node: cst.FunctionDef
    site: Site


_STOP = _Unknown()


@dataclass(frozen=True)
class _Branches:
    """``name`` is bound in a branch of an ``if``: after it, its value is its value at the
    end of one of the branches that fall through (``sites``), or, when no ``else`` binds
    it, its value before the ``if`` (``before``)."""
    sites: tuple[Site, ...]
    before: Site | None


_MAX_BRANCH_DEPTH = 6  # nested merges: keeps `if` after `if` after `if` from exploding


_TOP_FACTS: dict = memos.memo(memos.NEAR_ENTRIES)  # (ids of expr, site, evaluator) -> (expr, site, evaluator, fact)


class Evaluator(Expressions):
    def __init__(self, context: ModuleContext, fixtures: "FixtureSource | None" = None):
        self.context = context
        self.fixtures = fixtures  # pytest fixtures of conftest.py files above the module
        # values of parameters, by (function node id, name): a helper's arguments, a
        # pytest fixture's value, a parametrize case
        self.parameters: dict[tuple[int, str], Fact] = {}
        # comprehension variables being evaluated, by (scope node id, name)
        self._comprehension: dict[tuple[int, str], Fact] = {}
        self._active: set[int] = set()  # helpers being evaluated (recursion guard)
        self.callees = Callees(self)

    # public ------------------------------------------------------------------------
    def fact(self, expr: cst.BaseExpression, site: Site, depth: int = 0) -> Fact:
        if depth or self.parameters or self._comprehension or self._active:
            return self._fact(expr, site, depth)
        # Rules ask the facts of the same gradcheck inputs and arguments again and again.
        # Evaluated from the top (depth 0) with nothing bound, a fact reads only ``expr``,
        # ``site`` and this evaluator (its module context and fixtures, set before any
        # evaluation): it is remembered for the lint under all three, which the entry
        # keeps so that their ids stay theirs. Facts are frozen.
        key = (id(expr), id(site), id(self))
        known = _TOP_FACTS.get(key)
        if known is not None and known[0] is expr and known[1] is site and known[2] is self:
            return known[3]
        found = self._fact(expr, site, 0)
        memos.make_room(_TOP_FACTS)
        _TOP_FACTS[key] = (expr, site, self, found)
        return found

    def _fact(self, expr: cst.BaseExpression, site: Site, depth: int) -> Fact:
        if depth > _MAX_DEPTH:
            return UNKNOWN
        node_type = type(expr)  # (every class below is final: `is` answers what isinstance would)
        if node_type is cst.Name:
            if expr.value == "None":
                return OpaqueFact("none")
            if expr.value in ("True", "False"):
                return OpaqueFact("bool", expr.value == "True")
            bound = self._comprehension.get((id(site.scope.node), expr.value))
            if bound is not None:
                return bound
            return self.name_fact(expr.value, site, depth + 1)
        if node_type in (cst.Integer, cst.Float, cst.Imaginary):
            return OpaqueFact("number", literal_number(expr))
        if node_type is cst.UnaryOperation and isinstance(
                expr.expression, (cst.Integer, cst.Float, cst.Imaginary)):
            value = literal_number(expr.expression)
            if isinstance(expr.operator, cst.Minus) and value is not None:
                value = -value  # type: ignore[operator]
            return OpaqueFact("number", value)
        if node_type in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
            return OpaqueFact("string")
        if node_type in (cst.Tuple, cst.List):
            kind = "tuple" if node_type is cst.Tuple else "list"
            if any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return SequenceFact(kind, None)
            return SequenceFact(kind, tuple(self.fact(e.value, site, depth + 1) for e in expr.elements),
                                expr)
        if node_type is cst.GeneratorExp:
            return OpaqueFact("generator")
        if node_type in (cst.Dict, cst.DictComp):
            return OpaqueFact("dict")
        if node_type in (cst.Set, cst.SetComp):
            return OpaqueFact("set")
        if node_type is cst.ListComp:
            return SequenceFact("list", self._mapped(expr, site, depth))
        if node_type is cst.Lambda:
            return OpaqueFact("callable")
        if node_type is cst.Attribute:
            return self._attribute_fact(expr, site, depth)
        if node_type is cst.Call:
            return self._call_fact(expr, site, depth)
        if node_type is cst.BinaryOperation:
            return self._binary_fact(expr, site, depth)
        if node_type is cst.UnaryOperation and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            operand = self.fact(expr.expression, site, depth + 1)
            if isinstance(operand, TensorFact):
                return self._transferred(transfer.METHODS["neg"], [operand], [], expr, site)
            return UNKNOWN
        if node_type is cst.Subscript:
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
            for index in _earlier_naming(frame.statements, frame.index, name):
                stmt = frame.statements[index]
                here = Site(site.scope, prefix + (Frame(frame.statements, index, frame.owner,
                                                        frame.handler),))
                outcome = self._examine(stmt, name, here, mutations)
                if outcome is _STOP:
                    return UNKNOWN
                if isinstance(outcome, _Bound):
                    return self._bound_fact(outcome, mutations, depth)
                if isinstance(outcome, _Function):
                    return OpaqueFact("callable", (outcome.node, outcome.site))
                if isinstance(outcome, _Branches):
                    return _apply(self._merged(name, outcome, depth), list(reversed(mutations)))
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
        for index in _later_naming(frame.statements, frame.index, name):
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
    def bound(self, function: cst.CSTNode, values: dict[str, Fact], loop: bool = False
              ) -> Iterator[None]:
        """Evaluate with ``function``'s parameters bound to ``values`` (a parametrize case),
        or with ``loop``, the names of a ``for`` loop in the scope of ``function``."""
        table = self._comprehension if loop else self.parameters
        saved = {name: table.get((id(function), name)) for name in values}
        for name, value in values.items():
            table[(id(function), name)] = value
        try:
            yield
        finally:
            for name, old in saved.items():
                if old is None:
                    table.pop((id(function), name), None)
                else:
                    table[(id(function), name)] = old

    def _parameter_fact(self, name: str, scope: Scope, depth: int) -> Fact:
        """A parameter's value: an argument of the helper call being followed, a pytest
        parametrize case, or a pytest fixture."""
        bound = self.parameters.get((id(scope.node), name))
        if bound is not None:
            return bound
        return self.callees.fixture(name, scope, depth)

    def _statement_site(self, scope: Scope, small: cst.CSTNode) -> Site | None:
        index = _lines_of_smalls(scope.statements).get(id(small))
        if index is not None:
            return Site(scope, (Frame(scope.statements, index),))
        # nested in a compound statement of that scope
        for stmt in _simple_lines(scope.statements):
            if any(s is small for s in stmt.body):
                return find_site(scope.statements, scope, stmt)
        return None

    def _merged(self, name: str, branches: _Branches, depth: int) -> Fact:
        if depth > _MAX_BRANCH_DEPTH or len(branches.sites) > 4:
            return UNKNOWN
        sites = list(branches.sites)
        if branches.before is not None and not _unbound_at(name, branches.before):
            sites.append(branches.before)
        facts = []
        for site in sites:
            fact = self.name_fact(name, site, depth + 1)
            if isinstance(fact, UnknownFact):
                return UNKNOWN
            facts.append(fact)
        return merge_facts(facts)

    def _bound_fact(self, bound: _Bound, mutations: list[_Mutation], depth: int) -> Fact:
        value = bound.value
        if bound.unpacked is not None:
            sequence = self.fact(value, bound.site, depth + 1)
            if not isinstance(sequence, SequenceFact) or sequence.elements is None or \
                    len(sequence.elements) != bound.unpacked or bound.element is None:
                return UNKNOWN
            return _apply(sequence.elements[bound.element], list(reversed(mutations)))
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
            if stmt.name.value != name:
                return None
            if isinstance(stmt, cst.FunctionDef) and site.scope.kind == "function":
                return _Function(stmt, site)  # a local function (a factory's `make`)
            return _STOP
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
        bound = any(b.name == name for b in statement_bindings(stmt))
        if bound and isinstance(stmt, cst.If):
            return _if_branches(stmt, site)
        # for / while / try / match: no flow merging
        if bound:
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
        names = target.elements
        if not isinstance(value, (cst.Tuple, cst.List)):
            # `x, y = pair`: an element of whatever sequence `pair` is known to be
            if any(isinstance(e, cst.StarredElement) for e in names):
                return _STOP
            for position, element in enumerate(names):
                if isinstance(element.value, cst.Name) and element.value.value == name:
                    return _Bound(value, site, position, len(names))
            return _STOP
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
        found: list[_Mutation] = []
        for call in _method_calls_on(small, name):  # `x.requires_grad_()`, anywhere
            method = call.func.attr.value  # type: ignore[attr-defined]
            if method == "requires_grad_":
                found.append(_Mutation(bool_argument(call, "requires_grad", True)))
            elif method == "detach_":
                found.append(_Mutation(False))
            elif method in ("set_", "type_"):
                found.append(_Mutation(None, dtype_unknown=True))
        if isinstance(small, cst.Assign):
            for target in small.targets:
                tgt = target.target
                if isinstance(tgt, cst.Attribute) and _is_name(tgt.value, name):
                    if tgt.attr.value == "requires_grad":
                        found.append(_Mutation(literal_bool(small.value)))
                    elif tgt.attr.value == "data":
                        found.append(_Mutation(None, dtype_unknown=True))
        # handing the tensor to unknown code as a statement of its own (`prepare(x)`): it
        # may call `requires_grad_()` on it. A call whose result is used (`y = f(x)`,
        # `assert close(f(x), y)`) is taken to compute something from x.
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                small.value in _calls_receiving(small, name) and \
                (site is None or not self._is_harmless_call(small.value, site)):
            found.append(_Mutation(None, keeps_true=True))
        mutations.extend(reversed(found))  # (the list is built backwards)

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
        found = self._class_constant(expr, site, depth)
        if isinstance(found, UnknownFact) and isinstance(expr.value, cst.Name):
            held = field_value(expr, site, self.context)  # `case.x` of a dataclass or NamedTuple
            if held is not None:
                return self.fact(held[0], held[1], depth + 1)
        return found

    def _class_constant(self, expr: cst.Attribute, site: Site, depth: int) -> Fact:
        """``self.dtype`` in a method, with ``dtype = torch.float64`` in the class body and
        no method assigning ``self.dtype``: a dtype or a number (tensors, which tests may
        change in place, are not followed); in a TestCase, what setUp assigns (see
        held_values.set_up_value)."""
        if not isinstance(expr.value, cst.Name):
            return UNKNOWN
        method = site.scope
        if method.kind != "function" or not isinstance(method.node, cst.FunctionDef):
            return UNKNOWN
        params = [p.name.value for p in method.node.params.params]
        owner = method.parent
        if not params or params[0] != expr.value.value or owner is None or owner.kind != "class":
            return UNKNOWN
        binding = owner.table.single_assignment(expr.attr.value)
        if binding is None and is_test_case(owner, self.context):
            held = set_up_value(expr, site, owner, self.context)  # `self.x` set in setUp
            return UNKNOWN if held is None else without_origins(self.fact(held[0], held[1], depth + 1))
        if binding is None or binding.value is None or \
                attribute_targets(owner.node, expr.attr.value):  # type: ignore[arg-type]
            return UNKNOWN
        binding_site = self._statement_site(owner, binding.node)
        if binding_site is None:
            return UNKNOWN
        fact = self.fact(binding.value, binding_site, depth + 1)
        return fact if isinstance(fact, (DtypeFact, OpaqueFact)) else UNKNOWN

    def _call_fact(self, call: cst.Call, site: Site, depth: int) -> Fact:
        qualified = self.qualified(call.func, site)
        if qualified is not None:
            return self._torch_call_fact(qualified, call, site, depth)
        builtin = self.builtin_name(call.func, site)
        if builtin is None and plain_tuple_subclass(call.func, self.context):
            builtin = "tuple"  # `class Inputs(tuple): pass`: a tuple to gradcheck too
        elif builtin is None and named_tuple_class(call.func, self.context):
            return OpaqueFact("namedtuple")  # not a tuple gradcheck can rebuild (tuple_classes)
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
        if builtin == "range":
            return self._range_fact(call, site, depth)
        if isinstance(call.func, cst.Attribute):
            receiver = self.fact(call.func.value, site, depth + 1)
            if isinstance(receiver, TensorFact):
                return self._method_fact(receiver, call, site, depth)
            if isinstance(receiver, UnknownFact) and call.func.attr.value in TENSOR_ONLY_CASTS:
                # `load(a).double()`: whatever `load` returns, a cast decides the dtype
                return self._method_fact(TensorFact(None, None), call, site, depth)
        return self.callees.result(call, site, depth)

    def _range_fact(self, call: cst.Call, site: Site, depth: int) -> Fact:
        """``range(2)``, ``range(1, n)`` with known integers: the numbers, so that a
        comprehension over it (``[torch.randn(3) for _ in range(2)]``) has known length."""
        bounds = []
        for arg in call.args:
            fact = self.fact(arg.value, site, depth + 1) if not arg.star and arg.keyword is None \
                else UNKNOWN
            if not (isinstance(fact, OpaqueFact) and type(fact.value) is int):
                return SequenceFact("range", None)
            bounds.append(fact.value)
        if not 1 <= len(bounds) <= 3 or (len(bounds) == 3 and bounds[2] == 0):
            return SequenceFact("range", None)
        numbers = range(*bounds)
        if len(numbers) > _MAX_RANGE:
            return SequenceFact("range", None)
        return SequenceFact("range", tuple(OpaqueFact("number", n) for n in numbers))

    # operators -----------------------------------------------------------------------


def _apply(fact: Fact, mutations: Sequence[_Mutation]) -> Fact:
    if not mutations or not isinstance(fact, TensorFact):
        return fact
    for mutation in mutations:
        if not (mutation.keeps_true and fact.requires_grad is True):
            fact = replace(fact, requires_grad=mutation.requires_grad)
        if mutation.dtype_unknown:
            fact = replace(fact, dtype=None, dtype_origin=None)
    return fact


def _if_branches(stmt: cst.If, site: Site) -> _Branches:
    """The ends of the branches of ``stmt`` (at ``site``) that fall through to what follows."""
    ends: list[Site] = []

    def add(owner: cst.CSTNode, body: Sequence[cst.BaseStatement]) -> None:
        if not _leaves(body):
            ends.append(Site(site.scope, site.frames + (Frame(body, len(body), owner),)))

    node: cst.If = stmt
    while True:
        add(node, _body_of(node))
        if isinstance(node.orelse, cst.If):  # elif
            node = node.orelse
            continue
        if isinstance(node.orelse, cst.Else):
            add(node.orelse, _body_of(node.orelse))
            return _Branches(tuple(ends), None)
        return _Branches(tuple(ends), site)


def _leaves(body: Sequence[cst.BaseStatement]) -> bool:
    """The statement list ends by leaving (return, raise, continue, break)."""
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(
        last.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _unbound_at(name: str, site: Site) -> bool:
    """Is the local ``name`` certainly unbound at ``site`` (so that no path through it
    reaches a later use)? Only in a function, outside loops and try statements, with no
    earlier statement binding it."""
    scope = site.scope
    bindings = scope.table.bindings.get(name, [])
    if scope.kind != "function" or not bindings or any(
            b.kind is BindingKind.PARAM or isinstance(b.node, (cst.Global, cst.Nonlocal))
            for b in bindings):
        return False
    for frame in site.frames:
        if frame.owner is not None and not isinstance(frame.owner, (cst.If, cst.Else)):
            return False
        if any(b.name == name for stmt in frame.statements[:frame.index]
               for b in statement_bindings(stmt)):
            return False
    return True


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


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


class _MethodCalls(cst.CSTVisitor):
    """``name.method(...)`` calls, grouped by ``name``."""

    def __init__(self) -> None:
        self.calls: dict[str, list[cst.Call]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            self.calls.setdefault(func.value.value, []).append(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _method_calls_on(small: cst.BaseSmallStatement, name: str) -> list[cst.Call]:
    """``name.method(...)`` calls anywhere in a small statement, in source order."""
    by_name = memos.recall(_METHOD_CALLS, id(small), small)
    if by_name is memos.MISSING:
        visitor = _MethodCalls()
        visit(small, visitor)
        by_name = visitor.calls
        memos.remember(_METHOD_CALLS, id(small), small, by_name)
    return list(by_name.get(name, ()))  # type: ignore[union-attr]


# id(small statement) -> (statement, {name: its method calls}): the facts of a name walk
# back over every statement before its use, once per name and per use. The calls depend
# on the statement alone (which never changes); all names are gathered in one visit.
_METHOD_CALLS: dict = memos.memo(memos.NEAR_ENTRIES)


def _calls_receiving(small: cst.BaseSmallStatement, name: str) -> list[cst.Call]:
    visitor = _ReceivingCalls(name)
    visit(small, visitor)
    return visitor.calls


# -- indexes of long statement lists, made once per lint ----------------------------------
# Looking a name up walks the statements between its use and its binding (and, for a
# module-level name, every statement after the binding, for mutations): in a module of
# thousands of statements, a walk per lookup was quadratic. Only statements holding a
# ``Name`` of it can bind or change it (``_examine`` finds nothing in the others), so the
# lookups visit those alone.
_INDEXED = 32  # shorter lists are walked whole
_NAMING: dict = memos.memo()  # id(statement list) -> (list, {name: [positions]})
_SMALLS: dict = memos.memo()  # id(statement list) -> (list, {id(small statement): position})
_NAME = frozenset({cst.Name})


def _naming(statements: Sequence[cst.BaseStatement]) -> dict[str, list[int]] | None:
    """Name -> the positions of the statements holding a ``Name`` of it (of a ``def`` or a
    ``class``, only its own name: all ``_examine`` reads of one). None for short lists and
    in the reference run."""
    if len(statements) < _INDEXED or traverse.reference_run():
        return None
    known = memos.recall(_NAMING, id(statements), statements)
    if known is not memos.MISSING:
        return known  # type: ignore[return-value]
    found: dict[str, list[int]] = {}
    for position, stmt in enumerate(statements):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names = [stmt.name]
        else:
            names = traverse.collect(stmt, _NAME, frozenset()) or []
        for node in names:
            positions = found.setdefault(node.value, [])  # type: ignore[attr-defined]
            if not positions or positions[-1] != position:
                positions.append(position)
    memos.remember(_NAMING, id(statements), statements, found)
    return found


def _earlier_naming(statements: Sequence[cst.BaseStatement], before: int, name: str) -> Iterator[int]:
    """The positions before ``before``, nearest first, where ``_examine`` may find
    something about ``name``."""
    index = _naming(statements)
    if index is None:
        return iter(range(before - 1, -1, -1))
    positions = index.get(name, ())
    return reversed(positions[:bisect.bisect_left(positions, before)])


def _later_naming(statements: Sequence[cst.BaseStatement], after: int, name: str) -> Iterator[int]:
    """The positions after ``after``, in order, where ``_examine`` may find something."""
    index = _naming(statements)
    if index is None:
        return iter(range(after + 1, len(statements)))
    positions = index.get(name, ())
    return iter(positions[bisect.bisect_right(positions, after):])


def _lines_of_smalls(statements: Sequence[cst.BaseStatement]) -> dict[int, int]:
    """id(small statement) -> the position of its line, for the simple lines of a list."""
    known = memos.recall(_SMALLS, id(statements), statements)
    if known is memos.MISSING:
        known = {id(small): position for position, stmt in enumerate(statements)
                 if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body}
        memos.remember(_SMALLS, id(statements), statements, known)
    return known  # type: ignore[return-value]
