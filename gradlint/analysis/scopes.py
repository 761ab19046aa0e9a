"""Scopes, statement positions ("sites") and the module context shared by all blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import libcst as cst

from .codegen import node_code
from . import memos, torch_api
from .names import ScopeTable, body_statements, compound_bodies, without_walrus


class Scope:
    """A module, function, lambda or class scope."""

    def __init__(self, kind: str, node: cst.CSTNode | None, table: ScopeTable,
                 parent: "Scope | None", statements: Sequence[cst.BaseStatement],
                 root: cst.BaseStatement | None = None):
        self.kind = kind  # "module" | "function" | "class"
        self.node = node
        self.table = table
        self.parent = parent
        self.statements = statements
        # the top-level statement this scope lives in (None for the module itself)
        self.root = root
        self.tables: dict[int, tuple] = {}  # (module scope) tables of inner scopes, by node

    def chain(self) -> Iterator["Scope"]:
        """Scopes searched for a name used here (class scopes only from their own body)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if first or scope.kind != "class":
                yield scope
            first = False
            scope = scope.parent

    def binding_scope(self, name: str) -> "Scope | None":
        for scope in self.chain():
            if name in scope.table:
                return scope
        return None


@dataclass(frozen=True)
class Frame:
    statements: Sequence[cst.BaseStatement]
    index: int
    owner: cst.CSTNode | None = None  # the compound statement whose body this is
    handler: bool = False  # an `except` handler body


@dataclass(frozen=True)
class Site:
    """Where a statement sits: its scope and the statement lists leading to it."""

    scope: Scope
    frames: tuple[Frame, ...]

    @property
    def statement(self) -> cst.BaseStatement:
        frame = self.frames[-1]
        return frame.statements[frame.index]

    @property
    def top_statement(self) -> cst.BaseStatement:
        """The top-level statement (hence the block) this site is in."""
        if self.scope.kind == "module":
            first = self.frames[0]
            return first.statements[first.index]
        assert self.scope.root is not None
        return self.scope.root

    def with_index(self, index: int) -> "Site":
        last = self.frames[-1]
        return Site(self.scope, self.frames[:-1] + (Frame(last.statements, index, last.owner, last.handler),))


def _root_for(parent: Scope, site: Site) -> cst.BaseStatement | None:
    return site.top_statement if parent.kind == "module" else parent.root


def function_scope(node: cst.FunctionDef | cst.Lambda, parent: Scope, site: Site) -> Scope:
    root = _root_for(parent, site)
    if isinstance(node, cst.Lambda):
        return Scope("function", node, _table(node, parent, (), node.params), parent, (), root)
    statements = body_statements(node.body)
    return Scope("function", node, _table(node, parent, statements, node.params,
                                          may_walrus=not without_walrus(root)),
                 parent, statements, root)


def class_scope(node: cst.ClassDef, parent: Scope, site: Site) -> Scope:
    statements = body_statements(node.body)
    return Scope("class", node, _table(node, parent, statements), parent, statements,
                 _root_for(parent, site))


def _table(node: cst.CSTNode, parent: Scope, statements: Sequence[cst.BaseStatement],
           params: cst.Parameters | None = None, may_walrus: bool = True) -> ScopeTable:
    """A scope's table, built once per lint: every walk over a block makes its scopes anew,
    and the tables (every binding, `:=` targets included) are the costly part."""
    module = parent
    while module.parent is not None:
        module = module.parent
    known = module.tables.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    table = ScopeTable.of_statements(statements, params, may_walrus)
    module.tables[id(node)] = (node, table)  # (the node is kept: its id stays unique)
    return table


