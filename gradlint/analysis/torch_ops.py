"""Groups of torch operations some rules look for (each list checked against torch 2.13)."""

from __future__ import annotations

# Tensor methods that change the tensor's values in place: every public `Tensor` method of
# torch 2.13 whose name ends in `_`, minus those that only change autograd or memory state.
INPLACE_METHODS = frozenset("""
abs_ absolute_ acos_ acosh_ add_ addbmm_ addcdiv_ addcmul_ addmm_ addmv_ addr_ apply_ arccos_
arccosh_ arcsin_ arcsinh_ arctan2_ arctan_ arctanh_ as_strided_ asin_ asinh_ atan2_ atan_
atanh_ baddbmm_ bernoulli_ bitwise_and_ bitwise_left_shift_ bitwise_not_ bitwise_or_
bitwise_right_shift_ bitwise_xor_ cauchy_ ceil_ clamp_ clamp_max_ clamp_min_ clip_
conj_physical_ copy_ copysign_ cos_ cosh_ cumprod_ cumsum_ deg2rad_ digamma_ div_ divide_ eq_
erf_ erfc_ erfinv_ exp2_ exp_ expm1_ exponential_ fill_ fill_diagonal_ fix_ float_power_ floor_
floor_divide_ fmod_ frac_ gcd_ ge_ geometric_ greater_ greater_equal_ gt_ heaviside_ hypot_ i0_
igamma_ igammac_ index_add_ index_copy_ index_fill_ index_put_ index_reduce_ lcm_ ldexp_ le_
lerp_ less_ less_equal_ lgamma_ log10_ log1p_ log2_ log_ log_normal_ logical_and_ logical_not_
logical_or_ logical_xor_ logit_ lt_ map2_ map_ masked_fill_ masked_scatter_ mul_ multiply_
mvlgamma_ nan_to_num_ ne_ neg_ negative_ nextafter_ normal_ not_equal_ polygamma_ pow_ put_
rad2deg_ random_ reciprocal_ relu_ remainder_ renorm_ round_ rsqrt_ scatter_ scatter_add_
scatter_reduce_ sgn_ sigmoid_ sign_ sin_ sinc_ sinh_ sqrt_ square_ sub_ subtract_ tan_ tanh_
tril_ triu_ true_divide_ trunc_ uniform_ xlogy_ zero_
""".split())

# Methods that fill a tensor with new values, whatever it held before.
INITIALIZING_METHODS = frozenset({
    "uniform_", "normal_", "random_", "bernoulli_", "exponential_", "geometric_", "cauchy_",
    "log_normal_", "fill_", "copy_", "zero_",
})

# Functions and methods that draw random numbers (their results differ at each call).
RANDOM_FUNCTIONS = frozenset(f"torch.{name}" for name in (
    "rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm",
    "bernoulli", "multinomial", "normal", "poisson",
))
RANDOM_METHODS = frozenset({
    "bernoulli", "bernoulli_", "uniform_", "normal_", "random_", "exponential_", "geometric_",
    "cauchy_", "log_normal_", "multinomial",
})
# nn.functional ops that are random unless `training=False` (or p=0); rrelu is random only
# with `training=True` (its default is False).
DROPOUT_FUNCTIONS = frozenset(f"torch.nn.functional.{name}" for name in (
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
))
RRELU = frozenset({"torch.nn.functional.rrelu", "torch.rrelu"})
SEEDING_FUNCTIONS = frozenset({
    "torch.manual_seed", "torch.random.manual_seed", "torch.random.fork_rng",
    "torch.set_rng_state", "torch.random.set_rng_state", "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
})

# Ops whose derivative jumps at 0 (measured: gradcheck fails at an all-zero input):
# relu, relu6, leaky_relu, threshold, sign, sqrt, and clamp with a bound of 0. `abs`,
# `torch.maximum`, `hardtanh`, `elu` and `norm` pass there and are not listed.
KINK_AT_ZERO_FUNCTIONS = frozenset({
    "torch.relu", "torch.nn.functional.relu", "torch.nn.functional.relu6",
    "torch.nn.functional.leaky_relu", "torch.nn.functional.threshold", "torch.sign",
    "torch.sqrt",
})
KINK_AT_ZERO_METHODS = frozenset({"relu", "sign", "sqrt"})
# max/min/amax/amin reductions: ties at an all-zero input (the elementwise two-tensor form
# torch.maximum passes; torch.max(a, b) with a tensor b is that form and is not matched)
REDUCTIONS_WITH_TIES = frozenset({"max", "min", "amax", "amin"})
CLAMPS = frozenset({"clamp", "clip", "clamp_min", "clamp_max"})

# Ops that accumulate with atomics on CUDA (nondeterministic there; deterministic on CPU,
# measured), per torch.use_deterministic_algorithms' documentation.
ACCUMULATING_METHODS = frozenset({"index_add_", "index_add", "scatter_add_", "scatter_add"})
ACCUMULATE_KEYWORD_METHODS = frozenset({"index_put_", "index_put", "put_", "put"})
ACCUMULATING_FUNCTIONS = frozenset({"torch.index_add", "torch.scatter_add", "torch.index_put"})

# Casts to a dtype with less precision than float64.
LOW_PRECISION_CASTS = {"float": "float32", "half": "float16", "bfloat16": "bfloat16"}

# Tensor methods (and torch functions of the same name) whose result is one tensor.
TENSOR_RESULT = frozenset("""
clone contiguous detach mul div add sub neg mm bmm matmul mv sum mean prod view view_as reshape
reshape_as expand expand_as t transpose permute unsqueeze squeeze flatten masked_fill
masked_scatter index_select gather scatter scatter_add index_add pow exp log sqrt rsqrt abs
sign sigmoid tanh relu clamp clamp_min clamp_max to type_as double float half bfloat16
new_zeros new_ones new_full new_empty zeros_like ones_like full_like empty_like rand_like
randn_like cat stack outer einsum conj real imag narrow select roll flip repeat
repeat_interleave tile tril triu diag diag_embed diagonal cumsum cumprod softmax log_softmax
addmm addcmul addcdiv lerp reciprocal square where exp2 expm1 log1p erf erfinv sin cos tan
atan2 norm logsumexp amax amin argmax argmin bincount index_put masked_select nonzero_static
zeros ones empty full arange linspace tensor as_tensor from_numpy baddbmm einsum bmm
""".split())
# Reading these from a tensor kept on ctx needs only its metadata, not its values.
METADATA = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "size",
                      "dim", "numel", "stride", "is_contiguous", "element_size", "layout"})
ALLOCATIONS = frozenset(f"torch.{name}" for name in (
    "empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
    "empty_strided",
)) | frozenset({"new_empty", "new_zeros", "new_ones", "new_full"})
