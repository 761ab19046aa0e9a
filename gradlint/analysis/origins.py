"""Where a tensor's values come from: the factory call at the root of an expression.

``torch.empty(3, dtype=torch.float64).requires_grad_()`` has the root ``torch.empty``
and the methods ``("requires_grad_",)``. Names are followed back through straight-line
code to their one assignment; a statement in between that does anything with the name
other than a call of one of its methods (``x.uniform_()``, ``x.requires_grad_()``: the
method is recorded) makes the origin unknown, as does a loop, a branch or a function call
that receives the tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from . import memos
from .method_body import names_in
from .scopes import Frame, ModuleContext, Site

_MAX_DEPTH = 8


@dataclass(frozen=True)
class ValueOrigin:
    root: cst.Call  # the call the value starts from
    qualified: str | None  # `torch.empty`...; None for a method root (see ``root_method``)
    root_method: str | None  # `new_empty`... when the root is a method call
    calls: tuple["MethodCall", ...]  # methods applied to it afterwards, in order
    expressions: tuple[tuple[cst.BaseExpression, Site], ...]  # each expression followed

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(call.method for call in self.calls)


@dataclass(frozen=True)
class MethodCall:
    method: str
    node: cst.Call
    site: Site


def value_origin(expr: cst.BaseExpression, site: Site, context: ModuleContext) -> ValueOrigin | None:
    """The origin of ``expr``'s value at ``site``, or None when it cannot be followed.

    Rules ask it of the same gradcheck inputs (GL019, GL029): the answer is remembered for
    the lint. It reads only ``expr``, ``site`` and ``context`` (the key: all three are kept
    in the entry, so their ids stay theirs); ``ValueOrigin`` is frozen."""
    key = (id(expr), id(site), id(context))
    known = _ORIGINS.get(key)
    if known is not None and known[0] is expr and known[1] is site and known[2] is context:
        return known[3]
    found = _value_origin(expr, site, context, 0)
    memos.make_room(_ORIGINS)
    _ORIGINS[key] = (expr, site, context, found)
    return found


_ORIGINS: dict = memos.memo(memos.NEAR_ENTRIES)  # (ids of expr, site, context) -> (expr, site, context, origin)


def _value_origin(expr: cst.BaseExpression, site: Site, context: ModuleContext,
                  depth: int) -> ValueOrigin | None:
    if depth > _MAX_DEPTH:
        return None
    methods: list[MethodCall] = []
    node = expr
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if context.qualified(node.func, site.scope) is not None:
            break  # `torch.empty(...)`: a function, not a method
        method = node.func.attr.value
        receiver = node.func.value
        if method.startswith("new_") or not isinstance(receiver, (cst.Call, cst.Name)):
            # `x.new_empty(...)`, `(a + b).relu()`: the values start at this call
            return ValueOrigin(node, None, method, tuple(reversed(methods)), ((expr, site),))
        methods.append(MethodCall(method, node, site))
        node = receiver
    methods.reverse()
    if isinstance(node, cst.Call):
        qualified = context.qualified(node.func, site.scope)
        if qualified is None:
            return None
        return ValueOrigin(node, qualified, None, tuple(methods), ((expr, site),))
    if isinstance(node, cst.Name):
        found = _binding(node.value, site)
        if found is None:
            return None
        value, value_site, later = found
        inner = _value_origin(value, value_site, context, depth + 1)
        if inner is None:
            return None
        return ValueOrigin(inner.root, inner.qualified, inner.root_method,
                           inner.calls + tuple(later) + tuple(methods),
                           inner.expressions + ((expr, site),))
    return None


def _binding(name: str, site: Site) -> tuple[cst.BaseExpression, Site, list[MethodCall]] | None:
    """The value of the assignment that binds ``name`` before ``site`` in straight-line
    code, its site, and the methods called on the name in between (in order)."""
    later: list[MethodCall] = []
    frames = site.frames
    for level in range(len(frames) - 1, -1, -1):
        frame = frames[level]
        if level < len(frames) - 1 and isinstance(frames[level + 1].owner, (cst.For, cst.While)):
            return None  # an earlier iteration may have changed it
        for index in range(frame.index - 1, -1, -1):
            stmt = frame.statements[index]
            here = Site(site.scope, frames[:level] + (Frame(frame.statements, index, frame.owner,
                                                              frame.handler),))
            if not isinstance(stmt, cst.SimpleStatementLine):
                if name in names_in(stmt) or _binds(stmt, name):
                    return None
                continue
            for small in reversed(stmt.body):
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        isinstance(small.targets[0].target, cst.Name) and \
                        small.targets[0].target.value == name:
                    if name in names_in(small.value):
                        return None  # `x = f(x)`
                    return small.value, here, list(reversed(later))
                if name not in names_in(small) and not _binds_small(small, name):
                    continue
                method = _method_call_on(small, name)
                if method is None:
                    return None
                later.append(MethodCall(method[0], method[1], here))
    return None


def _binds(stmt: cst.BaseStatement, name: str) -> bool:
    from .names import statement_bindings

    return any(b.name == name for b in statement_bindings(stmt))


def _binds_small(small: cst.BaseSmallStatement, name: str) -> bool:
    return _binds(cst.SimpleStatementLine(body=[small]), name)


def _method_call_on(small: cst.BaseSmallStatement, name: str) -> tuple[str, cst.Call] | None:
    """``name.method(args)`` as a statement, with ``name`` nowhere in the arguments."""
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
                    target.value.value == name and target.attr.value == "requires_grad" and \
                    name not in names_in(small.value):
                return "requires_grad_", cst.Call(cst.Name("requires_grad_"))
        return None
    call = small.value
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and
            func.value.value == name):
        return None
    if any(name in names_in(arg.value) for arg in call.args):
        return None
    return func.attr.value, call
