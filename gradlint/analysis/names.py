"""Name bindings and qualified-name resolution, by syntax only.

Rules never match raw text: ``torch.autograd.gradcheck``, ``T.autograd.gradcheck`` (with
``import torch as T``), ``gc`` (with ``from torch.autograd import gradcheck as gc``) all
resolve to the same qualified name. Anything that cannot be resolved with certainty
resolves to ``None``, and rules stay silent about it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import libcst as cst

from . import memos
from .traverse import children, visit

def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _module_name(node: cst.BaseExpression | None) -> str | None:
    return None if node is None else dotted_name(node)


class BindingKind(enum.Enum):
    IMPORT = "import"
    ASSIGN = "assign"  # a plain `name = value` (or annotated assignment with a value)
    DEF = "def"
    CLASS = "class"
    PARAM = "param"
    OTHER = "other"  # for-targets, with-as, augmented assignment, del, except-as, walrus...


@dataclass(frozen=True)
class Binding:
    name: str
    kind: BindingKind
    node: cst.CSTNode
    qualified: str | None = None  # imports: the dotted path of the bound object
    value: cst.BaseExpression | None = None  # ASSIGN: the assigned expression
    in_except_handler: bool = False


def import_bindings(node: cst.Import | cst.ImportFrom) -> Iterator[tuple[str, str | None]]:
    """(local name, qualified name) for each name an import statement binds.

    ``import a.b.c`` binds ``a`` to ``a``; ``import a.b.c as m`` binds ``m`` to ``a.b.c``;
    ``from a.b import c as d`` binds ``d`` to ``a.b.c``. Relative imports bind to None.
    """
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _module_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias.asname.name.value, full
            else:
                yield full.split(".")[0], full.split(".")[0]
        return
    module = _module_name(node.module) if node.module is not None else None
    relative = bool(node.relative)
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        name = _module_name(alias.name)
        if name is None:
            continue
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        if relative or module is None:
            yield local, None
        else:
            yield local, f"{module}.{name}"


def star_import_module(node: cst.ImportFrom) -> str | None:
    if isinstance(node.names, cst.ImportStar) and not node.relative and node.module is not None:
        return _module_name(node.module)
    return None


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    """Names bound by an assignment/for target (through tuples, lists and starred)."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_names(target.value)


def _small_statement_bindings(
    stmt: cst.BaseSmallStatement, in_handler: bool
) -> Iterator[Binding]:
    if isinstance(stmt, cst.Assign):
        for target in stmt.targets:
            if isinstance(target.target, cst.Name):
                yield Binding(target.target.value, BindingKind.ASSIGN, stmt, value=stmt.value,
                              in_except_handler=in_handler)
            else:
                for name in target_names(target.target):
                    yield Binding(name, BindingKind.OTHER, stmt, in_except_handler=in_handler)
    elif isinstance(stmt, cst.AnnAssign):
        if isinstance(stmt.target, cst.Name):
            if stmt.value is not None:
                yield Binding(stmt.target.value, BindingKind.ASSIGN, stmt, value=stmt.value,
                              in_except_handler=in_handler)
    elif isinstance(stmt, cst.AugAssign):
        for name in target_names(stmt.target):
            yield Binding(name, BindingKind.OTHER, stmt, in_except_handler=in_handler)
    elif isinstance(stmt, (cst.Import, cst.ImportFrom)):
        for local, qualified in import_bindings(stmt):
            yield Binding(local, BindingKind.IMPORT, stmt, qualified=qualified,
                          in_except_handler=in_handler)
    elif isinstance(stmt, cst.Del):
        for name in target_names(stmt.target):
            yield Binding(name, BindingKind.OTHER, stmt, in_except_handler=in_handler)
    elif isinstance(stmt, (cst.Global, cst.Nonlocal)):
        for item in stmt.names:
            yield Binding(item.name.value, BindingKind.OTHER, stmt, in_except_handler=in_handler)


