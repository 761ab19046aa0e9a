"""The analysis of one block, as rules see it: parsed code plus lazily built models."""

from __future__ import annotations

from functools import cached_property
from typing import Sequence

import libcst as cst

from .autograd_functions import AutogradFunction, find_autograd_functions
from .checked_code import CheckedCode, FunctionIndex, checked_code
from .facts import Evaluator
from .gradcheck_calls import GradcheckCall, find_gradcheck_calls, may_call_gradcheck
from .scopes import ModuleContext


class BlockAnalysis:
    def __init__(self, module: cst.Module, text: str, context: ModuleContext,
                 indexes: Sequence[int], evaluator: Evaluator, gradcheck_aliases: Sequence[str] = ()):
        self.module = module  # the block, parsed on its own
        self.text = text
        self.context = context
        self.indexes = indexes  # positions of the block's statements in the module body
        self.evaluator = evaluator
        self.gradcheck_aliases = gradcheck_aliases  # module-level names bound to gradcheck

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def gradcheck_calls(self) -> list[GradcheckCall]:
        if not may_call_gradcheck(self.text, self.gradcheck_aliases):
            return []
        return list(find_gradcheck_calls(self.context.statements, self.indexes, self.context))

    @cached_property
    def autograd_functions(self) -> list[AutogradFunction]:
        return list(find_autograd_functions(self.context.statements, self.indexes, self.context))

    @cached_property
    def function_index(self) -> FunctionIndex:
        return FunctionIndex(self.context)

    def checked_code(self, call: GradcheckCall) -> CheckedCode | None:
        """What ``call`` checks (shared by the rules that ask)."""
        cache = self.__dict__.setdefault("_checked_code", {})
        key = id(call.node)
        if key not in cache:
            cache[key] = checked_code(call, self.function_index)
        return cache[key]
