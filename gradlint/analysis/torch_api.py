"""What gradlint knows about torch's API, by qualified name (checked against torch 2.13)."""

from __future__ import annotations

# `from torch.autograd import gradcheck` and `torch.autograd.gradcheck` give the function;
# `from torch.autograd.gradcheck import gradcheck` gives it too (the module is reached
# through sys.modules). The testing-internal wrappers keep the same positional shape.
GRADCHECK = frozenset({
    "torch.autograd.gradcheck",
    "torch.autograd.gradcheck.gradcheck",
    "torch.testing._internal.common_utils.gradcheck",
})
GRADGRADCHECK = frozenset({
    "torch.autograd.gradgradcheck",
    "torch.autograd.gradcheck.gradgradcheck",
    "torch.testing._internal.common_utils.gradgradcheck",
})

# Positional parameters of the pre-1.10 signatures, for turning positional settings into
# keywords (the settings have been keyword-only since pytorch/pytorch#65290).
LEGACY_GRADCHECK_SETTINGS = ("eps", "atol", "rtol", "raise_exception")
LEGACY_GRADGRADCHECK_SETTINGS = ("eps", "atol", "rtol", "gen_non_contig_grad_outputs",
                                 "raise_exception")

FUNCTION_BASES = frozenset({
    "torch.autograd.Function",
    "torch.autograd.function.Function",
    "torch.autograd.function.InplaceFunction",
})

SET_DEFAULT_DTYPE = frozenset({"torch.set_default_dtype"})
SET_DEFAULT_TENSOR_TYPE = frozenset({"torch.set_default_tensor_type"})

_DTYPE_ALIASES = {
    "float64": "float64", "double": "float64",
    "float32": "float32", "float": "float32",
    "float16": "float16", "half": "float16",
    "bfloat16": "bfloat16",
    "complex128": "complex128", "cdouble": "complex128",
    "complex64": "complex64", "cfloat": "complex64",
    "complex32": "complex32", "chalf": "complex32",
    "int64": "int64", "long": "int64",
    "int32": "int32", "int": "int32",
    "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool",
}
DTYPES = {f"torch.{alias}": canonical for alias, canonical in _DTYPE_ALIASES.items()}

_TENSOR_TYPES = {
    "DoubleTensor": "float64", "FloatTensor": "float32", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32",
    "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool",
}
TENSOR_TYPES = {f"torch.{name}": dtype for name, dtype in _TENSOR_TYPES.items()}
TENSOR_TYPE_STRINGS = {f"torch.{name}": dtype for name, dtype in _TENSOR_TYPES.items()}

FLOATING = frozenset({"float64", "float32", "float16", "bfloat16"})
COMPLEX = frozenset({"complex128", "complex64", "complex32"})
LOW_PRECISION = frozenset({"float32", "float16", "bfloat16", "complex64", "complex32"})

# Factories whose dtype is torch's default floating dtype unless `dtype=` says otherwise.
DEFAULT_FLOAT_FACTORIES = frozenset(f"torch.{name}" for name in (
    "randn", "rand", "zeros", "ones", "empty", "eye", "linspace", "logspace", "normal",
    "empty_strided",
))
# `torch.tensor(data)`, `torch.full(size, value)`, `torch.arange(...)`: dtype from the values
INFERRED_FACTORIES = frozenset({"torch.tensor", "torch.full", "torch.arange", "torch.range",
                                "torch.as_tensor"})
# `x.new_ones(...)`: the receiver's dtype unless `dtype=` says otherwise; a new leaf
NEW_METHODS = frozenset({"new_ones", "new_zeros", "new_empty", "new_full", "new_tensor",
                         "new_empty_strided"})
LIKE_FACTORIES = frozenset(f"torch.{name}" for name in (
    "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like",
))
INTEGER_FACTORIES = {"torch.randint": "int64", "torch.randperm": "int64"}
# Factories whose `dtype=` is required (no default dtype): torch.testing's make_tensor.
EXPLICIT_DTYPE_FACTORIES = frozenset({
    "torch.testing.make_tensor", "torch.testing._creation.make_tensor",
    "torch.testing._internal.common_utils.make_tensor",
})
# Legacy constructors: `torch.Tensor(...)` uses the default dtype, the others are fixed.
LEGACY_CONSTRUCTORS = {"torch.Tensor": None, **TENSOR_TYPES}
PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})

# Methods that return a tensor of a fixed dtype.
CAST_METHODS = {
    "double": "float64", "float": "float32", "half": "float16", "bfloat16": "bfloat16",
    "cdouble": "complex128", "cfloat": "complex64", "long": "int64", "int": "int32",
    "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool",
}
# Methods that keep the dtype; the result requires grad when the source does.
DTYPE_PRESERVING_METHODS = frozenset({
    "clone", "contiguous", "cpu", "cuda", "view", "reshape", "t", "transpose", "permute",
    "unsqueeze", "squeeze", "flatten", "expand", "expand_as", "view_as", "reshape_as",
    "narrow", "select", "flip", "roll", "repeat", "tile", "abs", "neg", "exp", "sin", "cos",
    "tanh", "sigmoid", "clamp", "clamp_min", "clamp_max", "add", "sub", "mul", "div",
    "pin_memory", "coalesce", "to_dense", "requires_grad_", "retain_grad", "mT", "T",
})

# Names exported by `from X import *` that gradlint cares about.
STAR_EXPORTS = {
    "torch": frozenset({
        "randn", "rand", "zeros", "ones", "empty", "eye", "linspace", "logspace", "tensor",
        "full", "arange", "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like",
        "full_like", "randint", "float64", "double", "float32", "float", "float16", "half",
        "bfloat16", "complex64", "complex128", "cfloat", "cdouble", "int64", "long",
    }),
    "torch.autograd": frozenset({"gradcheck", "gradgradcheck", "Function", "Variable"}),
    "torch.autograd.function": frozenset({"Function", "InplaceFunction", "once_differentiable"}),
}