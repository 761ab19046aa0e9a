from __future__ import annotations

from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, KEYWORD_ONLY
from ...findings import Severity
from .helpers import op_label
from ..base import MENTIONS_TORCH_LIBRARY, Invalid, Report, Rule, Valid


class CustomOpKeywordOnlyTensor(Rule):
    """## What it does
    Checks for keyword-only Tensor parameters (after `*`) in a `torch.library.custom_op`
    (or `triton_op`), which torch does not support except in ops tagged `torch.Tag.out`.

    ## Why is this bad?
    The decorator raises when the module is imported (torch 2.13): `NotImplementedError:
    custom_op with kwarg-only Tensor args. Please make your tensors not kwarg-only. Got:
    f(Tensor x, *, Tensor y) -> Tensor`. For an op defined with `torch.library.define`,
    `register_autograd` raises `NotImplementedError: register_autograd with kwarg-only
    Tensor args.` instead. Keyword-only parameters of other types (`int`, `float`, `str`...)
    are fine.

    ## Example
    ```python
    @torch.library.custom_op("mylib::affine", mutates_args=())
    def affine(x: torch.Tensor, *, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
        ...
    ```

    Use instead:
    ```python
    @torch.library.custom_op("mylib::affine", mutates_args=())
    def affine(x: torch.Tensor, weight: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        ...
    ```

    ## Fix safety
    There is no fix: moving the parameter changes the op's schema, so its registered
    backward must then return a gradient for it and its `setup_context` receives it in
    `inputs`.
    """

    code = "GL043"
    name = "custom-op-keyword-only-tensor"
    severity = Severity.ERROR
    summary = "a custom_op has a keyword-only Tensor parameter, which torch does not support"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::affine", mutates_args=())
            def affine(x: torch.Tensor, weight: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
                return x * weight + eps
            """),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::sin_out", mutates_args=("out",), tags=torch.Tag.out)
            def sin_out(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
                torch.sin(x, out=out)
                return out
            """, why="out= ops take their outputs keyword-only"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::affine", mutates_args=())
            def affine(x: torch.Tensor, *, weight: torch.Tensor) -> torch.Tensor:
                return x * weight
            """,
            message="custom op `mylib::affine` has the keyword-only Tensor parameter `weight`: "
                    "torch raises `NotImplementedError: custom_op with kwarg-only Tensor args. "
                    "Please make your tensors not kwarg-only.` when the module is imported; move "
                    "it before the `*`",
            range=(4, 32, 4, 38),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_ops:
            if op.style == "define" or op.params is None or op.tags_node is not None:
                continue
            for param in op.params:
                if param.kind != KEYWORD_ONLY or not param.is_tensor or param.node is None:
                    continue
                message = (f"custom op {op_label(op)} has the keyword-only Tensor parameter "
                           f"`{param.name}`: torch raises `NotImplementedError: custom_op with "
                           f"kwarg-only Tensor args. Please make your tensors not kwarg-only.` "
                           f"when the module is imported; move it before the `*`")
                site = op.function.site if op.function is not None else op.site
                yield Report(param.node.name, message, site)
                break
