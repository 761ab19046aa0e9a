"""A module's ``Cls.apply(...)`` calls, found in one walk per lint.

Rules that ask how the module calls a Function (GL004: how many inputs the calls pass; GL022:
what the calls pass for a defaulted input) read this index instead of walking the module once
per Function (which made a file of many Functions cost the square of its size)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from . import memos
from .names import BindingKind
from .scopes import ModuleContext
from .traverse import visit

_INDEX = memos.memo(memos.NEAR_ENTRIES)


@dataclass
class ApplyUses:
    """How a module uses a name: its direct ``name.apply(...)`` calls, and how many times it
    appears otherwise (aliased, passed on, subclassed, ``name.apply`` not called); a class
    statement's own name is not a use."""

    calls: list[cst.Call] = field(default_factory=list)
    other_uses: int = 0


def apply_uses(context: ModuleContext, name: str) -> ApplyUses:
    """How the module uses ``name``; nothing (no calls) unless ``name`` is bound once, to a class
    (a rebound name may be another class)."""
    bindings = context.scope.table.bindings.get(name, [])
    if len(bindings) != 1 or bindings[0].kind != BindingKind.CLASS:
        return ApplyUses()
    index = memos.recall(_INDEX, id(context), context)
    if index is memos.MISSING:
        index = _index(context)
        memos.remember(_INDEX, id(context), context, index)
    return index.get(name) or ApplyUses()  # type: ignore[union-attr]


def _index(context: ModuleContext) -> dict[str, ApplyUses]:
    found: dict[str, ApplyUses] = {}
    receivers: set[int] = set()
    names: list[cst.Name] = []

    class Uses(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            receivers.add(id(node.name))

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "apply" and isinstance(func.value, cst.Name):
                found.setdefault(func.value.value, ApplyUses()).calls.append(node)
                receivers.add(id(func.value))

        def visit_Name(self, node: cst.Name) -> None:
            names.append(node)

    for stmt in context.statements:
        visit(stmt, Uses())
    for node in names:
        if id(node) not in receivers:
            found.setdefault(node.value, ApplyUses()).other_uses += 1
    return found
