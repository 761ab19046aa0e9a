"""Cases a check runs in, for the static analysis: the ``@pytest.mark.parametrize`` cases
of a test function (and the ``params`` of the module's fixtures it takes) and the
iterations of a ``for`` loop over a literal tuple, with values.

(``parametrize.py`` gives the runner the same decorators as source text to evaluate.)
Each case binds the test's parameters to the values of one entry, so that the analysis
can be run once per case (``Evaluator.bound``). Entries that carry marks
(``pytest.param(..., marks=...)``, an xfail or a skip) are left out, and so is a
parameter that the test tests itself (``if dtype == torch.float32: pytest.skip()``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from .names import dotted_name, parameter_names
from .scopes import Scope, Site, find_site, statement_site
from .traverse import visit

if TYPE_CHECKING:
    from .facts import Evaluator, Fact

_MAX_CASES = 64


@dataclass(frozen=True)
class Case:
    function: cst.CSTNode  # the test function (or, for a loop, the node of its scope)
    site: Site  # where the function's `def` (or the `for` statement) is
    values: dict[str, "Fact"]
    entries: dict[str, cst.BaseExpression]  # the parametrize entry each value comes from
    loop: bool = False  # the values of a `for` loop's variables, not parameters

    @property
    def origin(self) -> str:
        return "loop" if self.loop else "parametrize"


def test_function_scope(site: Site) -> Scope | None:
    scope: Scope | None = site.scope
    while scope is not None and not (scope.kind == "function" and
                                     isinstance(scope.node, cst.FunctionDef)):
        scope = scope.parent
    return scope


def cases(site: Site, evaluator: "Evaluator") -> list[Case]:
    """The parametrize cases of the test function ``site`` is in (none when it has none)."""
    scope = test_function_scope(site)
    if scope is None or scope.parent is None:
        return []
    node = scope.node
    assert isinstance(node, cst.FunctionDef)
    params = set(parameter_names(node.params))
    fixtures = [name for name in params if _params_fixture(name, evaluator) is not None]
    if not node.decorators and not fixtures:
        return []
    outer = _def_site(scope, evaluator)
    if outer is None:
        return []
    tested = _tested_names(node)
    axes: list[list[tuple[dict[str, Fact], dict[str, cst.BaseExpression]]]] = []
    for decorator in node.decorators:
        axis = _axis(decorator, outer, evaluator, params)
        if axis is None:
            continue
        axes.append(axis)
        params -= {name for part, _ in axis for name in part}
    for name in fixtures:
        axis = _fixture_axis(name, evaluator, outer) if name in params else None
        if axis is not None:
            axes.append(axis)
    if not axes:
        return []
    found = []
    for combination in itertools.islice(itertools.product(*axes), _MAX_CASES + 1):
        values: dict[str, Fact] = {}
        entries: dict[str, cst.BaseExpression] = {}
        for part_values, part_entries in combination:
            values.update(part_values)
            entries.update(part_entries)
        values = {k: v for k, v in values.items() if k not in tested}
        if values:
            found.append(Case(node, outer, values, {k: entries[k] for k in values}))
    return found if len(found) <= _MAX_CASES else []


def loop_cases(site: Site, evaluator: "Evaluator") -> list[Case]:
    """The iterations of the innermost enclosing ``for`` over a literal tuple or list
    (``for dtype in (torch.float32, torch.float64):``), one case per element."""
    for level in range(len(site.frames) - 1, -1, -1):
        owner = site.frames[level].owner
        if not isinstance(owner, cst.For):
            continue
        names = _target_names(owner.target)
        values = owner.iter
        if isinstance(values, cst.Name):
            values = _module_literal(values.value, evaluator) or values
        if names is None or not isinstance(values, (cst.Tuple, cst.List)) or \
                len(values.elements) > _MAX_CASES:
            return []
        tested = _tested_names(owner)
        outer = Site(site.scope, site.frames[:level + 1])
        found = []
        for element in values.elements:
            if isinstance(element, cst.StarredElement):
                return []
            parts = [element.value] if len(names) == 1 else _split(element.value, len(names))
            if parts is None:
                return []
            facts = {n: evaluator.fact(p, outer) for n, p in zip(names, parts) if n not in tested}
            if facts:
                found.append(Case(site.scope.node, outer, facts,  # type: ignore[arg-type]
                                  {n: p for n, p in zip(names, parts) if n in facts}, loop=True))
        return found
    return []


def _target_names(target: cst.BaseExpression) -> list[str] | None:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)) and all(
            isinstance(e.value, cst.Name) for e in target.elements):
        return [e.value.value for e in target.elements]  # type: ignore[attr-defined]
    return None


def _axis(decorator: cst.Decorator, site: Site, evaluator: "Evaluator", params: set[str]
          ) -> list[tuple[dict, dict]] | None:
    call = decorator.decorator
    if not isinstance(call, cst.Call):
        return None
    name = evaluator.qualified(call.func, site) or dotted_name(call.func) or ""
    if not name.endswith("mark.parametrize") or len(call.args) < 2:
        return None
    names_arg, values_arg = call.args[0], call.args[1]
    if names_arg.keyword is not None or values_arg.keyword is not None:
        return None
    if any(a.keyword is not None and a.keyword.value == "indirect" for a in call.args):
        return None  # the values go to fixtures of those names, not to the test
    names = _names(names_arg.value)
    if not names or not set(names) <= params:
        return None
    values = values_arg.value
    if isinstance(values, cst.Name):
        resolved = _module_literal(values.value, evaluator)
        if resolved is None:
            return None
        values = resolved
    if not isinstance(values, (cst.List, cst.Tuple)):
        return None
    axis = []
    for element in values.elements:
        if isinstance(element, cst.StarredElement):
            return None
        entry = _entry(element.value)
        if entry is None:
            continue  # marked: skipped or expected to fail
        parts = [entry] if len(names) == 1 else _split(entry, len(names))
        if parts is None:
            return None
        facts = {n: evaluator.fact(p, site) for n, p in zip(names, parts)}
        axis.append((facts, dict(zip(names, parts))))
    return axis or None


def _params_fixture(name: str, evaluator: "Evaluator") -> cst.BaseExpression | None:
    """The ``params=`` list of a module-level ``@pytest.fixture(params=[...])`` named
    ``name`` that returns ``request.param`` as it is."""
    bindings = evaluator.context.scope.table.bindings.get(name)
    if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, cst.FunctionDef):
        return None
    function = bindings[0].node
    request = parameter_names(function.params)
    body = function.body.body
    if len(request) != 1 or len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
        return None
    returned = body[0].body[0]
    if not (isinstance(returned, cst.Return) and isinstance(returned.value, cst.Attribute) and
            returned.value.attr.value == "param" and isinstance(returned.value.value, cst.Name)
            and returned.value.value.value == request[0]):
        return None
    for decorator in function.decorators:
        call = decorator.decorator
        if isinstance(call, cst.Call) and (dotted_name(call.func) or "").endswith("fixture"):
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == "params":
                    values = arg.value
                    if isinstance(values, cst.Name):
                        values = _module_literal(values.value, evaluator) or values
                    return values if isinstance(values, (cst.List, cst.Tuple)) else None
    return None


def _fixture_axis(name: str, evaluator: "Evaluator", site: Site
                  ) -> list[tuple[dict, dict]] | None:
    """A fixture's ``params`` are cases of the tests that take it."""
    values = _params_fixture(name, evaluator)
    if values is None or any(isinstance(e, cst.StarredElement) for e in values.elements):
        return None
    axis = []
    for element in values.elements:
        entry = _entry(element.value)
        if entry is not None:
            axis.append(({name: evaluator.fact(entry, site)}, {name: entry}))
    return axis or None


