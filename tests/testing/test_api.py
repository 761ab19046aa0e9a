"""check_gradients / assert_gradients / @gradlint.inputs, in this process."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import gradlint
from api_functions import CubeDetached, HalfSquare, MulWrongForA, Raises, RowScale, Square, cube


def test_wrong_gradient_report_is_structured_and_readable():
    x = torch.tensor([0.5, -1.2, 0.8])  # float32
    report = gradlint.check_gradients(HalfSquare.apply, x)
    assert not report.ok and not report
    assert (report.status, report.verdict, report.failed_check) == ("fail", "wrong_gradient", "gradcheck")
    assert report.promoted == {"x": "float32"}
    assert report.pattern_kind == "scale" and "analytical = 0.5 × numerical" in report.pattern
    worst = report.worst[0]
    assert worst["input"] == "x" and list(worst["input_index"]) == [1]
    assert worst["numerical"] == pytest.approx(-2.4, rel=1e-4)
    assert worst["analytical"] == pytest.approx(-1.2, rel=1e-4)
    text = str(report)
    assert text.startswith("✗ HalfSquare: Jacobian mismatch")
    assert "promoted from float32" in text and "worst elements:" in text
    assert "analytical = 0.5 × numerical" in text.splitlines()[0]
    assert "HalfSquare.backward" in text  # where to look


def test_assert_gradients_message_is_the_report_not_torch_matrices():
    x = torch.tensor([0.5, -1.2, 0.8], dtype=torch.float64, requires_grad=True)
    with pytest.raises(AssertionError) as raised:
        gradlint.assert_gradients(HalfSquare.apply, x)
    message = str(raised.value)
    assert message == str(gradlint.check_gradients(HalfSquare.apply, x))
    assert "Jacobian mismatch for x, output 0: analytical = 0.5 × numerical" in message
    assert "numerical:tensor" not in message.replace(" ", "").lower()


def test_passing_check_leaves_the_caller_alone():
    x = torch.tensor([0.3, -0.7, 1.4])
    torch.manual_seed(123)
    expected_next = torch.rand(2)
    torch.manual_seed(123)
    report = gradlint.assert_gradients(Square.apply, x)
    assert torch.equal(torch.rand(2), expected_next)  # the RNG stream is untouched
    assert report.ok and report.verdict == "ok"
    ran = {c["name"]: c["status"] for c in report.checks}
    assert ran["gradcheck"] == "pass" and ran["gradgradcheck"] == "pass"
    assert x.dtype == torch.float32 and not x.requires_grad and x.grad is None
    assert torch.equal(x, torch.tensor([0.3, -0.7, 1.4]))


def test_wrt_chooses_the_inputs_checked():
    a, b = torch.tensor([0.5, 1.5]), torch.tensor([-0.4, 0.9])
    assert gradlint.check_gradients(MulWrongForA.apply, a, b, wrt=["b"]).ok
    assert gradlint.check_gradients(MulWrongForA.apply, a, b, wrt=[1]).ok
    report = gradlint.check_gradients(MulWrongForA.apply, a, b)
    assert report.verdict == "wrong_gradient" and report.worst[0]["input"] == "a"
    # tensors that already require grad say which are checked
    assert gradlint.check_gradients(MulWrongForA.apply, a, b.clone().requires_grad_()).ok
    with pytest.raises(ValueError, match="no input named 'c'"):
        gradlint.check_gradients(MulWrongForA.apply, a, b, wrt=["c"])


def test_checks_and_options():
    x = torch.tensor([0.5, -1.2, 0.8])
    # first order right, second order missing: a warning, a failure with strict=True
    warned = gradlint.check_gradients(CubeDetached.apply, x)
    assert (warned.status, warned.verdict, warned.ok) == ("warning", "not_twice_differentiable", True)
    gradlint.assert_gradients(CubeDetached.apply, x)
    failing = gradlint.check_gradients(CubeDetached.apply, x, strict=True)
    assert (failing.ok, failing.failed_check) == (False, "gradgradcheck")
    with pytest.raises(AssertionError, match="not twice differentiable"):
        gradlint.assert_gradients(CubeDetached.apply, x, strict=True)
    only_first = gradlint.check_gradients(CubeDetached.apply, x, checks=["gradcheck"])
    assert only_first.ok and not only_first.warning
    assert {c["name"]: c["status"] for c in only_first.checks}["gradgradcheck"] == "skipped"
    loose = gradlint.check_gradients(HalfSquare.apply, torch.tensor([1e-3, 2e-3]), atol=1e-2,
                                     gradgradcheck=False)
    assert loose.ok
    with pytest.raises(TypeError, match="unknown gradient check option atoll"):
        gradlint.check_gradients(Square.apply, x, atoll=1e-3)
    with pytest.raises(ValueError, match="unknown check vjp"):
        gradlint.check_gradients(Square.apply, x, checks=["vjp"])
    with pytest.raises(ValueError, match="eps must be a non-negative number"):
        gradlint.check_gradients(Square.apply, x, eps=-1)


def test_declared_inputs_are_used_when_none_are_given():
    report = gradlint.check_gradients(RowScale)
    assert report.ok
    assert [i["shape"] for i in report.result.inputs] == [[2, 3], [3]]
    assert "declared with @gradlint.inputs" in str(report)


def test_module_with_float32_parameters_is_checked_on_a_float64_copy():
    layer = torch.nn.Linear(3, 2)
    report = gradlint.check_gradients(layer.forward, torch.randn(4, 3))
    assert report.ok
    assert any("float64 copy" in note for note in report.notes)
    assert layer.weight.dtype == torch.float32


def test_custom_op_with_wrong_backward():
    report = gradlint.check_gradients(cube, torch.tensor([0.5, -1.5]))
    assert report.name == "gradlint_tests::cube"
    assert report.verdict == "wrong_gradient"


def test_exception_in_forward_is_reported():
    report = gradlint.check_gradients(Raises.apply, torch.tensor([1.0]))
    assert (report.status, report.verdict) == ("error", "exception")
    assert "ValueError in forward: forward refuses" in str(report)


def test_importing_the_api_loads_no_language_server_stack():
    code = ("import sys, gradlint\n"
            "assert 'torch' not in sys.modules\n"
            "gradlint.assert_gradients, gradlint.check_gradients, gradlint.inputs\n"
            "heavy = sorted(m for m in ('libcst', 'pygls', 'lsprotocol') if m in sys.modules)\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_without_inputs_they_are_synthesized_and_redrawn_like_the_runner():
    report = gradlint.check_gradients(MulWrongForA.apply)
    assert report.verdict == "wrong_gradient" and report.worst[0]["input"] == "a"
    assert "inputs: synthesized from the signature" in str(report)
    assert "gradcheck (draw 2)" in [check["name"] for check in report.checks]


def test_a_failure_too_large_to_recompute_names_its_inputs_without_a_slow_mode_jacobian():
    """Recomputing the failing Jacobian block costs more than ``max_recompute_evals`` (an image's
    wavelet transform: one backward per output element): the inputs are checked alone in fast mode
    instead, and one backward says which gradient backward drops. A slow-mode gradcheck of the
    whole Jacobian (it ran out of memory on pytorch-wavelets' 3x5x64x64 inverse transform) never runs."""
    from api_functions import BankDoubled, BankDropped

    x = torch.randn(20, 20, dtype=torch.float64)
    h = torch.rand(3, dtype=torch.float64) + 0.5
    report = gradlint.check_gradients(BankDropped.apply, x, h, max_recompute_evals=100)
    assert (report.status, report.verdict, report.pattern_kind) == ("fail", "wrong_gradient", "dropped")
    assert report.summary.startswith("✗ backward returns None for `h`, but the output depends on `h` "
                                     "(fast-mode gradcheck; too large to recompute"), report.summary
    gradcheck = next(c for c in report.checks if c["name"] == "gradcheck")
    assert [m["mode"] for m in gradcheck["details"]["modes"]] == ["fast"]

    report = gradlint.check_gradients(BankDoubled.apply, x, h, max_recompute_evals=100)
    assert (report.status, report.verdict) == ("fail", "wrong_gradient")
    assert report.summary.startswith("✗ Jacobian mismatch: input x (fast-mode gradcheck"), report.summary
    assert "also" not in report.summary  # h's gradient is right: it passes alone
