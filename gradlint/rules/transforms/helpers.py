"""Helpers of the torch.func rules (GL039-GL041)."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis import traverse
from ...analysis.block import BlockAnalysis
from ...analysis.func_transforms import TRANSFORMS, TransformedApply, class_body_start
from ...analysis.scopes import Site, real_site
from ...analysis.traceable import BUILTINS  # calls that keep a Function's methods vmap-compatible
from ..base import Replacement

TRANSFORM_NAMES = frozenset(TRANSFORMS)


def uses(block: BlockAnalysis, wanted) -> Iterator[tuple[TransformedApply, Site, str]]:
    """Transformed applies of this block that ``wanted(use)`` selects, once per reported
    node, with the site to report at and the transform to name."""
    seen: set[int] = set()
    for use in block.transformed_applies:
        transform = wanted(use)
        if transform is None or id(use.report_node) in seen:
            continue
        site = real_site(use.call_site)
        if site is None:
            continue
        seen.add(id(use.report_node))
        yield use, site, transform


def subject(use: TransformedApply) -> str:
    """How a message names what runs under the transform."""
    name = use.function.name
    if use.via is None:
        return f"`{name}.apply`"
    return f"`{use.via}` calls `{name}.apply`, and"


def add_class_attribute(use: TransformedApply, block: BlockAnalysis, text: str) -> Replacement | None:
    """A replacement that adds ``text`` as the first line of the class body."""
    node = use.function.node
    body = node.body
    if not isinstance(body, cst.IndentedBlock) or class_body_start(node) is None:
        return None
    if use.function.site.scope.kind != "module" or len(use.function.site.frames) != 1:
        return None  # only module-level classes: their body indentation is known
    indent = body.indent if body.indent is not None else (
        block.module.default_indent if block.holds(use.function.site) else "    ")
    header = node_code(body.header)
    return Replacement(body.header, f"{header}{indent}{text}\n", use.function.site)


_NOT_BATCHABLE = frozenset({"item", "tolist", "numpy", "data_ptr", "__array__"})


def vmap_compatible(use: TransformedApply, context) -> bool:
    """Do the Function's own methods look like plain PyTorch code vmap can batch: calls to
    torch functions, tensor methods (no `.item()`, `.numpy()`, in-place ops) and a few
    builtins, and no Python control flow?"""
    node = use.function.node
    for stmt in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
        if not isinstance(stmt, cst.FunctionDef):
            continue
        checker = _Batchable(context, use)
        traverse.visit(stmt.body, checker)
        if not checker.ok:
            return False
    return True


class _Batchable(cst.CSTVisitor):
    def __init__(self, context, use: TransformedApply):
        self.context = context
        self.scope = use.function.site.scope
        self.ok = True

    def visit_If(self, node: cst.If) -> None:
        self.ok = False

    def visit_While(self, node: cst.While) -> None:
        self.ok = False

    def visit_For(self, node: cst.For) -> None:
        self.ok = False

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.ok = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            qualified = self.context.qualified(func, self.scope)
            if qualified is not None:
                if not qualified.startswith("torch."):
                    self.ok = False
                return
            if method in _NOT_BATCHABLE or (method.endswith("_") and not method.startswith("_")):
                self.ok = False
            return
        if isinstance(func, cst.Name):
            qualified = self.context.qualified(func, self.scope)
            if qualified is not None and qualified.startswith("torch."):
                return
            if func.value in BUILTINS and self.scope.binding_scope(func.value) is None:
                return
        self.ok = False
