from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.autograd_functions import Method
from ...analysis.block import BlockAnalysis
from ...analysis.method_body import assigned_from, ctx_calls
from ...findings import Applicability, Severity
from ..base import FixProposal, Invalid, Replacement, Report, Rule, Valid
from .helpers import MENTIONS_SAVE, saving_methods

_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})
# tensor methods and attributes whose result is not a tensor
_NON_TENSOR_METHODS = {"numel": "int", "dim": "int", "item": "Python number", "tolist": "list",
                       "data_ptr": "int", "element_size": "int", "nelement": "int",
                       "ndimension": "int", "is_contiguous": "bool"}
_NON_TENSOR_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda"})
_NON_TENSOR_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "tuple", "list", "dict",
                                  "range"})


class NonTensorSavedForBackward(Rule):
    """## What it does
    Checks the arguments of `ctx.save_for_backward(...)` for values that are not tensors:
    numbers, strings, booleans, tuples and lists (`ctx.save_for_backward((a, b))`),
    `x.shape`, `x.size()`, `x.item()`, `len(...)`, and names bound to them or to
    parameters annotated `int`/`float`/`bool`/`str`. `None` is allowed.

    ## Why is this bad?
    `save_for_backward` only takes tensors (and `None`). Measured with torch 2.13, when
    an input requires grad, forward raises `TypeError: save_for_backward can only save
    variables, but argument 1 is of type float` (`... argument 0 is of type tuple` for a
    tuple, `torch.Size` for a shape); when no input requires grad, the call is accepted
    silently, so the error appears only in training, not in an inference test.

    ## Example
    ```python
    ctx.save_for_backward(x, alpha)      # alpha: float
    ctx.save_for_backward((x, w))
    ```

    Use instead:
    ```python
    ctx.save_for_backward(x)
    ctx.alpha = alpha                    # non-tensors go on ctx directly
    ctx.save_for_backward(x, w)
    ```

    ## Fix safety
    A single tuple or list of names, `save_for_backward((x, w))`, is unpacked into
    `save_for_backward(x, w)`: safe, the call raised before. Other values need to move
    to a `ctx` attribute, which changes how backward reads them: no fix.
    """

    code = "GL012"
    name = "non-tensor-saved-for-backward"
    severity = Severity.ERROR
    summary = "ctx.save_for_backward given a number, tuple, list or shape (TypeError)"
    requires = MENTIONS_SAVE
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)

    VALID = [
        Valid("""
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, alpha: float):
                    ctx.save_for_backward(x, None)
                    ctx.alpha = alpha
                    return x * alpha

                @staticmethod
                def backward(ctx, g):
                    x, _ = ctx.saved_tensors
                    return g * ctx.alpha, None
            """, why="None is allowed"),
        Valid("""
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, alpha=1.0):
                    ctx.save_for_backward(x, alpha)
                    return x * alpha

                @staticmethod
                def backward(ctx, g):
                    x, alpha = ctx.saved_tensors
                    return g * alpha, None
            """, why="a default does not say what callers pass (a tensor works)"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, alpha: float):
                    ctx.save_for_backward(x, alpha)
                    return x * alpha

                @staticmethod
                def backward(ctx, g):
                    x, alpha = ctx.saved_tensors
                    return g * alpha, None
            """,
            message="ctx.save_for_backward only takes tensors (and None): `alpha` is a float "
                    "parameter (TypeError when an input requires grad); store it as a ctx attribute",
            range=(5, 34, 5, 39),
        ),
        Invalid(
            """
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward((x, w))
                    return x * w

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return g * w, g * x
            """,
            message="ctx.save_for_backward only takes tensors (and None): `(x, w)` is a tuple "
                    "(TypeError when an input requires grad); pass the tensors as separate arguments",
            fixed="""
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(x, w)
                    return x * w

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return g * w, g * x
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            for method in saving_methods(function):
                for saved in ctx_calls(method, "save_for_backward"):
                    args = saved.call.args
                    for arg in args:
                        if arg.star or arg.keyword is not None:
                            continue
                        kind = _non_tensor(arg.value, method, 0)
                        if kind is None:
                            continue
                        shown = " ".join(block.code(arg.value).split())
                        fix = None
                        if kind in ("tuple", "list"):
                            advice = "pass the tensors as separate arguments"
                            if len(args) == 1 and isinstance(arg.value, (cst.Tuple, cst.List)) and \
                                    arg.value.elements and \
                                    all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name)
                                        for e in arg.value.elements):
                                names = ", ".join(e.value.value for e in arg.value.elements)  # type: ignore[attr-defined]
                                fix = FixProposal("Pass the tensors as separate arguments",
                                                  Applicability.SAFE,
                                                  (Replacement(arg.value, names, saved.site),))
                        else:
                            advice = "store it as a ctx attribute"
                        article = "an" if kind[0] in "aeiou" else "a"
                        message = (f"ctx.save_for_backward only takes tensors (and None): `{shown}` is "
                                   f"{article} {kind} (TypeError when an input requires grad); {advice}")
                        yield Report(arg.value, message, saved.site, fix)


def _non_tensor(expr: cst.BaseExpression, method: Method, depth: int) -> str | None:
    """What kind of non-tensor ``expr`` certainly is, or None."""
    if isinstance(expr, cst.Integer):
        return "int"
    if isinstance(expr, cst.Float):
        return "float"
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return "str"
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "bool"
    if isinstance(expr, (cst.Tuple, cst.List)):
        return "tuple" if isinstance(expr, cst.Tuple) else "list"
    if isinstance(expr, (cst.Dict, cst.DictComp, cst.ListComp, cst.Set, cst.SetComp)):
        return type(expr).__name__.lower().replace("comp", "")
    if isinstance(expr, cst.Attribute) and expr.attr.value in _NON_TENSOR_ATTRIBUTES:
        return "torch.Size" if expr.attr.value == "shape" else expr.attr.value
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute):
            method_name = func.attr.value
            if method_name in ("size", "stride"):
                return ("torch.Size" if method_name == "size" else "tuple") if not expr.args else "int"
            if method_name in _NON_TENSOR_METHODS:
                return _NON_TENSOR_METHODS[method_name]
        if isinstance(func, cst.Name) and func.value in _NON_TENSOR_BUILTINS and \
                method.scope.binding_scope(func.value) is None:
            return func.value
        return None
    if isinstance(expr, cst.Name) and depth < 3:
        param = next((p for p in method.params if p.name.value == expr.value), None)
        if param is not None:
            if len(method.scope.table.bindings.get(expr.value, [])) != 1:
                return None
            annotation = param.annotation.annotation if param.annotation is not None else None
            if isinstance(annotation, cst.Name) and annotation.value in _SCALAR_ANNOTATIONS:
                return f"{annotation.value} parameter"
            return None
        values = assigned_from(method, expr.value)
        if not values:
            return None
        kinds = {_non_tensor(value, method, depth + 1) for value in values}
        if len(kinds) == 1 and None not in kinds:
            return kinds.pop()
    return None
