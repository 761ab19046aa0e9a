"""Small helpers rules share for building fixes and messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import libcst as cst

from ..analysis import memos, traverse
from ..analysis.block import BlockAnalysis
from ..analysis.names import BindingKind
from ..analysis.scopes import Scope, Site
from ..analysis.traverse import visit
from ..findings import Applicability

_MAX_LABEL = 32


def label(expr: cst.BaseExpression, code: str, index: int | None = None) -> str:
    """How a message names a value: `x` for a name, else its index and an excerpt."""
    if isinstance(expr, cst.Name):
        return f"`{expr.value}`"
    text = " ".join(code.split())
    if len(text) > _MAX_LABEL:
        text = text[: _MAX_LABEL - 1] + "…"
    return f"#{index} (`{text}`)" if index is not None else f"`{text}`"


def short_label(expr: cst.BaseExpression, index: int) -> str:
    """How a fix title names a value: `x`, or input #0."""
    return f"`{expr.value}`" if isinstance(expr, cst.Name) else f"input #{index}"


def torch_module_name(site: Site) -> str | None:
    """A name bound to the ``torch`` module where ``site`` is, preferring ``torch``."""
    for scope in site.scope.chain():
        found = _torch_names(scope)
        if found:
            return "torch" if "torch" in found else sorted(found)[0]
    return None


def _torch_names(scope: Scope) -> list[str]:
    """The names ``scope`` binds to the torch module (once per scope: a big module's table
    has thousands of names, and every fix asked)."""
    known = scope.__dict__.get("_torch_names")
    if known is None:
        known = []
        for name, bindings in scope.table.bindings.items():
            main = [b for b in bindings if not b.in_except_handler] or bindings
            if all(b.kind is BindingKind.IMPORT and b.qualified == "torch" for b in main):
                known.append(name)
        scope.__dict__["_torch_names"] = known
    return known


def with_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression,
                 before: tuple[str, ...] = ()) -> cst.Call | None:
    """``call`` with ``keyword=value`` set: replaced if present, else inserted before the
    first keyword named in ``before``, else appended. None when the call also passes
    ``**mapping``: a keyword beside it raises TypeError if the mapping holds it too."""
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            args[index] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    if any(arg.star == "**" for arg in args):
        return None
    new_arg = cst.Arg(value=value, keyword=cst.Name(keyword),
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value in before:
            # take the place (and the comma) of that argument, which moves one to the right
            args.insert(index, new_arg.with_changes(comma=cst.Comma(
                whitespace_after=_separator_after(args, index))))
            return call.with_changes(args=args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        # a trailing comma (often followed by a newline): the new argument takes it over
        # and the previous last argument gets a separator like its predecessors
        separator = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else \
            cst.Comma(whitespace_after=_after_open(call))
        args[-1] = last.with_changes(comma=separator)
        args.append(new_arg.with_changes(comma=last.comma))
    else:
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(new_arg)
    return call.with_changes(args=args)


def _separator_after(args: list[cst.Arg], index: int) -> cst.BaseParenthesizableWhitespace:
    """The whitespace that follows the comma before ``args[index]``."""
    if index > 0 and isinstance(args[index - 1].comma, cst.Comma):
        return args[index - 1].comma.whitespace_after
    return cst.SimpleWhitespace(" ")


def _after_open(call: cst.Call) -> cst.BaseParenthesizableWhitespace:
    whitespace = call.whitespace_before_args
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace
    return cst.SimpleWhitespace(" ")


def needs_parentheses(expr: cst.BaseExpression) -> bool:
    """Would ``expr.method()`` bind to the whole of ``expr``?"""
    if expr.lpar:
        return False
    return not isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript,
                                 cst.Tuple, cst.List, cst.SimpleString, cst.Integer, cst.Float))


def append_method(expr: cst.BaseExpression, method: str, code: str) -> str:
    """Source for ``expr.method()``."""
    if needs_parentheses(expr):
        return f"({code}).{method}()"
    return f"{code}.{method}()"


def contains(root: cst.CSTNode, target: cst.CSTNode) -> bool:
    """Is ``target`` ``root`` or inside it (by identity)?"""
    if root is target:
        return True
    finder = _Finder(target)
    visit(root, finder)
    return finder.found


class _Finder(cst.CSTVisitor):
    skip_trivia = True  # (traverse.visit: the targets looked for are never layout nodes)

    def __init__(self, target: cst.CSTNode):
        self.target = target
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.target:
            self.found = True
        return not self.found


class _Reads(cst.CSTVisitor):
    """Where a scope reads names: not binding targets, parameters, attribute names or
    keyword names."""

    skip_trivia = True  # (traverse.visit: its hooks name no layout node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        visit(node.value, self)
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return not isinstance(node.target, cst.Name)

    def visit_Param(self, node: cst.Param) -> bool:
        return False


