"""Where a function's Tensor parameters flow, by syntax: the local names that are views of
them, the statements that write into them, and the values returned that alias them.

Flow-insensitive and conservative: a parameter (or local) bound more than once is not
followed at all (``x = x.clone()`` makes ``x`` a new tensor); only a local assigned once
from a view of a parameter (``y = x.view(-1)``, ``row = x[0]``) counts as the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

import libcst as cst

from .codegen import node_code
from . import memos, traverse
from .names import BindingKind, ScopeTable, body_statements
from .scopes import ModuleContext, Scope

# methods that always return a view of (or the tensor itself)
VIEW_METHODS = frozenset({
    "view", "view_as", "t", "transpose", "permute", "unsqueeze", "squeeze", "expand",
    "expand_as", "narrow", "select", "detach", "diagonal", "unfold", "movedim", "moveaxis",
    "swapaxes", "swapdims", "as_strided", "unflatten", "adjoint", "align_as", "rename",
    "view_as_real", "view_as_complex", "requires_grad_",
})
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
# methods that return the tensor itself (or a view) in the common case: already
# contiguous, already of that dtype/device, reshape of a contiguous tensor
MAYBE_SELF_METHODS = frozenset({
    "reshape", "reshape_as", "contiguous", "flatten", "to", "type", "type_as", "float",
    "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char", "cpu",
    "cuda", "coalesce", "to_dense",
})
# methods named like in-place ops that do not write a tensor's data
_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "record_stream_",
                         "set_materialize_grads_", "rename_", "resize_", "resize_as_"})
_INPLACE_TRUE_PREFIX = "torch.nn.functional."


@dataclass(frozen=True)
class Write:
    param: str
    node: cst.CSTNode  # the call, the assignment target or the augmented assignment
    statement: cst.BaseStatement
    how: str  # "`out.copy_(...)`", "`out[...] = ...`", "`out=out`"
    certain: bool = True  # False: the name may be a copy (`x = x.contiguous()`)


@dataclass(frozen=True)
class ReturnedAlias:
    param: str
    node: cst.BaseExpression  # the returned expression (or element of a returned tuple/list)
    statement: cst.BaseStatement
    certain: bool  # a view for sure (False: the tensor itself only in the common case)
    how: str  # what it is: "`x`", "a view of `x` (`x.t()`)"
    whole_list: bool = False  # the input list itself (a list has no .clone())


class ParamFlow:
    """The flow of the listed parameters of one function."""

    def __init__(self, node: cst.FunctionDef, params: Mapping[str, str],
                 context: ModuleContext, scope: Scope):
        """``params``: parameter name -> "tensor" | "list" (a list of tensors)."""
        self.node = node
        self.context = context
        self.scope = scope
        table = _table_of(node)
        self.kinds: dict[str, str] = {}
        rebound: dict[str, list] = {}
        for name, kind in params.items():
            extra = [b for b in table.bindings.get(name, [])
                     if b.kind is not BindingKind.PARAM and not _augmented(b.node)]
            if not extra:
                self.kinds[name] = kind
            elif all(b.kind is BindingKind.ASSIGN and b.value is not None for b in extra):
                rebound[name] = extra
        # locals that are views of a parameter
        self.origin: dict[str, str] = {name: name for name in self.kinds}
        # parameters rebound to (maybe) themselves: `x = x.contiguous()` is the input when
        # it is already contiguous, so writes into `x` may write into the input
        self.uncertain: set[str] = set()
        self.rebinding: dict[str, str] = {}  # uncertain parameter -> `x = x.contiguous()`
        for name, extra in rebound.items():
            self.kinds[name] = params[name]
            self.origin[name] = name
            roots = [self.view_root(b.value) for b in extra]
            if all(root is not None and root[0] == name for root in roots):
                if not all(root[1] for root in roots):  # type: ignore[index]
                    self.uncertain.add(name)
                    first = next(b for b, root in zip(extra, roots) if not root[1])  # type: ignore[index]
                    self.rebinding[name] = f"{name} = {_short(first.value)}"
            else:
                del self.kinds[name], self.origin[name]
        for _ in range(3):  # views of views
            for name, bindings in table.bindings.items():
                if name in self.origin or len(bindings) != 1 or bindings[0].kind is not BindingKind.ASSIGN:
                    continue
                value = bindings[0].value
                root = self.view_root(value, certain_only=True) if value is not None else None
                if root is not None:
                    self.origin[name] = root[0]

    # -- expressions -----------------------------------------------------------------
    def view_root(self, expr: cst.BaseExpression, certain_only: bool = False
                  ) -> tuple[str, bool] | None:
        """(the parameter ``expr`` is or views, certain) or None."""
        certain = True
        while True:
            if isinstance(expr, cst.Name):
                param = self.origin.get(expr.value)
                return None if param is None else (param, certain)
            if isinstance(expr, cst.Attribute) and expr.attr.value in VIEW_ATTRIBUTES:
                expr = expr.value
                continue
            if isinstance(expr, cst.Subscript):
                base = expr.value
                base_param = self._param_of(base)
                if base_param is not None and self.kinds.get(base_param) == "list" and \
                        isinstance(base, cst.Name):
                    return base_param, certain  # an element of a list of tensors
                if not _basic_index(expr):
                    return None
                expr = base
                continue
            if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
                method = expr.func.attr.value
                if method in VIEW_METHODS:
                    expr = expr.func.value
                    continue
                if method in MAYBE_SELF_METHODS and not certain_only:
                    certain = False
                    expr = expr.func.value
                    continue
            return None

    def _param_of(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Name):
            return self.origin.get(expr.value)
        return None

    def _list_itself(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and self.kinds.get(self.origin.get(expr.value, "")) == "list" \
            and self.origin.get(expr.value) == expr.value

    def _written(self, expr: cst.BaseExpression) -> str | None:
        """The parameter whose data a write into ``expr`` changes."""
        root = self.view_root(expr, certain_only=True)
        return root[0] if root is not None else None

    # -- writes ----------------------------------------------------------------------
    def writes(self) -> Iterator[Write]:
        if not self.kinds:
            return
        for node, statement in _walked(self.node):
            for write in self._write(node, statement):
                if write.param in self.uncertain:
                    write = Write(write.param, write.node, write.statement, write.how, False)
                yield write

    def _write(self, node: cst.CSTNode, statement: cst.BaseStatement) -> Iterator[Write]:
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method.endswith("_") and not method.startswith("_") and method not in _NOT_WRITES:
                    param = self._written(func.value)
                    if param is not None:
                        yield Write(param, node, statement, f"`{_code(func.value)}.{method}(...)`")
                        return
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "out":
                    targets = [e.value for e in arg.value.elements] \
                        if isinstance(arg.value, (cst.Tuple, cst.List)) else [arg.value]
                    for target in targets:
                        param = self._written(target)
                        if param is not None:
                            yield Write(param, node, statement, f"`out={_code(target)}`")
                            return
            name = self.context.qualified(func, self.scope) or ""
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if not positional:
                return
            last = name.rsplit(".", 1)[-1]
            inplace = name.startswith("torch.") and last.endswith("_") and not last.startswith("_")
            inplace = inplace or (name.startswith(_INPLACE_TRUE_PREFIX) and any(
                a.keyword is not None and a.keyword.value == "inplace" and
                isinstance(a.value, cst.Name) and a.value.value == "True" for a in node.args))
            if inplace:
                param = self._written(positional[0].value)
                if param is not None:
                    yield Write(param, node, statement, f"`{name}({_code(positional[0].value)}, ...)`")
            return
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript):
            param = self._written(node.target.value)
            if param is not None and self._list_itself(node.target.value):
                param = None  # `xs[0] = t` replaces an element of a list: no tensor is written
            if param is not None:
                yield Write(param, node.target, statement, f"`{_code(node.target)} = ...`")
            return
        if isinstance(node, cst.AugAssign):
            target = node.target
            if isinstance(target, cst.Name) and self.kinds.get(self.origin.get(target.value, "")) == "tensor":
                param = self.origin[target.value]
                yield Write(param, node, statement,
                            f"`{target.value} {_code(node.operator).strip()} ...`")
            elif isinstance(target, cst.Subscript):
                param = self._written(target.value)
                if param is not None and not self._list_itself(target.value):
                    yield Write(param, node, statement, f"`{_code(target)} {_code(node.operator).strip()} ...`")

    # -- returns ---------------------------------------------------------------------
    def returned_aliases(self) -> Iterator[ReturnedAlias]:
        if not self.kinds:
            return
        for node, statement in _walked(self.node):
            if not isinstance(node, cst.Return) or node.value is None:
                continue
            value = node.value
            elements = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) \
                else [value]
            for element in elements:
                if isinstance(element, cst.StarredElement):
                    continue
                root = self.view_root(element)
                if root is None:
                    continue
                param, certain = root
                certain = certain and param not in self.uncertain
                if self.kinds.get(param) == "list":
                    how = f"`{_short(element)}`, a tensor of the input list `{param}`"
                    if isinstance(element, cst.Name) and element.value == param:
                        how = f"the input list `{param}` itself"
                elif isinstance(element, cst.Name) and element.value == param and \
                        param in self.uncertain:
                    how = f"`{param}` (`{self.rebinding[param]}`)"
                elif isinstance(element, cst.Name) and element.value == param:
                    how = f"`{param}` itself"
                elif isinstance(element, cst.Name):
                    how = f"`{element.value}`, a view of `{param}`"
                elif certain:
                    how = f"a view of `{param}` (`{_short(element)}`)"
                else:
                    how = f"`{_short(element)}`"
                whole = self.kinds.get(param) == "list" and isinstance(element, cst.Name) and \
                    self.origin.get(element.value) == element.value
                yield ReturnedAlias(param, element, statement, certain, how, whole)


def _augmented(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.AugAssign)


def _basic_index(expr: cst.Subscript) -> bool:
    """Indexing that returns a view: integers, slices, None and `...` only."""
    for element in expr.slice:
        piece = element.slice
        if isinstance(piece, cst.Slice):
            continue
        value = piece.value
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
            value = value.expression
        if isinstance(value, (cst.Integer, cst.Ellipsis)):
            continue
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        return False
    return True


def _code(node: cst.CSTNode) -> str:
    return node_code(node)


def _short(node: cst.CSTNode, limit: int = 40) -> str:
    text = " ".join(_code(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_CLOSED = traverse.exact_types(cst.FunctionDef, cst.ClassDef, cst.Lambda)
_FOUND = traverse.exact_types(cst.Call, cst.AssignTarget, cst.AugAssign, cst.Return)  # (no statement)


# Several rules follow the same function (an op's function: for writes, for returned
# aliases, and its fake for data reads): its table and its walk are made once per lint.
_TABLES: dict = memos.memo(memos.NEAR_ENTRIES)  # id(function node) -> (node, its ScopeTable)
_WALKS: dict = memos.memo(memos.NEAR_ENTRIES)  # id(function node) -> (node, _Walker.found)


def _table_of(node: cst.FunctionDef) -> ScopeTable:
    known = memos.recall(_TABLES, id(node), node)
    if known is memos.MISSING:
        known = ScopeTable.of_statements(body_statements(node.body), node.params)
        memos.remember(_TABLES, id(node), node, known)
    return known  # type: ignore[return-value]


def _walked(node: cst.FunctionDef) -> list[tuple[cst.CSTNode, cst.BaseStatement]]:
    known = memos.recall(_WALKS, id(node), node)
    if known is memos.MISSING:
        visitor = _Walker()
        traverse.visit(node.body, visitor)
        known = visitor.found
        memos.remember(_WALKS, id(node), node, known)
    return known  # type: ignore[return-value]


class _Walker(cst.CSTVisitor):
    """Calls, assignment targets, augmented assignments and returns in a function body
    (not in nested functions), with their innermost statements."""

    skip_trivia = True  # (traverse.visit: none of these, nor a statement, is a layout node)

    def __init__(self) -> None:
        self.stack: list[cst.BaseStatement] = []
        self.found: list[tuple[cst.CSTNode, cst.BaseStatement]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in _CLOSED:
            return False
        if kind in _FOUND:
            if self.stack:
                self.found.append((node, self.stack[-1]))
            return True
        if isinstance(node, cst.BaseStatement):
            self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.BaseStatement) and self.stack and \
                self.stack[-1] is original_node:
            self.stack.pop()
