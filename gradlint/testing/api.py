"""check_gradients and assert_gradients: the runner's checks on a callable, in-process.

    from gradlint import assert_gradients

    def test_my_relu():
        assert_gradients(MyReLU.apply, torch.randn(3, 4))

The same checks as ``gradlint run`` and the editor (gradlint/worker/: forward, input
mutation, randomness, backward determinism, gradcheck, gradgradcheck, forward AD), the
same verdicts, and on failure the same readable report instead of torch's matrices.
"""

from __future__ import annotations

import copy
import os
from dataclasses import replace
from typing import Any, Callable, Iterable

import torch

from ..runner.result import RunResult
from ..worker import inprocess
from ..worker.introspect import param_names
from ..worker.protocol import DEFAULT_OPTIONS
from .declare import declared
from .report import GradientReport

# `checks=[...]` names, and the options that turn each one on or off. forward and gradcheck
# always run; any check left out of the list is turned off.
CHECK_OPTIONS = {
    "input_mutation": "check_input_mutation",
    "random_op": "check_random",
    "nondeterminism": "check_nondeterminism",
    "gradgradcheck": "gradgradcheck",
    "forward_ad": "check_forward_ad",
    "batched_grad": "check_batched_grad",
    "undefined_grad": "check_undefined_grad",
}
ALWAYS = ("forward", "sensitivity", "gradcheck")
CHECK_NAMES = ALWAYS + tuple(CHECK_OPTIONS)
_LOW_PRECISION = (torch.float16, torch.bfloat16, torch.float32)


def check_gradients(fn: Callable, *inputs: Any, wrt: Iterable[int | str] | None = None,
                    checks: Iterable[str] | None = None, name: str | None = None,
                    **options: Any) -> GradientReport:
    """Check the gradients of ``fn`` at ``inputs``; never raises for a wrong gradient.

    ``fn``: a Function's ``apply`` (or the Function class), a custom op, a function, a
    module or a bound module method. With no ``inputs``, the ones declared with
    ``@gradlint.inputs`` are used, else inputs are made from the signature.

    Tensors are checked on float64 copies (float16/bfloat16/float32 are promoted; the
    report says so; ``promote=False`` turns it off); a module's parameters are promoted
    with them, on a copy. Which inputs are differentiated: ``wrt`` (positions or
    parameter names) when given, else the tensors that require grad, else every
    floating-point tensor.

    ``checks``: which checks run (``forward`` and ``gradcheck`` always do), any of
    input_mutation, random_op, nondeterminism, gradgradcheck, forward_ad, batched_grad,
    undefined_grad; by default the runner's plan. ``options``: eps, atol, rtol,
    nondet_tol, fast_mode, seed, worst_k, … (docs/run-result-schema.md, 2.3).
    """
    options = worker_options({**options, "checks": checks})
    function = fn.apply if isinstance(fn, type) and issubclass(fn, torch.autograd.Function) else fn
    display = name or _display_name(fn)
    source = "as passed"
    raw: tuple | None = inputs
    if not inputs:
        raw = declared(fn)
        source = "declared with @gradlint.inputs" if raw is not None else "synthesized from the signature"
    if raw is not None:
        raw = _with_requires_grad(function, raw, wrt)
    elif wrt is not None:
        raise TypeError("check_gradients(): `wrt` needs inputs")
    notes = []
    if options.get("promote", True):
        function, low = _float64_module(function)
        if low:
            notes.append(f"module parameters and buffers checked on a float64 copy (were {', '.join(low)})")
    result = RunResult.from_json(inprocess.check(function, raw, options, name=display))  # the one conversion
    if result.verdict == "bad_request":
        raise ValueError(f"check_gradients(): {result.summary.lstrip('✗ ')}")
    result = replace(result, notes=(*notes, *result.notes))
    return GradientReport(result, display, source, _relative_to_cwd)


