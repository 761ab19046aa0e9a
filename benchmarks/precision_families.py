"""Low-precision Functions for bench_precision.py: six ops, each with three backwards.

forward always computes in float32 (float64 stays float64) and casts its result back, as
kernels do. The backwards differ only in the precision they compute in:

- ``precise``: float32 (or wider), then cast: as accurate as PyTorch's own low-precision ops;
- ``fp16``: at low precision through float16 intermediates (float64 stays exact, so gradcheck
  passes): float16's range is far smaller than bfloat16's;
- ``input_dtype``: in the input's own dtype (no upcast): a cheaper kernel, honest but less
  accurate; where it lands against the 2× rule is what the benchmark reports.
"""

import torch

EPS = 1e-6


def wide(t):
    return t.to(torch.promote_types(t.dtype, torch.float32))


def compute_dtype(variant, t):
    if t.dtype == torch.float64 or variant == "precise":
        return torch.promote_types(t.dtype, torch.float32)
    return torch.float16 if variant == "fp16" else t.dtype


# op -> (forward on wide tensors, backward on tensors in the compute dtype, number of inputs)
def _rms_f(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


def _rms_b(g, x):
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
    return (r * g - x * r.pow(3) * (g * x).sum(-1, keepdim=True) / x.shape[-1],)


def _softmax_f(x):
    return torch.softmax(x, -1)


def _softmax_b(g, x):
    y = torch.softmax(x, -1)
    return (y * (g - (g * y).sum(-1, keepdim=True)),)


def _gelu_f(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def _gelu_b(g, x):
    c = 0.7978845608028654
    inner = c * (x + 0.044715 * x.pow(3))
    t = torch.tanh(inner)
    return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)),)


def _lse_f(x):
    return torch.logsumexp(x, -1)


def _lse_b(g, x):
    return (g.unsqueeze(-1) * torch.softmax(x, -1),)


def _matmul_f(a, b):
    return a @ b


def _matmul_b(g, a, b):
    return g @ b.transpose(-1, -2), a.transpose(-1, -2) @ g


def _layernorm_f(x):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) * torch.rsqrt(var + EPS)


def _layernorm_b(g, x):
    n = x.shape[-1]
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    r = torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + EPS)
    xhat = xc * r
    return (r * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).sum(-1, keepdim=True) / n),)


OPS = {
    "rmsnorm": (_rms_f, _rms_b),
    "softmax": (_softmax_f, _softmax_b),
    "gelu_tanh": (_gelu_f, _gelu_b),
    "logsumexp": (_lse_f, _lse_b),
    "matmul": (_matmul_f, _matmul_b),
    "layernorm": (_layernorm_f, _layernorm_b),
}
VARIANTS = ("precise", "fp16", "input_dtype")


def make(op, variant):
    fwd, bwd = OPS[op]

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(*inputs):
            return fwd(*[wide(t) for t in inputs]).to(inputs[0].dtype)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, grad):
            inputs = ctx.saved_tensors
            dt = compute_dtype(variant, grad)
            grads = bwd(grad.to(dt), *[t.to(dt) for t in inputs])
            return tuple(gi.to(t.dtype) for gi, t in zip(grads, inputs))

    Fn.__name__ = Fn.__qualname__ = "%s_%s" % (op, variant)
    return Fn
