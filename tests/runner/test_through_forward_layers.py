"""``through_forward`` reaches a ``MyFn.apply`` bound before the worker wrapped it (fresh
containers, dense outputs, a reseeded RNG, ...): every wrapper is built with ``wrapping`` and is
built again around the bypassed call. Without that, the "reference" of the precision verdict
and the compile checks' ``backward_dropped`` pattern ran the Function's own backward."""
import torch

from gradlint.worker.subject import Subject, densifying_outputs, copying_containers, reseeding
from gradlint.worker.through_forward import through_forward


class Doubled(torch.autograd.Function):
    """forward x*2, backward (wrongly) grad*3: through forward the gradient is 2."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


def _grad(fn):
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(fn(x).sum(), x)
    return g


def test_the_bound_apply_is_reached_through_every_layer():
    fn = Doubled.apply
    for wrap in (copying_containers, densifying_outputs, lambda f: reseeding(f, 0)):
        fn = wrap(fn)
    assert torch.equal(_grad(fn), torch.full((3,), 3.0, dtype=torch.float64))  # the custom backward
    assert torch.equal(_grad(through_forward(fn)), torch.full((3,), 2.0, dtype=torch.float64))


def test_an_unknown_wrapper_is_not_peeled():
    """A wrapper that does not say how to build it again is called as it is: through_forward
    then bypasses only what the patch of Function.apply reaches (nothing, for a bound apply)."""
    inner = Doubled.apply

    def opaque(x):
        return inner(x)

    assert torch.equal(_grad(through_forward(opaque)), torch.full((3,), 3.0, dtype=torch.float64))


def test_a_reseeded_subject_keeps_its_layers():
    subject = Subject.__new__(Subject)
    subject.fn, subject.opts, subject.reseeded = copying_containers(Doubled.apply), {"seed": 0}, False
    subject.reseed()
    assert torch.equal(_grad(through_forward(subject.fn)), torch.full((3,), 2.0, dtype=torch.float64))
