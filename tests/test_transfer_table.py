"""The transfer table (gradlint/analysis/transfer.py) against torch 2.13 itself.

Every tensor method and torch function in the table is run on real tensors of several
dtypes, with and without requires_grad, under grad mode and under ``torch.no_grad()``;
whatever the table claims (a dtype, a requires_grad) must be what torch gives.
"""

from __future__ import annotations

import pytest

from gradlint.analysis import transfer

torch = pytest.importorskip("torch")

_SHAPE = (3, 3)
# argument lists tried in turn after the receiver (the first that torch accepts is used)
_OTHER = object()  # stands for a second tensor operand of the receiver's dtype
_CANDIDATES = [(), (_OTHER,), (0,), (0, 1), (_OTHER, _OTHER), (1, 0, 2), (3, 3), (1.0,),
               ((3, 3),), ((1, 0),), (0, 1, 2), (torch.tensor([True, False, True]).reshape(3, 1),),
               (0, torch.tensor([[0, 1, 2]] * 3)), (torch.tensor([[True, False, True]] * 3), 0.0),
               (0.5,), (0, torch.tensor([0, 1])), (1, (3, 1))]
# methods that need hardware this test machine may not have
_UNTESTABLE = {"cuda": "needs a CUDA device", "pin_memory": "needs an accelerator"}


def _make(dtype, requires_grad):
    if dtype.is_floating_point or dtype.is_complex:
        return torch.rand(_SHAPE, dtype=dtype).add(0.5).requires_grad_(requires_grad)
    return torch.randint(1, 4, _SHAPE, dtype=dtype)


def _call(target, receiver, args, method):
    values = [receiver.detach().clone() if a is _OTHER else a for a in args]
    if method:
        return getattr(receiver, target)(*values)
    return target(receiver, *values)


def _working_args(target, method, dtype):
    for args in _CANDIDATES:
        try:
            with torch.no_grad():
                result = _call(target, _make(dtype, False), args, method)
        except Exception:
            continue
        if isinstance(result, torch.Tensor):
            return args
    return None


def _resolve(qualified):
    obj = torch
    for part in qualified.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


_DTYPES = [torch.float32, torch.float64, torch.int64, torch.complex64]
_ENTRIES = [(name, t, True) for name, t in sorted(transfer.METHODS.items())] + \
           [(name, t, False) for name, t in sorted(transfer.FUNCTIONS.items())]


@pytest.mark.parametrize("name, entry, method", _ENTRIES, ids=[e[0] for e in _ENTRIES])
def test_table_entry_matches_torch(name, entry, method):
    if name in _UNTESTABLE:
        pytest.skip(_UNTESTABLE[name])
    target = name if method else _resolve(name)
    checked = 0
    for dtype in _DTYPES:
        args = _working_args(target, method, dtype)
        if args is None:
            continue
        operands = [str(dtype).split(".")[1]] * (1 + sum(1 for a in args if a is _OTHER))
        numbers = ["float" if isinstance(a, float) else "int" for a in args
                   if isinstance(a, (int, float)) and not isinstance(a, bool)]
        expected_dtype = transfer.result_dtype(entry, operands, numbers, "float32")
        differentiable = dtype.is_floating_point or dtype.is_complex
        for requires_grad in ((False, True) if differentiable else (False,)):
            for no_grad in (False, True):
                receiver = _make(dtype, requires_grad)
                if entry.kind == transfer.INPLACE:
                    receiver = receiver.clone() if requires_grad and not no_grad else receiver.detach().clone()
                    grads = [receiver.requires_grad] + [False] * (len(operands) - 1)
                else:
                    grads = [requires_grad] + [False] * (len(operands) - 1)
                context = torch.no_grad() if no_grad else torch.enable_grad()
                try:
                    with context:
                        result = _call(target, receiver, args, method)
                except RuntimeError:
                    continue  # e.g. an in-place op on a leaf that requires grad
                checked += 1
                if expected_dtype is not None:
                    assert result.dtype == getattr(torch, expected_dtype), (name, dtype, args)
                expected_grad = transfer.result_requires_grad(entry, grads, no_grad)
                if expected_grad is not None:
                    assert result.requires_grad == expected_grad, (name, dtype, requires_grad, no_grad)
    assert checked, f"no way found to call {name}"


@pytest.mark.parametrize("left, right, number, expected", [
    ("float32", "float32", None, "float32"),
    ("float64", "float64", None, "float64"),
    ("float32", None, "float", "float32"),
    ("float32", None, "int", "float32"),
    ("int64", None, "float", "float32"),
    ("int64", None, "int", "int64"),
    ("float64", None, "complex", "complex128"),
])
def test_promotion_matches_torch(left, right, number, expected):
    a = _make(getattr(torch, left), False)
    b = _make(getattr(torch, right), False) if right else {"float": 2.5, "int": 2, "complex": 1j}[number]
    assert (a * b).dtype == getattr(torch, expected)
    dtypes = [left] + ([right] if right else [])
    assert transfer.promote(dtypes, [number] if number else [], "float32") == expected


def test_mixed_dtypes_are_not_claimed():
    """A 0-dim float64 tensor does not promote a float32 one: gradlint claims nothing."""
    a = torch.rand(3)
    assert (a * torch.tensor(2.0, dtype=torch.float64)).dtype == torch.float32
    assert (a * torch.rand(3, dtype=torch.float64)).dtype == torch.float64
    assert transfer.promote(["float32", "float64"], [], "float32") is None
