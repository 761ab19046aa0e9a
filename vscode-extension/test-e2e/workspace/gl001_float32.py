"""gradcheck on a float32 input: GL001 (finite differences need float64)."""

import torch
from torch.autograd import gradcheck


def scale(x):
    return x * 3


def test_scale():
    x = torch.randn(4, requires_grad=True)
    assert gradcheck(scale, (x,), eps=1e-6, atol=1e-4)