class _NameLoads(_Reads):
    """Reads of one name, outside some subtrees."""

    def __init__(self, name: str, skip: Iterable[cst.CSTNode]):
        self.name = name
        self.skip = {id(node) for node in skip}
        self.count = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            return False
        return super().on_visit(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.count += 1


class _AllLoads(_Reads):
    """The reads of every name at once: the Name nodes, by name."""

    def __init__(self) -> None:
        self.loads: dict[str, list[cst.Name]] = {}

    def visit_Name(self, node: cst.Name) -> None:
        self.loads.setdefault(node.value, []).append(node)


@dataclass(frozen=True)
class Subtrees:
    """Some subtrees of a function (where a name's uses do not count), with the ids of the
    ``Name`` nodes in them: made once, asked about many names."""

    roots: tuple[cst.CSTNode, ...]
    names: frozenset[int]

    @staticmethod
    def of(roots: Iterable[cst.CSTNode]) -> "Subtrees":
        roots = tuple(roots)
        names: set[int] = set()
        for root in roots:
            found = traverse.collect(root, _NAME, frozenset())
            if found is not None:  # (None in the reference run, which walks the roots)
                names.update(map(id, found))
        return Subtrees(roots, frozenset(names))


_NAME = frozenset({cst.Name})


def used_elsewhere(site: Site, name: str, allowed: Iterable[cst.CSTNode] | Subtrees) -> bool:
    """Is ``name`` read anywhere in its function outside the ``allowed`` subtrees?

    Module-level names always count as used elsewhere: other functions may read them.
    The function's reads are indexed once per lint (a test with hundreds of gradcheck
    calls asks about each input: a walk of the whole test for each was quadratic).
    """
    if site.scope.kind != "function" or site.scope.binding_scope(name) is not site.scope:
        return True
    subtrees = allowed if isinstance(allowed, Subtrees) else Subtrees.of(allowed)
    if traverse.reference_run():  # the walk the index stands for
        visitor = _NameLoads(name, subtrees.roots)
        for stmt in site.scope.statements:
            visit(stmt, visitor)
        return visitor.count > 0
    return any(id(load) not in subtrees.names for load in _loads(site.scope).get(name, ()))


_LOADS: dict = memos.memo(memos.NEAR_ENTRIES)  # id(function node) -> (node, {name: [Name]})


def _loads(scope: Scope) -> dict[str, list[cst.Name]]:
    """The reads of every name in a function (as ``_NameLoads`` counts them), once per lint."""
    known = memos.recall(_LOADS, id(scope.node), scope.node)
    if known is memos.MISSING:
        visitor = _AllLoads()
        for stmt in scope.statements:
            visit(stmt, visitor)
        known = visitor.loads
        memos.remember(_LOADS, id(scope.node), scope.node, known)
    return known  # type: ignore[return-value]


def gradcheck_inputs(block: BlockAnalysis, scope: Scope) -> Subtrees:
    """The inputs arguments of every gradcheck call of the block in ``scope`` (what a fix
    of one input may also change), made once per scope; the calls are sorted by scope
    once per block (a class of hundreds of tests asks for each)."""
    made = block.shared.get("gradcheck_inputs")
    if made is None:
        by_scope: dict[int, list[cst.CSTNode]] = {}
        for call in block.gradcheck_calls:
            if call.inputs is not None:
                by_scope.setdefault(id(call.site.scope.node), []).append(call.inputs)
        made = block.shared["gradcheck_inputs"] = {"by_scope": by_scope, "subtrees": {}}
    key = id(scope.node)
    found = made["subtrees"].get(key)
    if found is None:
        found = made["subtrees"][key] = Subtrees.of(made["by_scope"].get(key, ()))
    return found


def unsafe_because(site: Site, name: str, allowed: Iterable[cst.CSTNode] | Subtrees) -> str | None:
    """Why changing what ``name`` holds would change other code too (a fix title says it),
    or None when only the ``allowed`` subtrees read it."""
    if site.scope.kind != "function" or site.scope.binding_scope(name) is not site.scope:
        return (f"`{name}` is a module-level name, which other code may read (in a notebook, "
                f"every cell)")
    if used_elsewhere(site, name, allowed):
        node = site.scope.node
        where = f" `{node.name.value}`" if isinstance(node, cst.FunctionDef) else ""
        return f"`{name}` is also read elsewhere in the function{where}"
    return None


def applicability(safe: bool) -> Applicability:
    return Applicability.SAFE if safe else Applicability.UNSAFE


def argument_removal(call: cst.Call, arg: cst.Arg, site: Site) -> tuple:
    """Replacements that delete one argument of ``call`` and keep its commas well-formed
    (edits of the argument's own span, so that the lines around keep their indentation)."""
    from .base import Replacement

    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is arg)
    if isinstance(arg.comma, cst.Comma) or index == 0:
        return (Replacement(arg, "", site),)
    previous = args[index - 1]
    assert isinstance(previous.comma, cst.Comma)
    return (Replacement(previous.comma, "", site), Replacement(arg, "", site))
