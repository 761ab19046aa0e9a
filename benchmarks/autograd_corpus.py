"""A realistic module of autograd code, generated at any size, for the benchmarks."""

from __future__ import annotations

HEADER = '''"""Generated benchmark module: custom autograd Functions and their gradient checks."""

import math

import torch
from torch.autograd import Function, gradcheck, gradgradcheck
from torch.autograd.function import once_differentiable

'''

UNIT = '''

class ScaledTanh{n}(Function):
    """tanh(x * scale) with a hand-written backward (unit {n})."""

    @staticmethod
    def forward(ctx, x, scale={n}.5):
        y = torch.tanh(x * scale)
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        grad = grad_output * (1 - y * y) * ctx.scale
        return grad, None


class Bilinear{n}(Function):
    @staticmethod
    def forward(a, w, b):
        return a @ w @ b.t()

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, w, b = inputs
        ctx.save_for_backward(a, w, b)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        a, w, b = ctx.saved_tensors
        grad_a = grad @ b @ w.t()
        grad_w = a.t() @ grad @ b
        grad_b = grad.t() @ a @ w
        return grad_a, grad_w, grad_b


def test_scaled_tanh_{n}():
    x = torch.randn(4, {m}, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: ScaledTanh{n}.apply(t, 0.5), (x,))
    assert gradgradcheck(lambda t: ScaledTanh{n}.apply(t, 0.5), [x])


def test_bilinear_{n}():
    a = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, 4, dtype=torch.float64)
    assert gradcheck(Bilinear{n}.apply, (a.double(), w, b), eps=1e-6, atol=1e-4)
    norm = math.sqrt({m})
    assert norm > 0


def test_sigmoid_{n}():
    x = torch.randn({m}, requires_grad=True)  # float32: GL001
    assert gradcheck(torch.sigmoid, (x,))
'''


def module(lines: int, start: int = 0) -> str:
    """About ``lines`` lines of autograd code; ``start`` numbers its Functions (files made
    with different starts share no block)."""
    parts = [HEADER]
    count = 0
    n = start
    while count < lines:
        unit = UNIT.format(n=n, m=n % 7 + 2)
        parts.append(unit)
        count += unit.count("\n")
        n += 1
    return "".join(parts)
