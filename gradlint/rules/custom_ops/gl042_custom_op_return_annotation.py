from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP
from ...findings import Severity
from .helpers import op_label
from ..base import MENTIONS_TORCH_LIBRARY, Invalid, Report, Rule, Valid


class CustomOpReturnAnnotation(Rule):
    """## What it does
    Checks the return annotation of a function made into an operator with
    `torch.library.custom_op` (or `triton_op`) without an explicit `schema=`: torch infers
    the schema's returns from it, and accepts only `Tensor`, `list[Tensor]`, `int`,
    `float`, `bool`, `torch.types.Number`, a `tuple[...]` of those, and `None` (no
    output).

    ## Why is this bad?
    The decorator raises when the module is imported (torch 2.13):
    `ValueError: infer_schema(func): No return type annotation was provided. Please add
    one. ...` without an annotation, and `ValueError: infer_schema(func): Return has
    unsupported type typing.Optional[torch.Tensor]. The valid types are: ...` for anything
    else (`Optional[Tensor]`, `Sequence[Tensor]`, `tuple[Tensor, ...]`, `str`, ...).

    ## Example
    ```python
    @torch.library.custom_op("mylib::maybe", mutates_args=())
    def maybe(x: torch.Tensor) -> Optional[torch.Tensor]:
        ...
    ```

    Use instead: return a tensor always (an empty one, or a flag tensor), or a
    `list[Tensor]` that may be empty:
    ```python
    @torch.library.custom_op("mylib::maybe", mutates_args=())
    def maybe(x: torch.Tensor) -> list[torch.Tensor]:
        ...
    ```

    ## Fix safety
    There is no fix.
    """

    code = "GL042"
    name = "custom-op-return-annotation"
    severity = Severity.ERROR
    summary = "a custom_op function without a return annotation, or with one torch rejects"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch
            from typing import List, Tuple

            @torch.library.custom_op("mylib::a", mutates_args=())
            def a(x: torch.Tensor) -> Tuple[torch.Tensor, int, float]:
                return x.sin(), 1, 2.0

            @torch.library.custom_op("mylib::b", mutates_args=("x",))
            def b(x: torch.Tensor) -> None:
                x.sin_()

            @torch.library.custom_op("mylib::c", mutates_args=())
            def c(x: torch.Tensor) -> List[torch.Tensor]:
                return [x.sin()]

            @torch.library.custom_op("mylib::d", mutates_args=(), schema="(Tensor x) -> Tensor")
            def d(x):
                return x.sin()
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::mysin", mutates_args=())
            def mysin(x: torch.Tensor):
                return x.sin()
            """,
            message="custom op `mylib::mysin` has no return annotation: torch.library.custom_op "
                    "raises `ValueError: infer_schema(func): No return type annotation was "
                    "provided. Please add one.` when the module is imported",
            range=(4, 5, 4, 10),
        ),
        Invalid(
            """
            import torch
            from typing import Optional

            @torch.library.custom_op("mylib::maybe", mutates_args=())
            def maybe(x: torch.Tensor) -> Optional[torch.Tensor]:
                return x.sin()
            """,
            message="custom op `mylib::maybe` returns `Optional[torch.Tensor]`, which infer_schema "
                    "rejects (ValueError when the module is imported): not one of the supported "
                    "return types (Tensor, list[Tensor], int, float, bool, Number, a tuple of "
                    "those, or None)",
            range=(5, 31, 5, 53),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_ops:
            function = op.function
            if not op.infers_schema or function is None or \
                    not isinstance(function.node, cst.FunctionDef) or not block.holds(function.site):
                continue
            node = function.node
            if node.returns is None:
                message = (f"custom op {op_label(op)} has no return annotation: "
                           f"torch.library.custom_op raises `ValueError: infer_schema(func): No "
                           f"return type annotation was provided. Please add one.` when the "
                           f"module is imported")
                yield Report(node.name, message, function.site)
                continue
            problem = op.return_verdict.problem
            if problem is None:
                continue
            text = " ".join(block.code(node.returns.annotation).split())
            if problem.startswith("not one of") or problem.startswith("a tuple"):
                problem += " (Tensor, list[Tensor], int, float, bool, Number, a tuple of those, or None)"
            message = (f"custom op {op_label(op)} returns `{text}`, which infer_schema rejects "
                       f"(ValueError when the module is imported): {problem}")
            yield Report(node.returns.annotation, message, function.site)
