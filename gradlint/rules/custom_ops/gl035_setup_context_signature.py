from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP
from ...findings import Severity
from .helpers import call_name, op_label
from ..base import MENTIONS_TORCH_LIBRARY, Invalid, Report, Rule, Valid


class SetupContextSignature(Rule):
    """## What it does
    Checks the `setup_context` registered with `register_autograd` for a custom op. torch
    calls it with keywords: `setup_context(ctx=..., inputs=..., output=...)`, plus
    `keyword_only_inputs=...` (a dict) when the op has keyword-only parameters. Its
    parameters must be named exactly so (in any order; extra parameters need defaults;
    `**kwargs` takes anything).

    ## Why is this bad?
    The forward pass raises, the first time the op runs with an input that requires grad
    (torch 2.13):

    - `TypeError: setup_context() got an unexpected keyword argument 'inputs'` for
      `setup_context(ctx, x, output)`, and `... 'output'` for the common `outputs` typo;
    - `TypeError: setup_context() got an unexpected keyword argument 'keyword_only_inputs'`
      when the op has keyword-only parameters and `setup_context` takes three;
    - `TypeError: setup_context() missing 1 required positional argument:
      'keyword_only_inputs'` in the opposite case.

    ## Example
    ```python
    def setup_context(ctx, inputs, outputs):
        ctx.save_for_backward(*inputs)
    ```

    Use instead:
    ```python
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
    ```

    ## Fix safety
    There is no fix: renaming a parameter means renaming its uses, and `(ctx, x, output)`
    usually also means the body expects one input where torch passes the tuple of all.
    """

    code = "GL035"
    name = "setup-context-signature"
    severity = Severity.ERROR
    summary = "a custom op's setup_context does not take (ctx, inputs, output)"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::mul", mutates_args=())
            def mul(x: torch.Tensor, *, alpha: float) -> torch.Tensor:
                return x * alpha

            def setup_context(ctx, inputs, keyword_only_inputs, output):
                ctx.alpha = keyword_only_inputs["alpha"]

            def backward(ctx, grad):
                return grad * ctx.alpha

            mul.register_autograd(backward, setup_context=setup_context)
            """, why="keyword-only parameters: four parameters"),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::sin", mutates_args=())
            def sin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()

            def setup_context(ctx, output, inputs, extra=None, **unused):
                ctx.save_for_backward(inputs[0])

            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * x.cos()

            sin.register_autograd(backward, setup_context=setup_context)
            """, why="any order; extras with defaults"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::sin", mutates_args=())
            def sin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()

            def setup_context(ctx, inputs, outputs):
                ctx.save_for_backward(*inputs)

            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * x.cos()

            sin.register_autograd(backward, setup_context=setup_context)
            """,
            message="setup_context of custom op `mylib::sin` must take (ctx, inputs, output): "
                    "torch calls it with those keywords and raises `TypeError: setup_context() "
                    "got an unexpected keyword argument 'output'` in the forward pass",
            range=(7, 19, 7, 39),
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::mul", mutates_args=())
            def mul(x: torch.Tensor, *, alpha: float) -> torch.Tensor:
                return x * alpha

            def setup_context(ctx, inputs, output):
                pass

            def backward(ctx, grad):
                return grad * 2

            mul.register_autograd(backward, setup_context=setup_context)
            """,
            message="setup_context of custom op `mylib::mul` must take (ctx, inputs, "
                    "keyword_only_inputs, output), as the op has keyword-only parameters (alpha): "
                    "torch calls it with those keywords and raises `TypeError: setup_context() got "
                    "an unexpected keyword argument 'keyword_only_inputs'` in the forward pass",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_op_parts:
            registration = op.setup_context
            function = registration.function if registration is not None else None
            keyword_only = op.keyword_only()
            if function is None or keyword_only is None or not block.holds(function.site):
                continue
            node = function.node
            params = node.params
            expected = ["ctx", "inputs", "output"]
            if keyword_only:
                expected.insert(2, "keyword_only_inputs")
            accepted = {p.name.value for p in (*params.params, *params.kwonly_params)}
            takes_any = params.star_kwarg is not None
            unexpected = next((name for name in expected if name not in accepted), None)
            if takes_any:
                unexpected = None
            required = [p.name.value for p in (*params.posonly_params, *params.params,
                                                *params.kwonly_params)
                        if p.default is None and p.name.value not in expected]
            if unexpected is not None:
                error = f"got an unexpected keyword argument '{unexpected}'"
            elif required:
                error = (f"missing {len(required)} required positional argument"
                         f"{'s' if len(required) > 1 else ''}: "
                         + " and ".join(f"'{name}'" for name in required))
            else:
                continue
            signature = ", ".join(expected)
            why = ""
            if keyword_only:
                why = (", as the op has keyword-only parameters ("
                       + ", ".join(p.name for p in keyword_only) + ")")
            function_name = call_name(function)
            message = (f"setup_context of custom op {op_label(op)} must take ({signature}){why}: "
                       f"torch calls it with those keywords and raises `TypeError: "
                       f"{function_name}() {error}` in the forward pass")
            target: cst.CSTNode = params if isinstance(node, cst.FunctionDef) and \
                (params.params or params.posonly_params) else node
            yield Report(target, message, function.site)
