"""What the methods of a custom Function do with `ctx` and with their tensors.

Pure syntax over one method body (nested functions, lambdas and classes excluded): the
statement lines in order with their sites, calls like ``ctx.save_for_backward(...)``,
attributes stored on and read from ``ctx``, in-place changes of names, and which of
two statements runs after the other (or whether they are alternatives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from . import memos, traverse
from .autograd_functions import Method
from .gradcheck_calls import calls_in_statement
from .names import body_statements, target_names
from .scopes import Frame, Site, walk_statements
from .torch_ops import INPLACE_METHODS


@dataclass(frozen=True)
class Line:
    node: cst.SimpleStatementLine
    site: Site


def lines(method: Method) -> list[Line]:
    """The simple statement lines of a method's own body, in source order.

    Rules and models ask again and again (ctx calls, stores, mutations): the lines are
    remembered for the lint by method. They read only the method's scope and statements,
    which belong to the method; ``Line`` is frozen."""
    known = memos.recall(_LINES, id(method), method)
    if known is memos.MISSING:
        known = tuple(Line(stmt, site) for stmt, site in walk_statements(method.scope.statements, method.scope)
                      if site.scope is method.scope and isinstance(stmt, cst.SimpleStatementLine))
        memos.remember(_LINES, id(method), method, known)
    return list(known)  # type: ignore[call-overload]


_LINES: dict = memos.memo(memos.NEAR_ENTRIES)  # id(method) -> (method, its lines)


def compound_sites(method: Method) -> Iterator[tuple[cst.BaseStatement, Site]]:
    for stmt, site in walk_statements(method.scope.statements, method.scope):
        if site.scope is method.scope:
            yield stmt, site


def is_name(node: cst.BaseExpression | None, name: str | None) -> bool:
    return name is not None and isinstance(node, cst.Name) and node.value == name


@dataclass(frozen=True)
class CtxCall:
    call: cst.Call
    site: Site


def ctx_calls(method: Method, attr: str) -> list[CtxCall]:
    """Every ``ctx.<attr>(...)`` in the method."""
    ctx = method.context_name
    found = []
    for line in lines(method):
        for call in calls_in_statement(line.node):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == attr and is_name(func.value, ctx):
                found.append(CtxCall(call, line.site))
    return found


@dataclass(frozen=True)
class CtxStore:
    attr: str
    target: cst.Attribute
    value: cst.BaseExpression | None  # None: part of an unpacking we cannot pair up
    site: Site


def ctx_stores(method: Method) -> list[CtxStore]:
    """``ctx.name = value`` (and ``ctx.a, ctx.b = a, b``) in the method."""
    ctx = method.context_name
    found = []
    for line in lines(method):
        for small in line.node.body:
            if not isinstance(small, cst.Assign):
                continue
            for target in small.targets:
                tgt = target.target
                if isinstance(tgt, cst.Attribute) and is_name(tgt.value, ctx):
                    found.append(CtxStore(tgt.attr.value, tgt, small.value, line.site))
                elif isinstance(tgt, (cst.Tuple, cst.List)):
                    values = small.value.elements if isinstance(small.value, (cst.Tuple, cst.List)) \
                        and len(small.value.elements) == len(tgt.elements) else None
                    for index, element in enumerate(tgt.elements):
                        inner = element.value
                        if isinstance(inner, cst.Attribute) and is_name(inner.value, ctx):
                            value = values[index].value if values is not None else None
                            found.append(CtxStore(inner.attr.value, inner, value, line.site))
    return found


class _CtxReads(cst.CSTVisitor):
    skip_trivia = True  # (traverse.visit: an attribute is never inside, nor the child of, a layout node)

    def __init__(self, ctx: str):
        self.ctx = ctx
        self.reads: list[tuple[str, cst.Attribute, cst.CSTNode | None]] = []
        self._parents: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Attribute) and is_name(node.value, self.ctx):
            parent = self._parents[-1] if self._parents else None
            if isinstance(parent, cst.Arg) and len(self._parents) > 1:
                parent = self._parents[-2]  # an argument: its call is what matters
            self.reads.append((node.attr.value, node, parent))
        self._parents.append(node)
        return not isinstance(node, cst.AssignTarget)  # stores are not reads

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._parents.pop()


def ctx_reads(method: Method) -> list[tuple[str, cst.Attribute, cst.CSTNode | None]]:
    """(attribute, node, parent node) for each ``ctx.<attr>`` read in the method (the
    parent of an argument is its call)."""
    ctx = method.context_name
    if ctx is None:
        return []
    visitor = _CtxReads(ctx)
    for stmt in method.scope.statements:
        traverse.visit(stmt, visitor)
    return visitor.reads


@dataclass(frozen=True)
class Mutation:
    name: str
    node: cst.CSTNode  # the call, or the target of the assignment
    site: Site
    how: str  # "method" | "item" | "augmented" | "out"


def mutations(method: Method) -> list[Mutation]:
    """In-place changes of local names: ``x.add_(1)``, ``x[i] = v``, ``x += 1``,
    ``torch.op(..., out=x)`` (``x.data`` forms are not included)."""
    found = []
    for line in lines(method):
        for small in line.node.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    tgt = target.target
                    if isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Name):
                        found.append(Mutation(tgt.value.value, tgt, line.site, "item"))
            elif isinstance(small, cst.AugAssign):
                tgt = small.target
                if isinstance(tgt, cst.Name):
                    found.append(Mutation(tgt.value, small, line.site, "augmented"))
                elif isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Name):
                    found.append(Mutation(tgt.value.value, small, line.site, "item"))
        for call in calls_in_statement(line.node):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in INPLACE_METHODS and \
                    isinstance(func.value, cst.Name):
                found.append(Mutation(func.value.value, call, line.site, "method"))
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == "out" and isinstance(arg.value, cst.Name):
                    found.append(Mutation(arg.value.value, call, line.site, "out"))
    return found


def runs_after(first: Site, second: Site) -> bool:
    """Does ``second`` sit in a later statement of a statement list that holds ``first``
    (so that, whenever both run, ``second`` runs after ``first``)?"""
    if first.scope is not second.scope:
        return False
    for level, frame in enumerate(first.frames):
        if level >= len(second.frames):
            return False
        other = second.frames[level]
        if other.statements is not frame.statements:
            return False
        if level == len(first.frames) - 1:
            return other.index > frame.index
        if other.index != frame.index:
            return False
    return False


def exclusive_branches(first: Site, second: Site) -> bool:
    """Do the two statements sit in different branches of one ``if`` (so that at most one
    of them runs)?"""
    if first.scope is not second.scope:
        return False
    for frame, other in zip(first.frames, second.frames):
        if frame.owner is not None and frame.owner is other.owner and \
                isinstance(frame.owner, cst.If) and _in_if_body(frame) != _in_if_body(other):
            return True
        if frame.statements[frame.index] is not other.statements[other.index]:
            return False
    return False


def _in_if_body(frame: Frame) -> bool:
    assert isinstance(frame.owner, cst.If)
    statement = frame.statements[frame.index]
    return any(statement is s for s in body_statements(frame.owner.body))


def unconditional(site: Site) -> bool:
    """The statement runs whenever its function body does (only `with` blocks around it)."""
    return all(frame.owner is None or isinstance(frame.owner, cst.With) for frame in site.frames)


def inside_loop(site: Site) -> bool:
    return any(isinstance(frame.owner, (cst.For, cst.While)) for frame in site.frames)


def returns(method: Method) -> list[tuple[cst.Return, Site]]:
    found = []
    for line in lines(method):
        for small in line.node.body:
            if isinstance(small, cst.Return):
                found.append((small, line.site))
    return found


def returned_names(method: Method) -> set[str] | None:
    """Names returned by the method (alone or in a literal tuple/list), or None when a
    return gives something else that could be one of its tensors."""
    names: set[str] = set()
    for node, _ in returns(method):
        value = node.value
        if value is None:
            continue
        elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else [value]
        for element in elements:
            inner = element.value if isinstance(element, (cst.Element, cst.StarredElement)) else element
            if isinstance(inner, cst.Name):
                names.add(inner.value)
    return names


def bound_names(method: Method) -> dict[str, int]:
    """How many times each name is bound in the method (parameters count once)."""
    return {name: len(bindings) for name, bindings in method.scope.table.bindings.items()}


def names_in(node: cst.CSTNode) -> frozenset[str]:
    """Every Name read inside ``node`` (attribute names excluded)."""
    known = memos.recall(_NAMES_IN, id(node), node)
    if known is memos.MISSING:
        collector = _Names()
        traverse.visit(node, collector)
        names = frozenset(collector.names)
        known = _SAME_NAMES.setdefault(names, names)
        memos.remember(_NAMES_IN, id(node), node, known)
    return known  # type: ignore[return-value]


# id(node) -> (node, the names it reads): following a value back to its origin asks this
# of every statement in between, for each name followed. The names depend on the node
# alone (which never changes); the answer is frozen, so no caller can change it.
_NAMES_IN: dict = memos.memo(memos.NEAR_ENTRIES)
# one frozenset per distinct answer (statements read the same few names again and again)
_SAME_NAMES: dict = memos.memo(memos.NEAR_ENTRIES)


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        traverse.visit(node.value, self)
        return False


def assigned_from(method: Method, name: str) -> list[cst.BaseExpression] | None:
    """The values assigned to ``name`` in the method, or None if it is bound some other
    way too (a parameter, a loop, an unpacking...)."""
    bindings = method.scope.table.bindings.get(name, [])
    values = []
    for binding in bindings:
        if binding.value is None:
            return None
        values.append(binding.value)
    return values


def target_names_of(small: cst.BaseSmallStatement) -> set[str]:
    if isinstance(small, cst.Assign):
        return {n for t in small.targets for n in target_names(t.target)}
    if isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        return set(target_names(small.target))
    return set()
