from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, CustomOp, FunctionRef, OpParameter
from ...analysis.scopes import real_site
from ...findings import Applicability, Severity
from .helpers import (functions_here, is_none, op_label, returned_values, returns_of, site_in,
                      surely_not_none)
from ..base import MENTIONS_TORCH_LIBRARY, FixProposal, Invalid, Replacement, Report, Rule, Valid


def _generated(op: CustomOp) -> str:
    """The name torch gives the autograd.Function it generates for the op."""
    if op.name is None:
        return "GeneratedBackwardFor_..."
    namespace, name = op.name.split("::", 1)
    return f"GeneratedBackwardFor_{namespace}_{name}_defaultBackward"


class RegisterAutogradGradientCount(Rule):
    """## What it does
    Checks the number of gradients the backward registered with `register_autograd`
    returns against the custom op's inputs, counted the way torch counts them: one per
    positional parameter, including the non-Tensor ones (`int`, `float`, `bool`... get
    `None`); keyword-only parameters get no gradient (extra trailing `None`s are
    accepted). A gradient that is not `None` for a non-Tensor input, or beyond the inputs,
    is reported too.

    ## Why is this bad?
    It fails only when backward runs. Measured with torch 2.13, for an op `f(x, y)` whose
    backward returns one gradient: `RuntimeError: function
    GeneratedBackwardFor_mylib_f_defaultBackward returned an incorrect number of gradients
    (expected 3, got 2)` (torch counts one more input of its own on both sides). A tensor
    returned for a keyword-only or non-Tensor input: `RuntimeError: function
    GeneratedBackwardFor_... returned a gradient different than None at position 2, but
    the corresponding forward input was not a Variable`.

    A parameter with a default is subtle: torch's dispatcher drops arguments equal to their
    defaults, so a backward with no gradient for `alpha: float = 1.0` works while callers
    leave `alpha` alone and raises the first time one passes another value. That case is a
    warning.

    ## Example
    ```python
    @torch.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
        return x * alpha

    def backward(ctx, grad):
        return grad * ctx.alpha
    ```

    Use instead:
    ```python
    def backward(ctx, grad):
        return grad * ctx.alpha, None
    ```

    ## Fix safety
    When every missing gradient belongs to a non-Tensor input, `None`s are appended: safe,
    `None` is the only gradient torch accepts there. A missing Tensor gradient has no fix.
    """

    code = "GL034"
    name = "register-autograd-gradient-count"
    severity = Severity.ERROR
    summary = "a backward registered for a custom op returns the wrong number of gradients"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::scale", mutates_args=())
            def scale(x: torch.Tensor, alpha: float, *, mode: str = "a") -> torch.Tensor:
                return x * alpha

            def setup_context(ctx, inputs, keyword_only_inputs, output):
                ctx.alpha = inputs[1]

            def backward(ctx, grad):
                return grad * ctx.alpha, None

            scale.register_autograd(backward, setup_context=setup_context)
            """, why="keyword-only inputs get no gradient; None for the float"),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::mul", mutates_args=())
            def mul(x: torch.Tensor, *, alpha: float) -> torch.Tensor:
                return x * alpha

            def backward(ctx, grad):
                return grad * 2, None

            torch.library.register_autograd("mylib::mul", backward)
            """, why="an extra trailing None is accepted"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::scale", mutates_args=())
            def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
                return x * alpha

            def setup_context(ctx, inputs, output):
                ctx.alpha = inputs[1]

            def backward(ctx, grad):
                return grad * ctx.alpha

            scale.register_autograd(backward, setup_context=setup_context)
            """,
            message="backward of custom op `mylib::scale` returns 1 gradient for its 2 inputs "
                    "(x, alpha): torch raises `RuntimeError: function "
                    "GeneratedBackwardFor_mylib_scale_defaultBackward returned an incorrect number "
                    "of gradients (expected 3, got 2)`; return one per input, None for alpha",
            range=(11, 12, 11, 28),
            fixed="""
            import torch

            @torch.library.custom_op("mylib::scale", mutates_args=())
            def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
                return x * alpha

            def setup_context(ctx, inputs, output):
                ctx.alpha = inputs[1]

            def backward(ctx, grad):
                return grad * ctx.alpha, None

            scale.register_autograd(backward, setup_context=setup_context)
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::mul", mutates_args=())
            def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return x * y

            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(*inputs)

            def backward(ctx, grad):
                x, y = ctx.saved_tensors
                return grad * y

            mul.register_autograd(backward, setup_context=setup_context)
            """,
            message="backward of custom op `mylib::mul` returns 1 gradient for its 2 inputs "
                    "(x, y): torch raises `RuntimeError: function "
                    "GeneratedBackwardFor_mylib_mul_defaultBackward returned an incorrect number "
                    "of gradients (expected 3, got 2)`; return one per input",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op, _, function in functions_here(block, "backward"):
            positional = op.positional()
            if positional is None or any(p.kind.startswith("var") for p in op.params or ()):
                continue
            yield from self._check(op, function, positional)

    def _check(self, op: CustomOp, function: FunctionRef, inputs: list[OpParameter]
               ) -> Iterator[Report]:
        node = function.node
        assert isinstance(node, cst.FunctionDef)
        n = len(inputs)
        required = sum(1 for p in inputs if not p.has_default)
        names = ", ".join(p.name for p in inputs)
        for ret, statement in returns_of(node):
            values = returned_values(ret.value, node)
            if values is None:
                continue
            site = site_in(function, statement)
            site = real_site(site) if site is not None else None
            if site is None:
                continue
            count = len(values)
            target = ret.value if ret.value is not None else ret
            wrong = self._non_tensor_gradient(op, values, inputs, node)
            if wrong is not None:
                yield Report(wrong[0], wrong[1], site)
                continue
            if count >= n:
                continue
            plural = "gradient" if count == 1 else "gradients"
            missing = inputs[count:]
            non_tensor = [p.name for p in missing if p.is_tensor is False]
            fix = None
            literal = isinstance(ret.value, cst.Tuple) or (count == 1 and values[0] is ret.value)
            if len(non_tensor) == len(missing) and ret.value is not None and literal:
                fix = _append_nones(ret.value, len(missing), values, site)
            exact = (f"`RuntimeError: function {_generated(op)} returned an incorrect number "
                     f"of gradients (expected {n + 1}, got {count + 1})`")
            if count >= required:
                left_out = ", ".join(p.name for p in missing)
                message = (f"backward of custom op {op_label(op)} returns {count} {plural} for "
                           f"its {n} inputs ({names}): it works only while callers leave "
                           f"{left_out} at its default (torch drops arguments equal to their "
                           f"defaults); a call passing {missing[0].name} raises {exact}")
                yield Report(target, message, site, fix=fix, severity=Severity.WARNING)
            else:
                advice = "; return one per input"
                if non_tensor:
                    advice += ", None for " + ", ".join(non_tensor)
                message = (f"backward of custom op {op_label(op)} returns {count} {plural} for "
                           f"its {n} inputs ({names}): torch raises {exact}{advice}")
                yield Report(target, message, site, fix=fix)

    def _non_tensor_gradient(self, op: CustomOp, values: list[cst.BaseExpression],
                             inputs: list[OpParameter], node: cst.FunctionDef
                             ) -> tuple[cst.BaseExpression, str] | None:
        """A gradient that is surely not None for a non-Tensor input or beyond the inputs."""
        n = len(inputs)
        names = ", ".join(p.name for p in inputs)
        for index, value in enumerate(values):
            beyond = index >= n
            non_tensor = not beyond and inputs[index].is_tensor is False
            if not (beyond or non_tensor) or is_none(value) or not surely_not_none(value, node):
                continue
            what = (f"but the op has {n} positional input{'s' if n != 1 else ''} ({names}; "
                    f"keyword-only inputs get no gradient)" if beyond else
                    f"for the non-Tensor input {inputs[index].name}")
            message = (f"backward of custom op {op_label(op)} returns a gradient "
                       f"(`{_code(value)}`) at position {index + 1}, {what}: torch raises "
                       f"`RuntimeError: function {_generated(op)} returned a gradient "
                       f"different than None at position {index + 1}, but the corresponding "
                       f"forward input was not a Variable`")
            return value, message
        return None


def _code(node: cst.CSTNode) -> str:
    text = " ".join(node_code(node).split())
    return text if len(text) <= 32 else text[:31] + "…"


def _append_nones(value: cst.BaseExpression, missing: int, values: list[cst.BaseExpression],
                  site) -> FixProposal:
    module = cst.Module(body=())
    parts = [node_code(v, module) for v in values] if isinstance(value, cst.Tuple) \
        else [node_code(value, module)]
    text = ", ".join(parts + ["None"] * missing)
    if isinstance(value, cst.Tuple) and value.lpar:
        text = f"({text})"
    return FixProposal("Return None for the non-Tensor inputs", Applicability.SAFE,
                       (Replacement(value, text, site),))
