"""Functions for the in-process API tests (imported by test_api.py)."""
import torch

import gradlint


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


class HalfSquare(torch.autograd.Function):
    """x**2 whose backward forgot the factor 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


class MulWrongForA(torch.autograd.Function):
    """a*b: the gradient for b is right, the one for a is twice too large."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return 2 * grad * b, grad * a


class CubeDetached(torch.autograd.Function):
    """Right first derivative; backward detaches, so second order is missing."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * grad * x.detach() ** 2


@gradlint.inputs(torch.randn(2, 3), torch.randn(3))
class RowScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, m, v):
        ctx.save_for_backward(m, v)
        return m * v

    @staticmethod
    def backward(ctx, grad):
        m, v = ctx.saved_tensors
        return grad * v, (grad * m).sum(0)


class Raises(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        raise ValueError("forward refuses")

    @staticmethod
    def backward(ctx, grad):
        return grad


@torch.library.custom_op("gradlint_tests::cube", mutates_args=())
def cube(x: torch.Tensor) -> torch.Tensor:
    return x ** 3


def _cube_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _cube_backward_wrong(ctx, grad):
    (x,) = ctx.saved_tensors
    return 3 * grad * x  # should be 3 * grad * x**2


cube.register_autograd(_cube_backward_wrong, setup_context=_cube_setup)


class BankDropped(torch.autograd.Function):
    """x scaled by a filter bank's sum; backward returns None for the bank (its gradient dropped)."""

    @staticmethod
    def forward(ctx, x, h):
        ctx.save_for_backward(h)
        return x * h.sum()

    @staticmethod
    def backward(ctx, grad):
        (h,) = ctx.saved_tensors
        return grad * h.sum(), None


class BankDoubled(torch.autograd.Function):
    """The same with both gradients given, x's twice too large."""

    @staticmethod
    def forward(ctx, x, h):
        ctx.save_for_backward(x, h)
        return x * h.sum()

    @staticmethod
    def backward(ctx, grad):
        x, h = ctx.saved_tensors
        return 2 * grad * h.sum(), (grad * x).sum().expand(h.shape)
