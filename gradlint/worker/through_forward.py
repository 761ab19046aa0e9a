"""Autograd through forward: the gradients a Function would have without its backward.

Two checks need them: the compile checks (when compiled gradients equal these, torch.compile
dropped the custom backward: the pattern of pytorch#193279) and the precision verdict (the
plain-PyTorch computation of the same gradient, at float64 and at the checked dtype).

``through_forward(fn)`` returns fn with every ``Function.apply`` of a user's Function class
replaced by a direct call of its ``forward`` (torch's own Functions keep their backward), so
autograd differentiates the ops forward runs. An old-style ``forward(ctx, ...)`` gets a
stand-in ctx whose ``save_for_backward``/``mark_dirty``/... do nothing. For a custom op
made with ``torch.library.custom_op`` the op's Python implementation is called instead.

The worker wraps the function it checks (fresh containers, sparse inputs rebuilt, dense outputs,
linked arguments, a reseeded RNG, structured matrices) around a ``MyFn.apply`` bound before any
patch can reach it. Each wrapper is made with ``wrapping``, which records how to build it again
around another function; ``through_forward`` peels the layers, replaces the bound ``apply`` by a
direct call of forward, and builds the same layers around that.
"""

import contextlib

import torch

from .introspect import uses_setup_context

_FUNCTION = torch.autograd.function.Function


class StandInCtx(object):
    """What an old-style forward may call on ctx, doing nothing (the backward never runs)."""

    def __init__(self, args):
        self.needs_input_grad = tuple(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        self.saved_tensors = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def save_for_forward(self, *tensors):
        pass

    def mark_dirty(self, *tensors):
        pass

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = value


def is_users_function(cls):
    return not (getattr(cls, "__module__", "") or "").startswith("torch.")


def call_forward(cls, *args, **kwargs):
    if uses_setup_context(cls):
        return cls.forward(*args, **kwargs)
    return cls.forward(StandInCtx(args), *args, **kwargs)


@contextlib.contextmanager
def backwards_bypassed():
    """While active, ``UserFunction.apply(...)`` runs ``forward`` as plain differentiable code."""
    original = _FUNCTION.__dict__["apply"]
    real_apply = original.__get__(None, _FUNCTION).__func__

    def apply(cls, *args, **kwargs):
        if is_users_function(cls):
            return call_forward(cls, *args, **kwargs)
        return real_apply(cls, *args, **kwargs)

    _FUNCTION.apply = classmethod(apply)
    try:
        yield
    finally:
        _FUNCTION.apply = original


REWRAP = "gradlint_rewrap"


def wrapping(wrapper, inner, rebuild):
    """``wrapper`` (which calls ``inner``) marked so that ``rebuild(other)`` makes the same
    wrapper around another function: ``through_forward`` can then reach the inner call."""
    wrapper.__wrapped__ = inner
    setattr(wrapper, REWRAP, rebuild)
    return wrapper


def _layers(fn):
    """(the innermost function, the rebuilds of the wrappers around it, outermost first)."""
    rebuilds = []
    while getattr(fn, REWRAP, None) is not None and getattr(fn, "__wrapped__", None) is not None:
        rebuilds.append(getattr(fn, REWRAP))
        fn = fn.__wrapped__
    return fn, rebuilds


def through_forward(fn, op=None):
    """fn with custom backwards bypassed; None when that cannot be done (an op without a
    Python implementation)."""
    if op is not None:
        return getattr(op, "_init_fn", None)
    fn, rebuilds = _layers(fn)
    target = fn
    cls = getattr(fn, "__self__", None)
    if isinstance(cls, type) and issubclass(cls, _FUNCTION) and getattr(fn, "__name__", None) == "apply":
        # ``MyFn.apply`` was bound before the patch: call its forward directly
        def target(*args):
            return call_forward(cls, *args)

    for rebuild in reversed(rebuilds):
        target = rebuild(target)

    def bypassed(*args):
        with backwards_bypassed():
            return target(*args)

    return bypassed
