"""A file in the middle of an edit: the syntax error is reported (GL000), and the
blocks that still parse are analysed as usual."""

import torch
from torch.autograd import gradcheck

x = torch.randn(4, requires_grad=True


def test_tanh():
    y = torch.randn(4, requires_grad=True)
    assert gradcheck(torch.tanh, (y,))  # GL001 is still found