def _names(node: cst.BaseExpression) -> list[str] | None:
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        if not isinstance(text, str):
            return None
        return [n.strip() for n in text.split(",") if n.strip()]
    if isinstance(node, (cst.List, cst.Tuple)):
        names = []
        for element in node.elements:
            if not isinstance(element.value, cst.SimpleString):
                return None
            names.append(str(element.value.evaluated_value).strip())
        return names
    return None


def _entry(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The value of an entry; None for a `pytest.param(..., marks=...)`."""
    if isinstance(node, cst.Call) and (dotted_name(node.func) or "").endswith("param"):
        if any(a.keyword is not None and a.keyword.value == "marks" for a in node.args):
            return None
        values = [a.value for a in node.args if a.keyword is None]
        if len(values) == 1:
            return values[0]
        return cst.Tuple([cst.Element(v) for v in values])
    return node


def _split(entry: cst.BaseExpression, count: int) -> list[cst.BaseExpression] | None:
    if isinstance(entry, (cst.Tuple, cst.List)) and len(entry.elements) == count and \
            not any(isinstance(e, cst.StarredElement) for e in entry.elements):
        return [e.value for e in entry.elements]
    return None


def _module_literal(name: str, evaluator: "Evaluator") -> cst.BaseExpression | None:
    binding = evaluator.context.scope.table.single_assignment(name)
    if binding is None or not isinstance(binding.value, (cst.List, cst.Tuple)):
        return None
    return binding.value


def _def_site(scope: Scope, evaluator: "Evaluator") -> Site | None:
    """Where the test function's `def` statement (and its decorators) is."""
    parent = scope.parent
    assert parent is not None
    if parent.kind == "module":
        context = evaluator.context
        return statement_site(context.statements, context.scope, scope.node)  # type: ignore[arg-type]
    return find_site(parent.statements, parent, scope.node)  # type: ignore[arg-type]


def _tested_names(node: cst.FunctionDef | cst.For) -> set[str]:
    """Names the test's own conditions mention (it may skip some cases)."""
    found: set[str] = set()

    class Finder(cst.CSTVisitor):
        def visit_If(self, stmt: cst.If) -> None:
            visit(stmt.test, _Collect(found))
        def visit_IfExp(self, expr: cst.IfExp) -> None:
            visit(expr.test, _Collect(found))
        def visit_Assert(self, stmt: cst.Assert) -> None:
            pass

    visit(node.body, Finder())
    return found


class _Collect(cst.CSTVisitor):
    def __init__(self, found: set[str]):
        self.found = found

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)