def statement_bindings(stmt: cst.BaseStatement, in_handler: bool = False) -> Iterator[Binding]:
    """Every name a statement binds in the *current* scope (nested scopes excluded).

    Walrus targets inside expressions are not collected; they are rare at the places
    where gradlint looks up names, and a miss only makes a lookup fall back to "unknown"
    one scope further out... except at module level, which is acceptable there.
    """
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            yield from _small_statement_bindings(small, in_handler)
        return
    if isinstance(stmt, cst.FunctionDef):
        yield Binding(stmt.name.value, BindingKind.DEF, stmt, in_except_handler=in_handler)
        return
    if isinstance(stmt, cst.ClassDef):
        yield Binding(stmt.name.value, BindingKind.CLASS, stmt, in_except_handler=in_handler)
        return
    if isinstance(stmt, (cst.For,)):
        for name in target_names(stmt.target):
            yield Binding(name, BindingKind.OTHER, stmt, in_except_handler=in_handler)
    if isinstance(stmt, cst.With):
        for item in stmt.items:
            if item.asname is not None:
                for name in target_names(item.asname.name):
                    yield Binding(name, BindingKind.OTHER, stmt, in_except_handler=in_handler)
    for body, handler in compound_bodies(stmt):
        for inner in body:
            yield from statement_bindings(inner, in_handler or handler)
    if isinstance(stmt, (cst.Try, cst.TryStar)):
        for handler in stmt.handlers:
            if handler.name is not None and isinstance(handler.name.name, cst.Name):
                yield Binding(handler.name.name.value, BindingKind.OTHER, stmt, in_except_handler=True)
    if isinstance(stmt, cst.Match):
        # capture patterns bind names; treat every name in the patterns as bound
        for case in stmt.cases:
            for name in _pattern_names(case.pattern):
                yield Binding(name, BindingKind.OTHER, stmt, in_except_handler=in_handler)


def _pattern_names(pattern: cst.CSTNode) -> Iterator[str]:
    if isinstance(pattern, cst.MatchAs) and pattern.name is not None:
        yield pattern.name.value
    if isinstance(pattern, cst.MatchStar) and pattern.name is not None:
        yield pattern.name.value
    for child in children(pattern):
        yield from _pattern_names(child)


