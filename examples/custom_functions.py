"""Custom autograd Functions with backward mistakes (GL004, GL005), and correct ones."""

import torch
from torch.autograd import Function


class ScaledReLU(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x.clamp(min=0) * scale

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0) * ctx.scale  # GL004: no gradient (None) for `scale`


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output, None  # GL004 (warning): an extra trailing None


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        return y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * y  # GL005: `y` only exists in forward


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        x = ctx.saved_tensors  # GL005: a 1-tuple, not the tensor
        return 3 * x**2 * grad_output


class MatMul(Function):
    @staticmethod
    def forward(a, b):
        return a @ b

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.save_for_backward(a, b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b, c = ctx.saved_tensors  # GL005: setup_context saved 2 tensors
        return grad_output @ b.mT, a.mT @ grad_output


# Correct: no findings.
class LeakyReLU(Function):
    @staticmethod
    def forward(ctx, x, slope=0.01):
        ctx.save_for_backward(x)
        ctx.slope = slope
        return torch.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, grad_output, grad_output * ctx.slope), None
