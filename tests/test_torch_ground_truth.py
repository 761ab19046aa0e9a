"""What gradlint says about the seed fixtures is what torch 2.13 really does.

Runs the fixture code with torch: each mistake fails the way its gradlint message says,
and each correct twin passes gradcheck. (Tests may import torch; gradlint itself never
does outside the gradcheck worker.)
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

SEED = Path(__file__).parent / "fixtures" / "seed"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"seed_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _x(*shape, grad=True):
    return torch.rand(*shape, dtype=torch.float64).add(0.5).requires_grad_(grad)


def test_float32_inputs_warn_and_fail_numerically():
    # `torch.autograd.gradcheck.GradcheckError` is an AttributeError in torch 2.13: the
    # name `torch.autograd.gradcheck` is the function; the module is reached by import
    from torch.autograd.gradcheck import GradcheckError

    module = _load(SEED / "mistakes" / "test_float32_input.py")
    for test in (module.test_pow_float32, module.test_exp_default_dtype):
        torch.manual_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(GradcheckError, match="Jacobian mismatch"):
                test()
        assert any("not a double precision" in str(w.message) for w in caught)


def test_no_requires_grad_raises_value_error():
    module = _load(SEED / "mistakes" / "test_missing_requires_grad.py")
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        module.test_exp_no_grad()


def test_inputs_as_separate_arguments_raise_type_error():
    module = _load(SEED / "mistakes" / "test_inputs_not_a_tuple.py")
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        module.test_two_inputs_as_two_arguments()
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
        module.test_second_order_trap()


def test_unsaved_forward_local_is_a_name_error_in_backward():
    module = _load(SEED / "mistakes" / "square_unsaved.py")
    with pytest.raises(NameError, match="name 'x' is not defined"):
        module.SquareForgotToSave.apply(_x(3)).sum().backward()


def test_saved_tensors_without_comma_is_a_tuple():
    module = _load(SEED / "mistakes" / "relu_tuple.py")
    with pytest.raises(TypeError):
        module.ReLUTuple.apply(_x(3)).sum().backward()


def test_backward_gradient_counts():
    module = _load(SEED / "mistakes" / "leaky_relu_count.py")
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients \(expected 2, got 1\)"):
        module.LeakyReLUNoNone.apply(_x(3), 0.1).sum().backward()
    # extra trailing Nones: silently accepted (hence only a hint)
    logits = _x(4)
    module.FocalLossExtraNone.apply(logits, torch.ones(4, dtype=torch.float64), 2.0).backward()
    assert logits.grad is not None


def test_correct_twins_pass_gradcheck():
    usage = _load(SEED / "correct" / "test_gradcheck_usage.py")
    torch.manual_seed(0)
    for name in dir(usage):
        if name.startswith("test_"):
            getattr(usage, name)()
    functions = _load(SEED / "correct" / "functions.py")
    gradcheck = torch.autograd.gradcheck
    assert gradcheck(functions.Square.apply, (_x(4),))
    assert gradcheck(lambda t: functions.LeakyReLU.apply(t, 0.1), (_x(4) - 1.0,))
    assert gradcheck(lambda t: functions.Softmax.apply(t, -1), (_x(2, 3),))
    assert gradcheck(functions.MatMul.apply, (_x(2, 3), _x(3, 2)))
    target = torch.ones(4, dtype=torch.float64)
    functions.FocalLoss.apply(_x(4), target, 2.0).backward()
