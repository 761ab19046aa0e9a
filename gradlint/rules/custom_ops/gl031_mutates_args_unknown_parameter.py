from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, CustomOp
from ...analysis.op_types import parse_schema
from ...findings import Applicability, Severity
from .helpers import op_label
from ..base import MENTIONS_TORCH_LIBRARY, FixProposal, Invalid, Replacement, Report, Rule, Valid


class MutatesArgsUnknownParameter(Rule):
    """## What it does
    Checks the `mutates_args=` of `torch.library.custom_op` (and `triton_op`): every name
    must be a parameter of the function, and a Tensor (or a list of Tensors); the value must
    be a sequence of names or the string `"unknown"`; with an explicit `schema=`, the names
    must be the arguments the schema marks as written (`Tensor(a!)`).

    ## Why is this bad?
    The decorator raises when the module is imported (torch 2.13):

    - `ValueError: infer_schema(func): {'y'} in mutates_args were not found in the custom
      op's signature. mutates_args should contain the names of all args that the custom op
      mutates, or just the string 'unknown' if you don't know. ...`
    - `ValueError: infer_schema(func): Parameter n is in mutable_args but only Tensors or
      collections of Tensors can be mutated ...`
    - `ValueError: mutates_args must either be a sequence of the names of the arguments that
      are mutated or the string 'unknown'.` for `mutates_args="x"` (a string is not a
      sequence of names);
    - `ValueError: Attempted to create a custom op with mutates_args=... and schema=...` when
      the two disagree.

    ## Example
    ```python
    @torch.library.custom_op("mylib::fill", mutates_args=("output",))
    def fill(out: torch.Tensor, value: float) -> None:
        out.fill_(value)
    ```

    Use instead:
    ```python
    @torch.library.custom_op("mylib::fill", mutates_args=("out",))
    def fill(out: torch.Tensor, value: float) -> None:
        out.fill_(value)
    ```

    ## Fix safety
    `mutates_args="x"` naming a parameter becomes `("x",)`: safe, that is what the string
    meant. A misspelt name with exactly one close Tensor parameter is renamed: unsafe, the
    closest name is a guess.
    """

    code = "GL031"
    name = "mutates-args-unknown-parameter"
    severity = Severity.ERROR
    summary = "mutates_args names something that is not a Tensor parameter of the custom op"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::fill", mutates_args={"out"})
            def fill(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x)
            """),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::fill", mutates_args="unknown")
            def fill(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x)
            """, why='mutates_args="unknown" assumes every input is mutated'),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::fill", mutates_args=("output",))
            def fill(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x)
            """,
            message="mutates_args names `output`, which is not a parameter of custom op "
                    "`mylib::fill` (parameters: x, out): torch raises `ValueError: "
                    "infer_schema(func): {'output'} in mutates_args were not found in the "
                    "custom op's signature.` when the module is imported",
            range=(3, 55, 3, 63),
            fixed="""
            import torch

            @torch.library.custom_op("mylib::fill", mutates_args=("out",))
            def fill(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x)
            """,
            applicability="unsafe",
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::fill", mutates_args="out")
            def fill(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x)
            """,
            message='mutates_args="out" is a string, not a sequence of names: torch raises '
                    "`ValueError: mutates_args must either be a sequence of the names of the "
                    "arguments that are mutated or the string 'unknown'.`; write `(\"out\",)`",
            fixed="""
            import torch

            @torch.library.custom_op("mylib::fill", mutates_args=("out",))
            def fill(x: torch.Tensor, out: torch.Tensor) -> None:
                out.copy_(x)
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_ops:
            mutates = op.mutates_args
            if op.style == "define" or mutates is None or mutates.node is None:
                continue
            if mutates.invalid_string is not None:
                yield self._string(op, mutates.node, mutates.invalid_string)
                continue
            if op.schema_node is not None:
                report = self._against_schema(op)
                if report is not None:
                    yield report
                continue
            if mutates.names is None or op.params is None or \
                    any(p.kind in ("var_keyword", "var_positional") for p in op.params):
                continue
            params = {p.name: p for p in op.params}
            for name, element in zip(mutates.names, mutates.elements):
                param = params.get(name)
                if param is None:
                    yield self._unknown(op, name, element)
                elif param.is_tensor is False:
                    message = (f"mutates_args names `{name}`, a `{param.annotation_text}` parameter "
                               f"of custom op {op_label(op)}: only Tensors (or lists of Tensors) "
                               f"can be mutated; torch raises `ValueError: infer_schema(func): "
                               f"Parameter {name} is in mutable_args but only Tensors or "
                               f"collections of Tensors can be mutated`")
                    yield Report(element, message, op.site)

    def _unknown(self, op: CustomOp, name: str, element: cst.SimpleString) -> Report:
        assert op.params is not None
        listed = ", ".join(p.name for p in op.params)
        message = (f"mutates_args names `{name}`, which is not a parameter of custom op "
                   f"{op_label(op)} (parameters: {listed}): torch raises `ValueError: "
                   f"infer_schema(func): {{'{name}'}} in mutates_args were not found in the "
                   f"custom op's signature.` when the module is imported")
        tensors = [p.name for p in op.params if p.is_tensor]
        import difflib  # (only for this message)

        close = difflib.get_close_matches(name, tensors, n=2, cutoff=0.6)
        fix = None
        if len(close) == 1 and close[0] not in (op.mutates_args.names or ()):  # type: ignore[union-attr]
            quote = element.value[: len(element.prefix) + len(element.quote)]
            fix = FixProposal(f"Replace with `{close[0]}`", Applicability.UNSAFE,
                              (Replacement(element, f"{quote}{close[0]}{element.quote}", op.site),))
        return Report(element, message, op.site, fix=fix)

    def _string(self, op: CustomOp, node: cst.BaseExpression, value: str) -> Report:
        message = (f'mutates_args="{value}" is a string, not a sequence of names: torch raises '
                   f"`ValueError: mutates_args must either be a sequence of the names of the "
                   f"arguments that are mutated or the string 'unknown'.`")
        fix = None
        names = {p.name for p in op.params or ()}
        if value in names and isinstance(node, cst.SimpleString):
            message += f'; write `("{value}",)`'
            fix = FixProposal(f'Write `("{value}",)`', Applicability.SAFE,
                              (Replacement(node, f"({node.value},)", op.site),))
        return Report(node, message, op.site, fix=fix)

    def _against_schema(self, op: CustomOp) -> Report | None:
        mutates = op.mutates_args
        schema = parse_schema(op.schema) if op.schema is not None else None
        if schema is None or mutates is None or mutates.names is None or mutates.node is None:
            return None
        written = [a.name for a in schema.arguments if a.mutable]
        if set(written) == set(mutates.names):
            return None
        listed = ", ".join(mutates.names) if mutates.names else "nothing"
        marked = ", ".join(written) if written else "nothing"
        message = (f"mutates_args lists {listed} but the schema of custom op {op_label(op)} "
                   f"marks {marked} as written (`Tensor(a!)`): torch raises `ValueError: "
                   f"Attempted to create a custom op with `mutates_args=...` and `schema=...`` "
                   f"when the module is imported")
        return Report(mutates.node, message, op.site)
