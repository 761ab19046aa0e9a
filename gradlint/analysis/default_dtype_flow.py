"""torch's default dtype at one place of a function, in a module whose functions set it.

A module that calls ``torch.set_default_dtype`` only at its top level has one default
(scopes.default_dtype_of). When its functions call it (``torch.set_default_dtype(
torch.float64)`` at the start of a test, float32 restored at the end), no single value
holds for the module; but inside one function, a factory that follows such a call in
straight-line code gets the dtype that call set, as long as nothing between could have
changed it again. Anything else is unknown: the default another test left behind, a
helper's call, a loop's earlier iteration, a ``try`` whose body may have run halfway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import libcst as cst

from . import torch_api
from .fact_types import DtypeFact
from .traverse import visit
from .names import body_statements
from .scopes import Site

if TYPE_CHECKING:
    from .facts import Evaluator

__all__ = ["default_dtype_at"]

# builtins that run no code of the caller's: they cannot change the default dtype
_INERT_BUILTINS = frozenset({
    "print", "len", "range", "isinstance", "issubclass", "tuple", "list", "dict", "set",
    "frozenset", "zip", "enumerate", "float", "int", "bool", "str", "complex", "abs", "min",
    "max", "sum", "sorted", "reversed", "repr", "round", "type", "id", "hash", "format", "any",
    "all", "divmod", "pow", "chr", "ord", "slice", "hasattr",
})
_SETS_DEFAULT = torch_api.SET_DEFAULT_DTYPE | torch_api.SET_DEFAULT_TENSOR_TYPE
_UNCHANGED = object()  # a statement that cannot change the default dtype


def default_dtype_at(evaluator: "Evaluator", site: Site) -> str | None:
    """The default dtype where ``site`` runs, or None when it is not known."""
    context = evaluator.context
    known = context.default_dtype
    if known is not None or not context.default_dtype_set_in_functions:
        return known
    if site.scope.kind != "function":
        return None
    for level in range(len(site.frames) - 1, -1, -1):
        frame = site.frames[level]
        owner = frame.owner
        if isinstance(owner, (cst.For, cst.While)):
            return None  # an earlier iteration may have changed it
        for index in range(frame.index - 1, -1, -1):
            dtype = _set_by(evaluator, frame.statements[index], site)
            if dtype is not _UNCHANGED:
                return dtype  # type: ignore[return-value]
        if owner is None:
            continue
        if isinstance(owner, cst.If):
            if _may_change(evaluator, [owner.test], site):
                return None  # the test ran first
        elif isinstance(owner, cst.With):
            if _may_change(evaluator, list(owner.items), site):
                return None  # `with set_default_dtype(...)`: a context manager may set it
        elif isinstance(owner, (cst.Try, cst.TryStar)):
            if frame.statements is not body_statements(owner.body) and \
                    _may_change(evaluator, [owner], site):
                return None  # a handler, else or finally: the try body may have run (partly)
        else:
            return None
    return None  # what the caller left: not known


def _set_by(evaluator: "Evaluator", stmt: cst.BaseStatement, site: Site) -> object:
    """The dtype ``torch.set_default_dtype(X)`` sets (None: not known), _UNCHANGED for a
    statement that cannot change the default, None for one that may."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
            isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call):
        call = stmt.body[0].value
        if evaluator.qualified(call.func, site) in torch_api.SET_DEFAULT_DTYPE and \
                len(call.args) == 1 and not call.args[0].star and call.args[0].keyword is None:
            fact = evaluator.fact(call.args[0].value, site)
            return fact.dtype if isinstance(fact, DtypeFact) else None
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return _UNCHANGED  # (defined, not run; decorators of the module's own are followed by name)
    return None if _may_change(evaluator, [stmt], site) else _UNCHANGED


def _may_change(evaluator: "Evaluator", nodes: Sequence[cst.CSTNode], site: Site) -> bool:
    """A call in ``nodes`` that may change the default dtype: anything but torch's own
    functions that do not set it, inert builtins and unittest's assertions."""
    found: list[cst.Call] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            name = evaluator.qualified(call.func, site)
            if name is not None:
                if name.split(".")[0] == "torch" and name not in _SETS_DEFAULT and \
                        "default_dtype" not in name and "default_tensor_type" not in name:
                    return  # (torch.testing's `set_default_dtype` context manager counts)
            elif evaluator.builtin_name(call.func, site) in _INERT_BUILTINS:
                return
            elif isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and \
                    call.func.value.value == "self" and call.func.attr.value.startswith("assert"):
                return  # unittest assertions
            found.append(call)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False  # a nested def runs only when called

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    for node in nodes:
        visit(node, Calls())
    return bool(found)

