"""torch, imported once in the zygote and warmed up before any fork.

``REAL`` keeps the real gradcheck, gradgradcheck and GradcheckError: call-site capture
replaces the public names while a run imports user code.
"""

import contextlib
import sys

REAL = {}  # the real gradcheck / gradgradcheck / GradcheckError / the gradcheck module


def import_torch():
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch
    remember_real_gradcheck()
    return torch


def remember_real_gradcheck():
    if REAL:
        return
    import torch

    REAL["gradcheck"] = torch.autograd.gradcheck
    REAL["gradgradcheck"] = torch.autograd.gradgradcheck
    gc_mod = sys.modules["torch.autograd.gradcheck"]
    REAL["module"] = gc_mod
    REAL["GradcheckError"] = gc_mod.GradcheckError


def warm_up():
    """Import and initialise what gradcheck uses lazily, on one thread only. Returns what
    to warm up later, while idle (what only some runs use)."""
    import warnings

    import torch

    # the modules a run needs, so a forked child does not import them again
    import ctypes  # noqa: F401
    import faulthandler  # noqa: F401
    import importlib.util  # noqa: F401
    import inspect  # noqa: F401
    import itertools  # noqa: F401
    import linecache  # noqa: F401
    import math  # noqa: F401
    import re  # noqa: F401
    import traceback  # noqa: F401
    import unittest  # noqa: F401

    for name in ("resource", "torch._subclasses.schema_check_mode"):  # (the latter: lazily by autograd)
        try:
            __import__(name)
        except ImportError:
            pass
    import torch.autograd.forward_ad as fwAD

    class _Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    gc, ggc = REAL["gradcheck"], REAL["gradgradcheck"]
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(3, generator=gen, dtype=torch.float64) + 0.5).requires_grad_()
    z = torch.tensor([0.5 + 0.7j, -1.3 + 0.4j], dtype=torch.complex128, requires_grad=True)

    def dual():
        with fwAD.dual_level():
            d = fwAD.make_dual(x.detach(), torch.ones_like(x))
            fwAD.unpack_dual(d * d)

    def grad():
        out = _Square.apply(x)
        torch.autograd.grad(out, (x,), torch.ones_like(out), retain_graph=True, allow_unused=True)

    steps = [
        lambda: gc(_Square.apply, (x,)),
        lambda: gc(_Square.apply, (x,), fast_mode=True),
        lambda: ggc(_Square.apply, (x,)),
        lambda: ggc(_Square.apply, (x,), fast_mode=True),
        lambda: gc(lambda t: t * t, (z,)),
        lambda: gc(lambda t: t * t, (z,), fast_mode=True),
        grad,
        lambda: torch.view_as_real(z.detach()).reshape(-1),
        lambda: torch.nn.functional.dropout(x, 0.5, training=True),
    ]
    _run_steps(steps)
    torch.manual_seed(0)

    # Forward mode (jvp) is needed only by Functions that define jvp, and its first use
    # imports torch's jvp decompositions (0.17 s): done while the zygote waits for its
    # first request, not before it says it is ready.
    def later():
        _run_steps([lambda: gc(lambda t: (t * t).sum(), (x,), check_forward_ad=True,
                               check_backward_ad=False), dual])
        torch.manual_seed(0)

    return later


def _run_steps(steps):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in steps:
            try:
                step()
            except Exception as e:  # an optimisation only: never fatal
                sys.stderr.write("gradlint worker: a warm-up step failed: %s: %s\n" % (type(e).__name__, e))


def gradcheck_refs():
    """(module, attribute) pairs holding the real gradcheck/gradgradcheck.

    Computed once in the zygote (after the warm-up): sweeping every module in each child
    would touch, and so copy, most of the parent's memory pages. Modules imported later
    (by user code) bind the already-patched functions.
    """
    refs = REAL.get("refs")
    if refs is None:
        real = (REAL["gradcheck"], REAL["gradgradcheck"])
        refs = []
        for name, mod in list(sys.modules.items()):
            d = getattr(mod, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for attr, val in list(d.items()):
                if val is real[0] or val is real[1]:
                    refs.append((name, attr))
        REAL["refs"] = refs
    return refs


SLOW_LEFT_OUT = ("\n(the slow-mode Jacobians torch's fast mode recomputes for this message were left out: the "
                 "worker recomputes the failure itself)\n")


@contextlib.contextmanager
def slow_message_left_out():
    """torch's fast mode, on a mismatch, recomputes both whole Jacobians in slow mode only to print
    them in its message (one backward per output element: 404 of them, 80 s, for an ODE adjoint
    whose forward takes 0.1 s). ``analyse_failure`` recomputes the failure itself, so the verdict —
    and the provisional ✗ sent with it — comes without that wait."""
    module = REAL.get("module")
    real = getattr(module, "_run_slow_mode_and_get_error", None)
    if real is None:
        yield
        return
    module._run_slow_mode_and_get_error = lambda *args, **kwargs: SLOW_LEFT_OUT
    try:
        yield
    finally:
        module._run_slow_mode_and_get_error = real
