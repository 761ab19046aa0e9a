"""What the rules about autograd Functions share: which methods save tensors, how a message
shows an in-place change."""

from __future__ import annotations

import re

import libcst as cst

from ...analysis.autograd_functions import AutogradFunction, Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import Mutation

MENTIONS_SAVE = re.compile(r"save_for_backward")


def saving_methods(function: AutogradFunction) -> list[Method]:
    """The methods of a Function (its own, not inherited) that may save tensors."""
    found = []
    for name in ("forward", "setup_context"):
        method = getattr(function, name)
        if method is not None and name not in function.inherited and method.context_name:
            if name == "forward" and function.style != "ctx":
                continue
            found.append(method)
    return found


def mutation_text(block: BlockAnalysis, mutation: Mutation) -> str:
    """How a message shows an in-place change: `x += ...`, `x[i] = ...`, or the call."""
    node = mutation.node
    if isinstance(node, cst.AugAssign):
        return f"{block.code(node.target)} {block.code(node.operator).strip()} ..."
    if isinstance(node, cst.Subscript):
        return f"{block.code(node)} = ..."
    text = " ".join(block.code(node).split())
    return text if len(text) <= 40 else text[:39] + "…"