def body_statements(block: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    if isinstance(block, cst.SimpleStatementSuite):
        # `if x: a = 1; b = 2` - wrap so callers see statements
        return (cst.SimpleStatementLine(body=block.body),)
    return ()


# (classes nothing derives from: `type(x) in` answers what isinstance would)
_COMPOUND = frozenset({cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar})
assert not any(cls.__subclasses__() for cls in _COMPOUND)


def compound_bodies(stmt: cst.BaseStatement) -> Iterator[tuple[Sequence[cst.BaseStatement], bool]]:
    """The statement lists nested in a compound statement (same scope), with a flag that
    tells whether the list is an ``except`` handler."""
    if type(stmt) not in _COMPOUND:
        return  # most statements: a type test instead of five isinstance on libcst's ABCs
    if isinstance(stmt, (cst.If,)):
        yield body_statements(stmt.body), False
        orelse = stmt.orelse
        if isinstance(orelse, cst.If):
            yield (orelse,), False
        elif isinstance(orelse, cst.Else):
            yield body_statements(orelse.body), False
    elif isinstance(stmt, (cst.For, cst.While)):
        yield body_statements(stmt.body), False
        if stmt.orelse is not None:
            yield body_statements(stmt.orelse.body), False
    elif isinstance(stmt, cst.With):
        yield body_statements(stmt.body), False
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield body_statements(stmt.body), False
        for handler in stmt.handlers:
            yield body_statements(handler.body), True
        if stmt.orelse is not None:
            yield body_statements(stmt.orelse.body), False
        if stmt.finalbody is not None:
            yield body_statements(stmt.finalbody.body), False
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield body_statements(case.body), False


def parameter_names(params: cst.Parameters) -> list[str]:
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    if isinstance(params.star_arg, cst.Param):
        names.append(params.star_arg.name.value)
    if params.star_kwarg is not None:
        names.append(params.star_kwarg.name.value)
    return names


_UNKNOWN = object()


class ScopeTable:
    """The bindings of one scope: a module, a function body or a class body."""

    def __init__(self, bindings: Iterable[Binding], star_imports: Iterable[str] = ()):
        self.bindings: dict[str, list[Binding]] = {}
        for binding in bindings:
            self.bindings.setdefault(binding.name, []).append(binding)
        self.star_imports = frozenset(star_imports)
        # (answers of `imported`: a name every notebook cell imports again has a binding
        # per cell, and it is asked for at every use)
        self._imported: dict[str, str | None] = {}

    @staticmethod
    def of_statements(statements: Iterable[cst.BaseStatement],
                      params: cst.Parameters | None = None, may_walrus: bool = True) -> "ScopeTable":
        """``may_walrus=False``: the statements are known to hold no ``:=`` (their code
        has none), which spares a function's walk for its ``:=`` targets."""
        bindings: list[Binding] = []
        stars: list[str] = []
        if params is not None:
            for name in parameter_names(params):
                bindings.append(Binding(name, BindingKind.PARAM, params))
        for stmt in statements:
            bindings.extend(statement_bindings(stmt))
            stars.extend(_star_imports(stmt))
        if params is not None and may_walrus:  # a function: `:=` targets are locals too
            walrus = _WalrusTargets()
            for stmt in statements:
                visit(stmt, walrus)
            bindings.extend(Binding(name, BindingKind.OTHER, node) for name, node in walrus.found)
        return ScopeTable(bindings, stars)

    def __contains__(self, name: str) -> bool:
        return name in self.bindings

    def imported(self, name: str) -> str | None:
        """The qualified name ``name`` is bound to, when every binding agrees on it.

        Bindings inside ``except`` handlers (``except ImportError: torch = None``) are
        ignored when the name is also imported outside one.
        """
        known = self._imported.get(name, _UNKNOWN)
        if known is _UNKNOWN:
            known = self._imported[name] = self._find_imported(name)
        return known  # type: ignore[return-value]

    def _find_imported(self, name: str) -> str | None:
        bindings = self.bindings.get(name)
        if not bindings:
            return None
        main = [b for b in bindings if not b.in_except_handler] or bindings
        qualified = {b.qualified for b in main if b.kind is BindingKind.IMPORT}
        if len(qualified) == 1 and all(b.kind is BindingKind.IMPORT for b in main):
            return next(iter(qualified))
        # `gc = torch.autograd.gradcheck` style aliases resolve in ModuleContext
        return None

    def single_assignment(self, name: str) -> Binding | None:
        bindings = self.bindings.get(name)
        if bindings and len(bindings) == 1 and bindings[0].kind is BindingKind.ASSIGN:
            return bindings[0]
        return None


def mark_without_walrus(statements: Iterable[cst.BaseStatement]) -> None:
    """Note that ``statements`` hold no ``:=`` (the code they were parsed from has none).

    A pure fact about each node (which never changes), remembered for the lint: the
    tables of the functions inside them then skip the walk for ``:=`` targets."""
    for stmt in statements:
        memos.remember(_WITHOUT_WALRUS, id(stmt), stmt, True)


def without_walrus(stmt: cst.BaseStatement | None) -> bool:
    """Is ``stmt`` known to hold no ``:=`` (see ``mark_without_walrus``)?"""
    return stmt is not None and memos.recall(_WITHOUT_WALRUS, id(stmt), stmt) is True


_WITHOUT_WALRUS: dict = memos.memo()  # id(top-level statement) -> (statement, True)


class _WalrusTargets(cst.CSTVisitor):
    """Names bound by `:=` in a function body (comprehensions included: their walrus
    targets bind in the enclosing function), not in nested functions or classes."""

    def __init__(self) -> None:
        self.found: list[tuple[str, cst.NamedExpr]] = []

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self.found.append((node.target.value, node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _star_imports(stmt: cst.BaseStatement) -> Iterator[str]:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom):
                module = star_import_module(small)
                if module:
                    yield module
    else:
        for body, _ in compound_bodies(stmt):
            for inner in body:
                yield from _star_imports(inner)
