"""Issue 25 in the user's own tests: ``assert_gradients(..., compile=..., dtype=...)`` and
``gradlint_options`` in the pytest ini reach the compile and precision checks (torch 2.13,
aot_eager only: compiling is slow)."""

from __future__ import annotations

import textwrap

import pytest

OPS = '''
import torch


class StraightThroughRound(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.round(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return grad


class Sin(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.cos(x)
'''

TESTS = '''
import pytest
import torch

import gradlint
from ops import Sin, StraightThroughRound


def test_sin_compiles():
    report = gradlint.assert_gradients(Sin, compile=["aot_eager"], draws=1)
    assert "compiled ×3 (aot_eager)" in report.summary


def test_straight_through_under_compile():
    gradlint.assert_gradients(StraightThroughRound, compile=["aot_eager"], draws=1)


def test_sin_at_bfloat16():
    gradlint.assert_gradients(Sin, dtype="bfloat16", draws=1)
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(ops=OPS, test_ops=TESTS)
    return pytester


def _run(project, *args):
    return project.runpytest_subprocess("-W", "ignore:Failed to initialize NumPy", "-p", "no:cacheprovider",
                                        *args, timeout=600)


def test_assert_gradients_runs_the_compile_and_precision_checks(project):
    result = _run(project, "test_ops.py")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_straight_through_under_compile*",
                                 "*torch.compile(torch.func.grad(f)) changes the gradients of x*"
                                 "your custom backward is not used*"])


def test_ini_options_reach_the_collected_functions(project):
    project.makeini(textwrap.dedent("""
        [pytest]
        gradlint_options =
            compile=["aot_eager"]
            draws=1
        """))
    result = _run(project, "--gradlint", "ops.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED ops.py::StraightThroughRound*compile*"])


def test_the_projects_run_table_reaches_the_collected_functions_under_the_ini(project):
    """`[tool.gradlint.run]` in pyproject.toml asks `pytest --gradlint` for the checks as it asks
    `gradlint run`; the ini's gradlint_options (and markers) win over it."""
    project.makefile(".toml", pyproject=textwrap.dedent("""
        [tool.gradlint.run]
        dtype = "bfloat16"
        compile = "aot_eager"
        """))
    project.makeini("[pytest]\ngradlint_options =\n    compile=false\n    draws=1\n")
    result = _run(project, "--gradlint", "ops.py", "-v")
    # compile switched off by the ini: gradcheck alone cannot judge the straight-through one
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*ops.py::Sin PASSED*"])
    assert "compile func.grad" not in result.stdout.str()
    project.makeini("[pytest]\ngradlint_options =\n    draws=1\n")
    result = _run(project, "--gradlint", "ops.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED ops.py::StraightThroughRound*compile*"])
