"""`pytest --gradlint` collects torch.library custom ops: gradcheck through the op and
opcheck, in-process, beside the project's own tests (pytester, in a subprocess)."""

from __future__ import annotations

from pathlib import Path

import pytest

SIN_OPS = (Path(__file__).resolve().parent.parent / "fixtures" / "custom_ops" / "run" / "sin_ops.py").read_text()
GPU_OP = '''

@torch.library.custom_op("fixture::cuda_scale", mutates_args=(), device_types="cuda")
def cuda_scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha
'''
# the project's own test imports the module too: the op must not be registered twice
TESTS = '''
import torch

from pkg.sin_ops import goodsin


def test_goodsin_is_the_registered_op():
    x = torch.tensor([0.5, 1.0])
    assert torch.equal(torch.ops.fixture.goodsin(x), goodsin(x))
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "src" / "pkg").mkdir(parents=True)
    (pytester.path / "src" / "pkg" / "__init__.py").write_text("")
    (pytester.path / "src" / "pkg" / "sin_ops.py").write_text(SIN_OPS + GPU_OP)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_ops.py").write_text(TESTS)
    pytester.makeini("[pytest]\npythonpath = src\n")
    return pytester


def test_custom_ops_are_collected_checked_and_skipped_with_the_reason(project):
    collected = project.runpytest_subprocess("--gradlint", "--collect-only", "-q", "src", timeout=300)
    assert [line for line in collected.outlines if "::" in line] == [
        "src/pkg/sin_ops.py::goodsin", "src/pkg/sin_ops.py::badsin", "src/pkg/sin_ops.py::cuda_scale"]

    result = project.runpytest_subprocess("-W", "ignore:Failed to initialize NumPy", "--gradlint", "-rs",
                                          "src", "tests", timeout=300)
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*_ gradients of badsin _*",
        "✗ badsin: Jacobian mismatch: input x, output 0 *",
        "    at src/pkg/sin_ops.py:38 (bad_backward)",
        "    inputs: synthesized*",
    ])
    where = SIN_OPS.count("\n") + GPU_OP.splitlines().index(
        '@torch.library.custom_op("fixture::cuda_scale", mutates_args=(), device_types="cuda")') + 1
    result.stdout.fnmatch_lines([f"SKIPPED [1] src/pkg/sin_ops.py:{where}: cuda_scale: its kernel is for cuda "
                                 "only (device_types=); gradlint runs on the CPU"])
    # opcheck's compile test logs torch's structured trace: not in the failure's report
    assert "torch.__trace" not in result.stdout.str()


CLAMP_OP = '''import torch


@torch.library.custom_op("pluginfixture::relu_inplace", mutates_args=())
def relu_inplace(x: torch.Tensor) -> torch.Tensor:
    y = x.clamp_(min=0.0)
    return y.clone()


@relu_inplace.register_fake
def _(x):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * (x > 0)


relu_inplace.register_autograd(backward, setup_context=setup_context)
'''


@pytest.mark.parametrize("on_ci", [False, True], ids=["terminal", "CI"])
def test_a_failure_leads_with_its_cause_and_names_the_finding_on_it(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch, on_ci: bool):
    # issue 29: the op clamps x in place undeclared; gradcheck raises in backward, opcheck's
    # schema test fails, `gradlint check` reports GL032 on the clamp. On CI (`CI` set) pytest
    # prints a failure's whole message in the short summary unless it has a one-line crash
    # message: the report must still appear once, the summary carrying its headline only.
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)
    if on_ci:
        monkeypatch.setenv("CI", "true")
    pytester.makepyfile(clamp_op=CLAMP_OP)
    result = pytester.runpytest_subprocess("-W", "ignore:Failed to initialize NumPy", "--gradlint",
                                           "--gradlint-no-cache", "clamp_op.py", timeout=300)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "✗ relu_inplace: opcheck schema: the op writes to its input `x` (`y = x.clamp_(min=0.0)`, line 6) "
        "but mutates_args does not list it",
        "    at clamp_op.py:6 (relu_inplace)",
        "    RuntimeError: Argument x is not defined as mutable but was mutated",
        "    Fix this first: it also explains gradcheck (line 21): RuntimeError in backward: *",
        "    likely cause: clamp_op.py:6: GL032 custom op `pluginfixture::relu_inplace` writes to its input `x`*",
    ])
    assert result.stdout.str().count("modified by an inplace operation") == 1
    result.stdout.fnmatch_lines(["FAILED clamp_op.py::relu_inplace - ✗ relu_inplace: opcheck schema: *"])
