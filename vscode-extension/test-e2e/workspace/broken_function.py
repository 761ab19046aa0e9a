"""A custom autograd Function whose backward is wrong by a factor (no static finding: gradcheck
fails), and a test whose gradcheck input is float32 (GL001)."""

import torch
from torch.autograd import Function


class ScaleWrong(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2  # should be * 3


class ScaleRight(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3


def test_scale_right():
    x = torch.randn(3, requires_grad=True)  # float32: GL001
    assert torch.autograd.gradcheck(ScaleRight.apply, (x,))