def assert_gradients(fn: Callable, *inputs: Any, **kwargs: Any) -> GradientReport:
    """``check_gradients``, raising AssertionError with the readable report unless every
    check passed. Returns the report when they did."""
    __tracebackhide__ = True  # pytest: the failure is the report, not this frame
    report = check_gradients(fn, *inputs, **kwargs)
    if not report.ok:
        raise AssertionError(str(report))
    return report


def worker_options(options: dict[str, Any]) -> dict[str, Any]:
    """The runner's options for ``options`` (its names, plus ``checks=[...]``)."""
    options = dict(options)
    checks = options.pop("checks", None)
    unknown = sorted(set(options) - set(DEFAULT_OPTIONS))
    if unknown:
        raise TypeError(f"unknown gradient check option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown)} (options: checks, {', '.join(sorted(DEFAULT_OPTIONS))})")
    if checks is None:
        return dict(options)
    if isinstance(checks, str):
        checks = [checks]
    wanted = set(checks)
    bad = sorted(wanted - set(CHECK_NAMES))
    if bad:
        raise ValueError(f"unknown check{'s' if len(bad) > 1 else ''} {', '.join(bad)} "
                         f"(checks: {', '.join(CHECK_NAMES)})")
    chosen = {option: check in wanted for check, option in CHECK_OPTIONS.items()}
    return {**chosen, **options}


def _with_requires_grad(fn: Callable, raw: tuple, wrt: Iterable[int | str] | None) -> tuple:
    """The inputs, each tensor a detached alias that requires grad exactly when checked."""
    tensors = [i for i, v in enumerate(raw) if _differentiable(v)]
    if wrt is not None:
        positions = _positions(fn, raw, wrt)
    elif any(raw[i].requires_grad for i in tensors):
        positions = {i for i in tensors if raw[i].requires_grad}
    else:
        positions = set(tensors)
    return tuple(v.detach().requires_grad_(i in positions) if _differentiable(v) else v
                 for i, v in enumerate(raw))


def _positions(fn: Callable, raw: tuple, wrt: Iterable[int | str]) -> set[int]:
    if isinstance(wrt, (int, str)):
        wrt = [wrt]
    owner = getattr(fn, "__self__", None)
    fclass = owner if isinstance(owner, type) and issubclass(owner, torch.autograd.Function) else None
    names = param_names(fn, fclass)
    positions = set()
    for item in wrt:
        if isinstance(item, str):
            if item not in names:
                raise ValueError(f"wrt: no input named {item!r} (inputs: {', '.join(names) or 'unnamed'})")
            index = names.index(item)
        else:
            index = int(item)
        if not 0 <= index < len(raw) or not _differentiable(raw[index]):
            raise ValueError(f"wrt: input {item!r} is not a floating-point or complex tensor")
        positions.add(index)
    return positions


def _differentiable(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


def _float64_module(fn: Callable) -> tuple[Callable, list[str]]:
    """A module (or bound module method) with low-precision parameters: the same on a
    float64 copy of the module, and the dtypes it had."""
    owner = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)
    if not isinstance(owner, torch.nn.Module):
        return fn, []
    low = sorted({str(t.dtype).replace("torch.", "") for t in [*owner.parameters(), *owner.buffers()]
                  if t.dtype in _LOW_PRECISION})
    if not low:
        return fn, []
    double = copy.deepcopy(owner).to(torch.float64)
    if fn is owner:
        return double, low
    return fn.__func__.__get__(double, type(double)), low


def _relative_to_cwd(path: str) -> str:
    if not path:
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _display_name(fn: Any) -> str:
    if isinstance(fn, type):
        return fn.__qualname__
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type) and issubclass(owner, torch.autograd.Function):
        return owner.__qualname__
    custom = getattr(fn, "_qualname", None)  # torch.library.custom_op
    if isinstance(custom, str):
        return custom
    if isinstance(fn, torch.nn.Module):
        return type(fn).__qualname__
    for attribute in ("__qualname__", "__name__"):
        value = getattr(fn, attribute, None)
        if isinstance(value, str):
            return value
    return type(fn).__qualname__
