"""The analysis of one block, as rules see it: parsed code plus lazily built models."""

from __future__ import annotations

from functools import cached_property
from typing import Sequence

import libcst as cst

from .codegen import node_code
from .autograd_functions import AutogradFunction, find_autograd_functions
from .custom_ops import CustomOp, custom_ops, ops_by_top_statement
from .checked_code import CheckedCode, FunctionIndex, checked_code
from .facts import Evaluator
from .func_transforms import TransformedApply, transformed_applies
from .names import mark_without_walrus
from .gradcheck_calls import GradcheckCall, find_gradcheck_calls, may_call_gradcheck
from .scopes import ModuleContext, Site


class BlockAnalysis:
    def __init__(self, module: cst.Module, text: str, context: ModuleContext,
                 indexes: Sequence[int], evaluator: Evaluator, gradcheck_aliases: Sequence[str] = ()):
        self.module = module  # the block, parsed on its own
        self.text = text
        self.context = context
        self.indexes = indexes  # positions of the block's statements in the module body
        self.evaluator = evaluator
        self.gradcheck_aliases = gradcheck_aliases  # module-level names bound to gradcheck
        # top-level statements outside the block that a model used here read, beyond what
        # block summaries capture (a custom op's backward in another block): the block's
        # findings hold only while those statements' blocks are unchanged (ids of statements)
        self.statements_read: set[int] = set()
        # answers the rules share about this block, by the name of the question
        self.shared: dict[str, dict] = {}
        if ":=" not in text:
            mark_without_walrus(module.body)

    def code(self, node: cst.CSTNode) -> str:
        return node_code(node, self.module)

    @cached_property
    def gradcheck_calls(self) -> list[GradcheckCall]:
        if not may_call_gradcheck(self.text, self.gradcheck_aliases):
            return []
        return list(find_gradcheck_calls(self.context.statements, self.indexes, self.context))

    @cached_property
    def autograd_functions(self) -> list[AutogradFunction]:
        return list(find_autograd_functions(self.context.statements, self.indexes, self.context))

    def holds(self, site: Site) -> bool:
        """Is the statement at ``site`` in this block?"""
        return id(site.top_statement) in self._top_statements

    def reads(self, site: Site) -> None:
        """A finding of this block depends on the code at ``site`` (noted when it is in
        another block: the block's findings are then cached only with that block's text)."""
        if not self.holds(site):
            self.statements_read.add(id(site.top_statement))

    @cached_property
    def _top_statements(self) -> set[int]:
        return {id(self.context.statements[index]) for index in self.indexes}

    @cached_property
    def custom_ops(self) -> list[CustomOp]:
        """The custom ops created in this block (each op belongs to one block)."""
        return [op for op in self._ops_with_parts_here if self.holds(op.site)]

    @cached_property
    def custom_op_parts(self) -> list[CustomOp]:
        """The custom ops with a piece (definition, function, registration) in this block."""
        found = []
        for op in self._ops_with_parts_here:
            for site in op.sites():
                self.reads(site)
            found.append(op)
        return found

    @cached_property
    def _ops_with_parts_here(self) -> list[CustomOp]:
        """The module's custom ops with a piece in this block, in the module's order (from
        an index of the ops by top-level statement, built once per lint)."""
        by_statement = ops_by_top_statement(self.context)
        positions: set[int] = set()
        for index in self.indexes:
            positions.update(by_statement.get(id(self.context.statements[index]), ()))
        ops = custom_ops(self.context)
        return [ops[position] for position in sorted(positions)]

    @cached_property
    def transformed_applies(self) -> list[TransformedApply]:
        """Function.apply calls run under torch.func transforms called in this block."""
        found = transformed_applies(self.context, self.indexes)
        for use in found:
            self.reads(use.apply_site)
            self.reads(use.function.site)
        return found
    @cached_property
    def function_index(self) -> FunctionIndex:
        """Shared by the module's blocks (its models are of module-level classes)."""
        index = self.context.models.get("function_index")
        if index is None:
            index = self.context.models["function_index"] = FunctionIndex(self.context)
        return index  # type: ignore[return-value]

    def checked_code(self, call: GradcheckCall) -> CheckedCode | None:
        """What ``call`` checks (shared by the rules that ask)."""
        cache = self.__dict__.setdefault("_checked_code", {})
        key = id(call.node)
        if key not in cache:
            cache[key] = checked_code(call, self.function_index)
        return cache[key]