def walk_statements(statements: Sequence[cst.BaseStatement], scope: Scope,
                    prefix: tuple[Frame, ...] = (), owner: cst.CSTNode | None = None,
                    handler: bool = False, indexes: Sequence[int] | None = None,
                    ) -> Iterator[tuple[cst.BaseStatement, Site]]:
    """Every statement under ``statements`` with its site, entering nested scopes.

    ``indexes`` restricts the walk to some positions of ``statements`` (a block's share of
    the module body) while keeping frames that point into the whole list.
    """
    positions = range(len(statements)) if indexes is None else indexes
    for index in positions:
        stmt = statements[index]
        frames = prefix + (Frame(statements, index, owner, handler),)
        site = Site(scope, frames)
        yield stmt, site
        if isinstance(stmt, cst.FunctionDef):
            inner = function_scope(stmt, scope, site)
            yield from walk_statements(inner.statements, inner)
        elif isinstance(stmt, cst.ClassDef):
            inner = class_scope(stmt, scope, site)
            yield from walk_statements(inner.statements, inner)
        else:
            for body, is_handler in compound_bodies(stmt):
                yield from walk_statements(body, scope, frames, stmt, is_handler)


_POSITIONS: dict = memos.memo()  # id(statement list) -> (list, {id(statement): position})
_INDEXED = 32  # shorter lists are scanned


def _positions(statements: Sequence[cst.BaseStatement]) -> dict[int, int]:
    """Where each of ``statements`` is in the list (finding a class among the thousands of
    statements of a big module was a scan per lookup)."""
    known = _POSITIONS.get(id(statements))
    if known is not None and known[0] is statements:
        return known[1]
    found = {id(stmt): index for index, stmt in enumerate(statements)}
    memos.remember(_POSITIONS, id(statements), statements, found)
    return found


def statement_site(statements: Sequence[cst.BaseStatement], scope: Scope,
                   target: cst.CSTNode) -> Site | None:
    """The site of ``target`` when it is one of ``statements`` itself (not nested)."""
    if len(statements) > _INDEXED:
        position = _positions(statements).get(id(target))
    else:
        position = next((i for i, stmt in enumerate(statements) if stmt is target), None)
    return None if position is None else Site(scope, (Frame(statements, position),))


def find_site(statements: Sequence[cst.BaseStatement], scope: Scope, target: cst.CSTNode,
              prefix: tuple[Frame, ...] = (), owner: cst.CSTNode | None = None,
              handler: bool = False) -> Site | None:
    """The site of ``target`` among ``statements`` (same scope only)."""
    if len(statements) > _INDEXED:
        position = _positions(statements).get(id(target))
        if position is not None:  # one of the statements itself (a node is in one place only)
            return Site(scope, prefix + (Frame(statements, position, owner, handler),))
    for index, stmt in enumerate(statements):
        frames = prefix + (Frame(statements, index, owner, handler),)
        if stmt is target:
            return Site(scope, frames)
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        for body, is_handler in compound_bodies(stmt):
            found = find_site(body, scope, target, frames, stmt, is_handler)
            if found is not None:
                return found
    return None


def real_site(site: Site) -> Site | None:
    """``site``, or the compound statement around it when ``site`` is the statement list
    gradlint builds for a one-line suite (``if x: f()``), which has no position."""
    frame = site.frames[-1]
    stmt = frame.statements[frame.index]
    if frame.owner is None or not isinstance(stmt, cst.SimpleStatementLine):
        return site
    for body, _ in compound_bodies(frame.owner):  # type: ignore[arg-type]
        if body is frame.statements:
            return site
    if len(site.frames) > 1:
        return Site(site.scope, site.frames[:-1])
    return None


