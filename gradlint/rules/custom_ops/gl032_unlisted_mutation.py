from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, CustomOp, FunctionRef
from ...analysis.param_flow import ParamFlow
from ...analysis.scopes import real_site
from ...findings import Applicability, Severity
from .helpers import op_label, op_params_of, site_in, tensor_kinds
from ..base import MENTIONS_TORCH_LIBRARY, FixProposal, Invalid, Replacement, Report, Rule, Valid


class UnlistedMutation(Rule):
    """## What it does
    Checks that a custom operator (`torch.library.custom_op`, `triton_op`, or
    `torch.library.define` with its kernels) declares every input it writes to: in
    `mutates_args`, or as `Tensor(a!)` in its schema. A write is an in-place method on the
    input or on a view of it (`x.add_(...)`, `out.copy_(...)`, `x[0].zero_()`), an indexed
    assignment (`out[...] = ...`), an augmented assignment (`x += ...`), an `out=`
    argument, or an in-place torch function (`torch.nn.init.zeros_(w)`,
    `F.relu(x, inplace=True)`).

    ## Why is this bad?
    Nothing fails: torch trusts `mutates_args` ("This MUST be accurate, otherwise, the
    behavior is undefined"). In eager mode the write happens; under `torch.compile` the
    graph treats the input as unchanged, so the write can be lost or reordered. Measured
    with torch 2.13: an op that runs `out.copy_(x.sin())` with `mutates_args=()` fills
    `out` in eager mode, but the same function compiled (`backend="aot_eager"`) returns
    `out` still zero. `torch.library.opcheck` fails with `test_schema failed with Argument
    out is not defined as mutable but was mutated`.

    ## Example
    ```python
    @torch.library.custom_op("mylib::sin_into", mutates_args=())
    def sin_into(x: torch.Tensor, out: torch.Tensor) -> None:
        out.copy_(x.sin())
    ```

    Use instead:
    ```python
    @torch.library.custom_op("mylib::sin_into", mutates_args=("out",))
    def sin_into(x: torch.Tensor, out: torch.Tensor) -> None:
        out.copy_(x.sin())
    ```

    A write through a name rebound to a method that returns the input itself in the common
    case (`x = x.contiguous()`, `x = x.float()`) is reported as a warning.

    ## Fix safety
    The name is added to a literal `mutates_args`: safe, it states what the function
    does (unsafe for the warnings, where writing into a copy may be what was meant). There is no fix when the op has an explicit schema, or a registered backward (an
    op that mutates an input cannot have one: `register_autograd` raises `RuntimeError:
    Cannot register autograd formula for non-functional operator`; write into a clone
    instead).
    """

    code = "GL032"
    name = "unlisted-mutation"
    severity = Severity.ERROR
    summary = "a custom op writes to an input that mutates_args (or its schema) does not list"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::sin_into", mutates_args=("out",))
            def sin_into(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x.sin())
            """),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::bump", mutates_args="unknown")
            def bump(x: torch.Tensor) -> None:
                x.add_(1)
            """, why='mutates_args="unknown"'),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::sin_into", mutates_args=())
            def sin_into(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x.sin())
            """,
            message="custom op `mylib::sin_into` writes to its input `out` (`out.copy_(...)`) "
                    "but mutates_args does not list it: torch then assumes `out` is unchanged "
                    "(undefined behaviour: under torch.compile the write can be lost; opcheck "
                    "fails `test_schema`)",
            range=(5, 5, 5, 23),
            fixed="""
            import torch

            @torch.library.custom_op("mylib::sin_into", mutates_args=("out",))
            def sin_into(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x.sin())
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::scatter_rows", mutates_args=["src"])
            def scatter_rows(src: torch.Tensor, out: torch.Tensor, rows: list[int]) -> None:
                view = out.view(-1, src.shape[-1])
                view[rows] = src
            """,
            message="custom op `mylib::scatter_rows` writes to its input `out` (`view[rows] = "
                    "...`) but mutates_args does not list it: torch then assumes `out` is "
                    "unchanged (undefined behaviour: under torch.compile the write can be lost; "
                    "opcheck fails `test_schema`)",
            fixed="""
            import torch

            @torch.library.custom_op("mylib::scatter_rows", mutates_args=["src", "out"])
            def scatter_rows(src: torch.Tensor, out: torch.Tensor, rows: list[int]) -> None:
                view = out.view(-1, src.shape[-1])
                view[rows] = src
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_op_parts:
            mutates = op.mutates_args
            if mutates is None or mutates.unknown or mutates.names is None or op.params is None:
                continue
            functions: list[FunctionRef] = []
            if op.function is not None:
                functions.append(op.function)
            functions += [r.function for r in op.kernels if r.function is not None]
            for function in functions:
                if not isinstance(function.node, cst.FunctionDef) or not block.holds(function.site):
                    continue
                yield from self._check_function(block, op, function)

    def _check_function(self, block: BlockAnalysis, op: CustomOp, function: FunctionRef
                        ) -> Iterator[Report]:
        assert isinstance(function.node, cst.FunctionDef)
        mapping = op_params_of(op, function.node)
        kinds = tensor_kinds(mapping)
        flow = ParamFlow(function.node, kinds, block.context, function.scope)
        reported: set[str] = set()
        for write in flow.writes():
            op_param = mapping[write.param]
            if op_param.mutable or op_param.name in reported:
                continue
            site = site_in(function, write.statement)
            site = real_site(site) if site is not None else None
            if site is None:
                continue
            reported.add(op_param.name)
            how = write.how
            if not write.certain:
                how += f"; `{flow.rebinding[write.param]}` is the input itself in the common case"
            report = self._report(block, op, op_param.name, write.param, how, write.node, site)
            if not write.certain:
                fix = report.fix
                if fix is not None:  # the write may not be meant: cloning may be the better fix
                    fix = FixProposal(fix.title, Applicability.UNSAFE, fix.replacements)
                report = Report(report.node, report.message.replace(" writes to ", " may write to ", 1),
                                report.site, fix=fix, severity=Severity.WARNING)
            yield report

    def _report(self, block, op: CustomOp, op_param: str, local: str, how: str,
                node: cst.CSTNode, site) -> Report:
        assert op.mutates_args is not None
        declared = "mutates_args does not list it" if op.style != "define" and op.schema_node is None \
            else f"its schema does not mark it as written (`Tensor(a!) {op_param}`)"
        message = (f"custom op {op_label(op)} writes to its input `{local}` ({how}) but "
                   f"{declared}: torch then assumes `{local}` is unchanged (undefined behaviour: "
                   f"under torch.compile the write can be lost; opcheck fails `test_schema`)")
        fix = None
        if op.backward is not None:
            message += ("; an op that mutates cannot have a registered backward: write into a "
                        "new tensor and return it instead")
        elif op.style != "define" and op.schema_node is None:
            fix = _add_name(op, op_param)
        return Report(node, message, site, fix=fix)


def _add_name(op: CustomOp, name: str) -> FixProposal | None:
    mutates = op.mutates_args
    assert mutates is not None and mutates.names is not None
    node = mutates.node
    quote = mutates.elements[0].quote if mutates.elements else '"'
    new = f"{quote}{name}{quote}"
    module = cst.Module(body=())
    params = {p.name for p in op.params or ()}
    # names that are not parameters are dropped (torch rejects them: GL031)
    old = [node_code(e, module) for e, listed in zip(mutates.elements, mutates.names)
           if listed in params]
    if isinstance(node, cst.Tuple):
        items = old + [new]
        text = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    elif isinstance(node, cst.List):
        text = "[" + ", ".join(old + [new]) + "]"
    elif isinstance(node, (cst.Set, cst.Dict)):
        text = "{" + ", ".join(old + [new]) + "}"
    else:
        return None
    return FixProposal(f"Add `{name}` to mutates_args", Applicability.SAFE,
                       (Replacement(node, text, op.site),))
