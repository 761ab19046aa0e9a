from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, CustomOp, FunctionRef
from ...analysis.op_types import parse_schema
from ...analysis.param_flow import ParamFlow
from ...analysis.scopes import real_site
from ...findings import Applicability, Severity
from ..edits import append_method
from .helpers import op_label, op_params_of, site_in, tensor_kinds
from ..base import MENTIONS_TORCH_LIBRARY, FixProposal, Invalid, Replacement, Report, Rule, Valid

_TORCH_MESSAGE = ("RuntimeError: ... The output of this custom operator (1) must not also be "
                  "an input to this custom operator and (2) may not alias any inputs to this "
                  "custom operator or other returns.")


class CustomOpReturnsInputAlias(Rule):
    """## What it does
    Checks what the function of a `torch.library.custom_op` (or `triton_op`, or one of its
    `register_kernel` kernels) returns: an input tensor itself (`return x`), a view of one
    (`x.view(...)`, `x.t()`, `x[0]`, `x.T`, `x.detach()`, ...), or a method that returns
    the tensor itself in the common case (`x.contiguous()` of a contiguous tensor,
    `x.reshape(...)` of a contiguous one, `x.to(...)`/`x.float()` of a tensor already of
    that dtype and device). Elements of a returned tuple or list are checked one by one.

    ## Why is this bad?
    A custom op must return new tensors. torch 2.13 checks every call (eager mode included)
    and raises: `RuntimeError: f (with implementation in <module ...>): The output of this
    custom operator (1) must not also be an input to this custom operator and (2) may not
    alias any inputs to this custom operator or other returns. The most common way to
    trigger this error is if we have y = custom_op(x) and y and x are the same Tensor.
    Please instead return a clone of the offending output tensor(s) (e.g. return x.clone())
    or refactor the custom operator to not return y.` Listing the input in `mutates_args`
    does not help. Ops tagged `torch.Tag.inplace`/`torch.Tag.out`, and ops whose explicit
    schema declares the alias (`Tensor(a) x -> Tensor(a)`), are not reported.

    The methods that return the tensor itself only in the common case are reported as
    warnings: `x.contiguous()` raises for a contiguous `x`, which is what most callers pass.

    ## Example
    ```python
    @torch.library.custom_op("mylib::flatten", mutates_args=())
    def flatten(x: torch.Tensor) -> torch.Tensor:
        return x.view(-1)
    ```

    Use instead:
    ```python
    @torch.library.custom_op("mylib::flatten", mutates_args=())
    def flatten(x: torch.Tensor) -> torch.Tensor:
        return x.view(-1).clone()
    ```

    ## Fix safety
    Appending `.clone()` is safe: the op returns the same values, in a new tensor, which is
    what torch requires.
    """

    code = "GL033"
    name = "custom-op-returns-input-alias"
    severity = Severity.ERROR
    summary = "a custom op returns one of its inputs, or a view of one"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::flatten", mutates_args=())
            def flatten(x: torch.Tensor) -> torch.Tensor:
                if x.dim() == 1:
                    return x.clone()
                y = x.reshape(-1).clone()
                return y
            """),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::sin_", mutates_args=("x",), tags=torch.Tag.inplace)
            def sin_(x: torch.Tensor) -> torch.Tensor:
                x.sin_()
                return x
            """, why="an inplace-tagged op returns its first argument"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::flatten", mutates_args=())
            def flatten(x: torch.Tensor) -> torch.Tensor:
                return x.view(-1)
            """,
            message="custom op `mylib::flatten` returns a view of `x` (`x.view(-1)`): custom ops "
                    f"must return new tensors; every call raises `{_TORCH_MESSAGE}`",
            range=(5, 12, 5, 22),
            fixed="""
            import torch

            @torch.library.custom_op("mylib::flatten", mutates_args=())
            def flatten(x: torch.Tensor) -> torch.Tensor:
                return x.view(-1).clone()
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::maybe_relu", mutates_args=())
            def maybe_relu(x: torch.Tensor, enabled: bool) -> torch.Tensor:
                if not enabled:
                    return x
                return x.relu()
            """,
            message="custom op `mylib::maybe_relu` returns `x` itself: custom ops must return "
                    f"new tensors; every call raises `{_TORCH_MESSAGE}`",
            fixed="""
            import torch

            @torch.library.custom_op("mylib::maybe_relu", mutates_args=())
            def maybe_relu(x: torch.Tensor, enabled: bool) -> torch.Tensor:
                if not enabled:
                    return x.clone()
                return x.relu()
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_op_parts:
            if op.style == "define" or op.params is None or op.tags_node is not None or \
                    _schema_declares_alias(op):
                continue
            functions: list[FunctionRef] = []
            if op.function is not None:
                functions.append(op.function)
            functions += [r.function for r in op.registered("kernel") if r.function is not None]
            for function in functions:
                if isinstance(function.node, cst.FunctionDef) and block.holds(function.site):
                    yield from self._check_function(block, op, function)

    def _check_function(self, block: BlockAnalysis, op: CustomOp, function: FunctionRef
                        ) -> Iterator[Report]:
        assert isinstance(function.node, cst.FunctionDef)
        kinds = tensor_kinds(op_params_of(op, function.node))
        flow = ParamFlow(function.node, kinds, block.context, function.scope)
        for alias in flow.returned_aliases():
            site = site_in(function, alias.statement)
            site = real_site(site) if site is not None else None
            if site is None:
                continue
            if alias.certain:
                message = (f"custom op {op_label(op)} returns {alias.how}: custom ops must return "
                           f"new tensors; every call raises `{_TORCH_MESSAGE}`")
            else:
                message = (f"custom op {op_label(op)} returns {alias.how}, which is the input "
                           f"`{alias.param}` itself in the common case (already contiguous, of "
                           f"that dtype and device): then the call raises `{_TORCH_MESSAGE}`")
            fix = None
            if not alias.whole_list:
                code = block.code(alias.node)
                fix = FixProposal("Return a clone", Applicability.SAFE,
                                  (Replacement(alias.node, append_method(alias.node, "clone", code),
                                               site),))
            yield Report(alias.node, message, site, fix=fix,
                         severity=None if alias.certain else Severity.WARNING)


def _schema_declares_alias(op: CustomOp) -> bool:
    if op.schema_node is None:
        return False
    schema = parse_schema(op.schema) if op.schema is not None else None
    return schema is None or schema.has_aliased_return or any(a.aliased for a in schema.arguments)