@dataclass
class ModuleContext:
    """Facts about the whole module that every block's analysis may consult."""

    statements: Sequence[cst.BaseStatement]
    scope: Scope = field(init=False)
    default_dtype: str | None = "float32"  # None: unknown (set somewhere we cannot follow)
    # unknown only because functions of this module call torch.set_default_dtype: inside
    # a function, the dtype a straight-line call there set is known (see default_dtype_at)
    default_dtype_set_in_functions: bool = False
    _aliases: dict[str, str | None] = field(default_factory=dict, init=False)
    # models of the whole module built on demand by analysis modules, by name
    models: dict[str, object] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.scope = Scope("module", None, ScopeTable.of_statements(self.statements), None,
                           self.statements)

    # -- name resolution -------------------------------------------------------------
    def resolve_name(self, name: str, scope: Scope) -> str | None:
        """Qualified name a bare name refers to in ``scope``, or None if unknown."""
        owner = scope.binding_scope(name)
        if owner is None:
            for module in self.scope.table.star_imports:
                if name in torch_api.STAR_EXPORTS.get(module, ()):
                    return f"{module}.{name}"
            return None
        imported = owner.table.imported(name)
        if imported is not None:
            return imported
        if owner.kind == "module":
            return self._module_alias(name)
        return None

    def _module_alias(self, name: str) -> str | None:
        """``gc = torch.autograd.gradcheck`` at module level makes ``gc`` an alias."""
        if name in self._aliases:
            return self._aliases[name]
        self._aliases[name] = None  # guards against `a = b; b = a`
        binding = self.scope.table.single_assignment(name)
        result = None
        if binding is not None and binding.value is not None:
            value = binding.value
            if isinstance(value, (cst.Name, cst.Attribute)):
                result = self.qualified(value, self.scope)
        self._aliases[name] = result
        return result

    def qualified(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        parts: list[str] = []
        node = expr
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        base = self.resolve_name(node.value, scope)
        if base is None:
            return None
        return ".".join([base, *reversed(parts)])


def default_dtype_of(blocks: Sequence[tuple[cst.Module, str]], context: ModuleContext) -> str | None:
    """torch's default dtype for code in this module.

    A top-level ``torch.set_default_dtype(torch.float64)`` (or ``set_default_tensor_type``)
    sets it; a call anywhere else (a fixture, ``setUp``, a branch) makes it unknown.
    """
    found: list[str | None] = []
    found_in_function = False
    context.default_dtype_set_in_functions = False
    for module, text in blocks:
        if not _MENTION.search(text):
            continue
        for stmt in module.body:
            code = None
            if not isinstance(stmt, cst.SimpleStatementLine):
                code = node_code(stmt, module)
                if _MENTION.search(code):
                    # inside a def, class or branch: cannot be followed from the top
                    context.default_dtype_set_in_functions = isinstance(stmt, cst.FunctionDef) or (
                        isinstance(stmt, cst.ClassDef) and _only_in_methods(stmt, module))
                    if not context.default_dtype_set_in_functions:
                        return None
                    found_in_function = True
                continue
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    continue
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                    name = context.qualified(small.value.func, context.scope)
                    if name in torch_api.SET_DEFAULT_DTYPE | torch_api.SET_DEFAULT_TENSOR_TYPE:
                        found.append(_dtype_argument(small.value, context))
                        continue
                if _MENTION.search(node_code(small, module)):
                    context.default_dtype_set_in_functions = False
                    return None
    if found_in_function:
        # the top level's value holds only until a function changes it
        context.default_dtype_set_in_functions = not found
        return None
    return found[-1] if found else "float32"


def _only_in_methods(node: cst.ClassDef, module: cst.Module) -> bool:
    """Every mention of set_default_dtype in the class is inside one of its methods."""
    for stmt in body_statements(node.body):
        if not isinstance(stmt, cst.FunctionDef) and _MENTION.search(node_code(stmt, module)):
            return False
    return True


_MENTION = re.compile(r"set_default_(?:dtype|tensor_type)")


def _dtype_argument(call: cst.Call, context: ModuleContext) -> str | None:
    if not call.args:
        return None
    value = call.args[0].value
    name = context.qualified(value, context.scope)
    if name in torch_api.DTYPES:
        return torch_api.DTYPES[name]
    if name in torch_api.TENSOR_TYPES:
        return torch_api.TENSOR_TYPES[name]
    if isinstance(value, cst.SimpleString):
        return torch_api.TENSOR_TYPE_STRINGS.get(value.evaluated_value)
    return None
