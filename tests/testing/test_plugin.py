"""`pytest --gradlint`: collection, outcomes, the readable report, options, selection, xdist.

Each test runs pytest in a subprocess (pytester) on a small project it makes.
"""

from __future__ import annotations

import textwrap

import pytest

OPS = '''
import torch

import gradlint


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


class HalfSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


class CubeDetached(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * grad * x.detach() ** 2


class NeedsConfig(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, config):
        ctx.scale = config.scale
        return x * config.scale

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class Sqrt(torch.autograd.Function):
    """Only defined for positive inputs: checked with the inputs of the project's test."""

    @staticmethod
    def forward(ctx, x):
        y = x.sqrt()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad / (2 * y)


@gradlint.inputs(torch.randn(2, 3))
def softplus(x, beta=1.0):
    return torch.nn.functional.softplus(x, beta)


def helper(x):
    return x + 1
'''

TESTS = '''
import sys

import torch
from torch.autograd import gradcheck

import pkg.ops as ops
from pkg.ops import Sqrt


def test_sqrt():
    x = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64, requires_grad=True)
    assert gradcheck(Sqrt.apply, (x,))


def test_the_module_is_the_one_pytest_imported():
    assert sys.modules["pkg.ops"] is ops
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "src" / "pkg").mkdir(parents=True)
    (pytester.path / "src" / "pkg" / "__init__.py").write_text("")
    (pytester.path / "src" / "pkg" / "ops.py").write_text(OPS)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_ops.py").write_text(TESTS)
    pytester.makeini("[pytest]\npythonpath = src\n")
    return pytester


def line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-W", "ignore:Failed to initialize NumPy", *args,
                                        timeout=300)


def test_collects_functions_and_declared_functions_only_when_asked(project):
    result = run(project, "--gradlint", "--collect-only", "-q", "src")
    collected = [line for line in result.outlines if "::" in line]
    assert collected == [f"src/pkg/ops.py::{name}" for name in
                         ("Square", "HalfSquare", "CubeDetached", "NeedsConfig", "Sqrt", "softplus")]
    plain = run(project, "--collect-only", "-q", "src")
    assert not [line for line in plain.outlines if "::" in line]


def test_outcomes_report_and_input_sources(project):
    result = run(project, "--gradlint", "-rsP", "src", "tests")
    result.assert_outcomes(passed=6, failed=1, skipped=1, warnings=1)
    out = result.stdout.str()
    # the failure is the runner's report, not torch's matrices
    result.stdout.fnmatch_lines([
        "*_ gradients of HalfSquare _*",
        "✗ HalfSquare: Jacobian mismatch for x, output 0: analytical = 0.5 × numerical*",
        "    at src/pkg/ops.py:* (HalfSquare.backward)",
        "    inputs: synthesized*",
        "    worst elements:",
    ])
    # first order right, second order missing: passes with a warning
    result.stdout.fnmatch_lines(["*GradientCheckWarning: CubeDetached: first-order gradients match; "
                                 "gradgradcheck fails: not twice differentiable*"])
    assert "Numerical:" not in out and "Analytical:" not in out
    # the runner's input sources: the project's own gradcheck call, the decorator
    call = line_of(TESTS, "gradcheck(Sqrt.apply")
    assert f"inputs: from the gradcheck call at tests/test_ops.py:{call}" in out
    assert f"inputs: declared at line {line_of(OPS, '@gradlint.inputs')}" in out
    # no inputs: skipped with the reason, at the Function
    where = line_of(OPS, "class NeedsConfig")
    assert f"SKIPPED [1] src/pkg/ops.py:{where}: NeedsConfig: cannot make a value for `config`" in out


def test_options_from_ini_fixture_and_marker(project):
    project.makeini("[pytest]\npythonpath = src\ngradlint_options =\n    strict=true\n")
    project.makeconftest('''
        import pytest

        @pytest.fixture
        def gradlint_options(gradlint_options, request):
            if request.node.name == "HalfSquare":
                return {**gradlint_options, "atol": 100.0}
            return gradlint_options
    ''')
    (project.path / "tests" / "test_marker.py").write_text(textwrap.dedent('''
        import pytest
        import torch
        from gradlint import assert_gradients

        from pkg.ops import CubeDetached


        @pytest.mark.gradlint(eps=1e-5, checks=["gradcheck"])
        def test_marker(gradlint_options):
            assert gradlint_options == {"strict": True, "eps": 1e-5, "checks": ["gradcheck"]}
            assert_gradients(CubeDetached.apply, torch.tensor([0.5, 1.5]), **gradlint_options)


        @pytest.mark.gradlint(checks=["gradcheck", "gradgradcheck"])
        def test_marker_with_second_order(gradlint_options):
            with pytest.raises(AssertionError, match="not twice differentiable"):
                assert_gradients(CubeDetached.apply, torch.tensor([0.5, 1.5]), **gradlint_options)
    '''))
    result = run(project, "--gradlint", "src", "tests/test_marker.py")
    # HalfSquare passes with the conftest's atol; strict=true (ini) makes CubeDetached's
    # missing second order a failure; the markers tune the two tests
    result.assert_outcomes(passed=6, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["FAILED src/pkg/ops.py::CubeDetached - ✗ CubeDetached: not twice*"])


def test_select_stop_and_rerun_last_failures(project):
    selected = run(project, "--gradlint", "src", "-k", "Square and not Half")
    selected.assert_outcomes(passed=1)
    stopped = run(project, "--gradlint", "src", "-x")
    stopped.assert_outcomes(passed=1, failed=1)  # Square passes, HalfSquare fails, nothing after
    rerun = run(project, "--gradlint", "src", "--lf")
    rerun.assert_outcomes(failed=1)
    rerun.stdout.fnmatch_lines(["*run-last-failure: rerun previous 1 failure*"])


def test_results_are_cached_like_gradlint_run(project):
    """A second session reads the results of unchanged sources from .gradlint_cache/runs
    (same outcomes, and the report says so); --gradlint-no-cache runs them again; an edit
    runs the edited target again."""
    note = "note: the result of an earlier run of the same sources and options"
    first = run(project, "--gradlint", "-rP", "src", "-k", "Square or Sqrt")
    first.assert_outcomes(passed=2, failed=1)
    assert note not in first.stdout.str()
    assert list((project.path / ".gradlint_cache" / "runs").glob("*.json"))
    again = run(project, "--gradlint", "-rP", "src", "-k", "Square or Sqrt")
    again.assert_outcomes(passed=2, failed=1)
    assert again.stdout.str().count(note) == 3  # both passes and the failure's report
    again.stdout.fnmatch_lines(["✗ HalfSquare: Jacobian mismatch for x, output 0*"])
    fresh = run(project, "--gradlint", "--gradlint-no-cache", "-rP", "src", "-k", "Square or Sqrt")
    fresh.assert_outcomes(passed=2, failed=1)
    assert note not in fresh.stdout.str()
    ops = project.path / "src" / "pkg" / "ops.py"
    ops.write_text(ops.read_text().replace("return grad * x\n", "return 2 * grad * x\n", 1))
    edited = run(project, "--gradlint", "-rP", "src", "-k", "Square or Sqrt")
    edited.assert_outcomes(passed=3)  # HalfSquare fixed: the file changed, every target runs again
    assert note not in edited.stdout.str()


def test_xdist_gives_the_same_outcomes(project):
    result = run(project, "--gradlint", "src", "-n", "2")
    result.assert_outcomes(passed=4, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*created: 2/2 workers*", "✗ HalfSquare: Jacobian mismatch*"])


WRONG_CUBE = '''
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x
'''


XDIST = pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["", "xdist"])


@XDIST
def test_testpaths_tests_checks_the_package_the_tests_import(pytester: pytest.Pytester, workers):
    """`testpaths = ["tests"]`: the Functions live in the package, which pytest is never
    pointed at; `pytest --gradlint` finds it through the tests' imports and fails on it.
    Under xdist the workers collect: the controller's summary says it once all the same."""
    (pytester.path / "mypkg").mkdir()
    (pytester.path / "mypkg" / "__init__.py").write_text("")
    (pytester.path / "mypkg" / "ops.py").write_text(WRONG_CUBE)
    (pytester.path / "unrelated").mkdir()
    (pytester.path / "unrelated" / "__init__.py").write_text("")
    (pytester.path / "unrelated" / "more.py").write_text(WRONG_CUBE.replace("Cube", "Other"))
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_use.py").write_text(
        "from mypkg.ops import Cube\n\n\ndef test_imports():\n    assert Cube\n")
    (pytester.path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    result = run(pytester, "--gradlint", "-rf", *workers)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*checked the Functions and custom ops of mypkg/ too (the project's packages "
                                 "that the tests import)*",
                                 "FAILED mypkg/ops.py::Cube - ✗ Cube: Jacobian mismatch*"])
    assert result.stdout.str().count("checked the Functions and custom ops") == 1
    assert "Other" not in result.stdout.str()  # a package the tests do not import
    # without --gradlint, nothing changes
    run(pytester).assert_outcomes(passed=1)


def test_src_layout_without_imports_uses_the_import_roots(pytester: pytest.Pytester):
    (pytester.path / "src" / "lib").mkdir(parents=True)
    (pytester.path / "src" / "lib" / "__init__.py").write_text("")
    (pytester.path / "src" / "lib" / "ops.py").write_text(WRONG_CUBE)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    (pytester.path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["src"]\n')
    result = run(pytester, "--gradlint", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*in the project's import roots*", "FAILED src/lib/ops.py::Cube*"])


@XDIST
def test_no_function_anywhere_is_said_in_the_summary(pytester: pytest.Pytester, workers):
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    (pytester.path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    result = run(pytester, "--gradlint", "-rf", *workers)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= gradlint =*", "checked no autograd Function or custom op: none found "
                                 "under tests; name where they are: `pytest --gradlint src/ tests/`*"])
    assert result.stdout.str().count("= gradlint =") == 1


def test_paths_named_on_the_command_line_are_taken_as_they_are(project):
    """`pytest --gradlint tests/test_ops.py`: the user chose what to run; the package is not
    added (the summary says nothing was checked, and how to point it)."""
    result = run(project, "--gradlint", "tests/test_ops.py")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["checked no autograd Function or custom op: none found under tests/test_ops.py*"])
