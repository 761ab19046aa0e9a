"""Common mistakes when calling gradcheck (GL001, GL002, GL003), and their correct twins."""

import torch
from torch.autograd import gradcheck, gradgradcheck


def test_sin_float32():
    x = torch.randn(5, requires_grad=True)  # float32: torch's default dtype
    assert gradcheck(torch.sin, (x,))  # GL001


def test_exp_without_requires_grad():
    x = torch.randn(5, dtype=torch.float64)
    assert gradcheck(torch.exp, (x,))  # GL002


def test_mul_inputs_spread():
    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(torch.mul, a, b)  # GL003: TypeError, inputs must be one tuple


def test_positional_eps():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(torch.tanh, (x,), 1e-6, 1e-4)  # GL003: settings are keyword-only


def test_gradgradcheck_trap():
    def weighted(t, w):
        return (t * w).sum()

    t = torch.randn(3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradgradcheck(weighted, t, w)  # GL003: w silently becomes grad_outputs


# The correct twins: no findings.
def test_sin_ok():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert gradcheck(torch.sin, x)  # a bare tensor is fine


def test_mul_ok():
    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64)  # a constant: no grad needed
    assert gradcheck(torch.mul, [a, b], eps=1e-6, atol=1e-4)  # a list is fine
