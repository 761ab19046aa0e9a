"""How torch operations turn the dtype and ``requires_grad`` of their operands into those
of their result: a small table over torch functions and tensor methods, and torch's type
promotion, checked against torch 2.13 by ``tests/test_transfer_table.py``.

Only what is certain is claimed. Type promotion depends on dimensions as well as dtypes
(a 0-dim float64 tensor does not promote a float32 one), which gradlint does not track:
two tensors of the same dtype give that dtype, tensors of different dtypes give an
unknown one. A Python number never promotes a floating tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

# kinds of operations, by what the result is
SAME = "same"  # same dtype; differentiable (requires grad when an operand does)
FLOATING = "floating"  # same dtype for floating/complex input; an integer input gives the default dtype
PROMOTE = "promote"  # the promoted dtype of the tensor (and number) operands; differentiable
DETACHED = "detached"  # same dtype, never requires grad
INDEX = "index"  # int64 result, never requires grad (argmax, argsort, ...)
BOOL = "bool"  # bool result, never requires grad (comparisons, isnan, ...)
INPLACE = "inplace"  # in-place: same dtype; requires grad when the receiver or an operand does
REDUCE = "reduce"  # same dtype for floating/complex input; an integer input gives an integer dtype


@dataclass(frozen=True)
class Transfer:
    kind: str
    # the positional arguments (after the receiver/first tensor) that are operands
    operands: int = 0
    complex_to_real: bool = False  # a complex input gives the real dtype of the same precision
    true_division: bool = False  # integer inputs give the default floating dtype


_SAME = Transfer(SAME)
_FLOATING = Transfer(FLOATING)
_BINARY = Transfer(PROMOTE, 1)
_TERNARY = Transfer(PROMOTE, 2)

# Tensor methods: `x.name(...)`.
METHODS: dict[str, Transfer] = {
    **{name: _SAME for name in (
        "clone", "contiguous", "cpu", "cuda", "view", "view_as", "reshape", "reshape_as", "t",
        "transpose", "permute", "unsqueeze", "squeeze", "flatten", "unflatten", "expand",
        "expand_as", "narrow", "select", "flip", "fliplr", "flipud", "roll", "repeat", "tile",
        "neg", "clamp", "clamp_min", "clamp_max", "clip", "pin_memory", "movedim", "swapaxes", "swapdims", "diag", "diagonal", "diag_embed", "tril",
        "triu", "amax", "amin", "relu", "conj", "resolve_conj", "resolve_neg", "unfold", "sign",
        "repeat_interleave", "masked_fill", "index_select", "gather",
    )},
    **{name: Transfer(REDUCE) for name in ("sum", "prod", "cumsum", "cumprod", "trace", "square")},
    **{name: _FLOATING for name in (
        "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt",
        "mean", "reciprocal", "softmax", "log_softmax", "asin", "acos",
        "atan", "sinh", "cosh", "erf", "exp2", "log2", "log10", "logsumexp",
    )},
    **{name: Transfer(SAME, complex_to_real=True) for name in ("abs",)},
    **{name: Transfer(FLOATING, complex_to_real=True) for name in ("std", "var", "norm")},
    **{name: _BINARY for name in (
        "add", "sub", "mul", "pow", "matmul", "mm", "maximum", "minimum", "multiply", "subtract",
    )},
    **{name: Transfer(PROMOTE, 1, true_division=True) for name in ("div", "true_divide", "atan2")},
    **{name: _TERNARY for name in ("addcmul", "addcdiv", "lerp")},
    **{name: Transfer(DETACHED) for name in ("detach",)},
    **{name: Transfer(INDEX) for name in ("argmax", "argmin", "argsort", "nonzero")},
    **{name: Transfer(BOOL) for name in ("isnan", "isinf", "isfinite", "eq", "ne", "lt", "le",
                                         "gt", "ge", "logical_not", "signbit")},
    **{name: Transfer(INPLACE) for name in (
        "normal_", "uniform_", "fill_", "zero_", "exponential_", "random_", "clamp_", "abs_",
        "mul_", "add_", "sub_", "div_", "neg_", "exp_", "t_", "transpose_", "copy_",
        "fill_diagonal_", "masked_fill_", "clamp_min_", "clamp_max_", "sqrt_", "pow_",
        "bernoulli_", "cauchy_", "log_normal_", "geometric_", "squeeze_", "unsqueeze_", "tril_",
        "triu_",
    )},
}

# torch functions `torch.name(tensor, ...)`: the first positional argument is the tensor.
FUNCTIONS: dict[str, Transfer] = {
    **{f"torch.{name}": METHODS[name] for name in (
        "clone", "reshape", "t", "transpose", "permute", "unsqueeze", "squeeze", "flatten",
        "narrow", "select", "flip", "roll", "tile", "abs", "neg", "clamp", "clip", "movedim",
        "diag", "diagonal", "diag_embed", "tril", "triu", "cumsum", "sum", "relu", "square",
        "conj", "sign", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid",
        "sqrt", "rsqrt", "mean", "std", "var", "reciprocal", "softmax", "log_softmax", "asin",
        "acos", "atan", "sinh", "cosh", "erf", "add", "sub", "mul", "div", "pow", "matmul",
        "mm", "maximum", "minimum", "true_divide", "atan2",
        "addcmul", "addcdiv", "lerp", "detach", "argmax", "argmin", "argsort", "isnan",
        "isinf", "isfinite", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
        "repeat_interleave", "prod", "cumprod", "index_select", "gather", "masked_fill",
        "logsumexp",
    )},
}
FUNCTIONS["torch.nn.functional.relu"] = _SAME
FUNCTIONS["torch.nn.functional.softmax"] = _FLOATING
FUNCTIONS["torch.nn.functional.log_softmax"] = _FLOATING
FUNCTIONS["torch.nn.functional.normalize"] = _FLOATING
FUNCTIONS["torch.sigmoid"] = _FLOATING
# `torch.cat([a, b])` / `torch.stack((a, b))`: the promoted dtype of the elements
SEQUENCE_FUNCTIONS = frozenset({"torch.cat", "torch.stack", "torch.concat", "torch.concatenate",
                                "torch.hstack", "torch.vstack", "torch.dstack", "torch.block_diag"})

# Python operators on tensors
BINARY_OPERATORS = frozenset({"Add", "Subtract", "Multiply", "Divide", "Power", "MatrixMultiply",
                              "FloorDivide", "Modulo"})

_INTEGRAL = frozenset({"int64", "int32", "int16", "int8", "uint8", "bool"})
_FLOATING_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16"})
_COMPLEX_DTYPES = frozenset({"complex128", "complex64", "complex32"})


def is_integral(dtype: str | None) -> bool:
    return dtype in _INTEGRAL


def promote(dtypes: list[str | None], numbers: list[str], default: str | None,
            true_division: bool = False) -> str | None:
    """The result dtype of an operation on tensors of ``dtypes`` and Python numbers of
    kinds ``numbers`` ("int" | "float" | "complex" | "bool"), when certain."""
    if not dtypes or any(d is None for d in dtypes):
        return None
    distinct = set(dtypes)
    if len(distinct) != 1:
        return None  # depends on the operands' dimensions too
    dtype = dtypes[0]
    assert dtype is not None
    if dtype in _FLOATING_DTYPES:
        if "complex" in numbers:
            return {"float64": "complex128", "float32": "complex64"}.get(dtype)
        return dtype
    if dtype in _COMPLEX_DTYPES:
        return dtype
    # integer or bool tensors
    if "complex" in numbers:
        return None
    if "float" in numbers or true_division:
        return default
    if dtype == "bool" and "int" in numbers:
        return "int64"
    return dtype


def result_dtype(transfer: Transfer, dtypes: list[str | None], numbers: list[str],
                 default: str | None) -> str | None:
    kind = transfer.kind
    receiver = dtypes[0] if dtypes else None
    if transfer.complex_to_real and receiver in _COMPLEX_DTYPES:
        return {"complex128": "float64", "complex64": "float32", "complex32": "float16"}[receiver]
    if kind in (SAME, DETACHED, INPLACE):
        return receiver
    if kind == REDUCE:
        return None if receiver is None or is_integral(receiver) else receiver
    if kind == FLOATING:
        if receiver is None:
            return None
        return default if is_integral(receiver) else receiver
    if kind == PROMOTE:
        return promote(dtypes, numbers, default, transfer.true_division)
    if kind == INDEX:
        return "int64"
    if kind == BOOL:
        return "bool"
    return None


def result_requires_grad(transfer: Transfer, grads: list[bool | None], no_grad: bool | None
                         ) -> bool | None:
    """``grads``: requires_grad of the tensor operands (the receiver first).

    ``no_grad``: True inside ``torch.no_grad()``, None where it cannot be told."""
    kind = transfer.kind
    if kind in (DETACHED, INDEX, BOOL):
        return False
    if kind == INPLACE:
        receiver = grads[0] if grads else None
        if any(g is True for g in grads):
            return True if receiver is True or no_grad is False else None
        return False if all(g is False for g in grads) else None
    if kind == SAME and no_grad is not False and any(g is not False for g in grads):
        return None  # under no_grad, a view (or `self`, for a no-op) keeps requires_grad
    return differentiable_grad(grads, no_grad)


def differentiable_grad(grads: list[bool | None], no_grad: bool | None) -> bool | None:
    if all(g is False for g in grads):
        return False
    if any(g is True for g in grads):
        if no_grad is True:
            return False
        if no_grad is None:
            return None
        return True
    return None
