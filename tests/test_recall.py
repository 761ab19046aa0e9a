"""What the rule examples cannot show alone: fixtures from a conftest.py above the file,
hints that do not fail `gradlint check`, and the severity of an extra trailing None next
to a real mistake."""

from __future__ import annotations

import json
import textwrap

from gradlint.engine.linter import LintOptions, lint_source

_CONFTEST = """
import pytest
import torch

@pytest.fixture
def pair():
    a = torch.rand(3, requires_grad=True)
    b = torch.rand(3, dtype=torch.float64, requires_grad=True)
    return a, b

@pytest.fixture
def plain():
    return torch.rand(3, dtype=torch.float64)
"""

_TEST = """
import torch
from torch.autograd import gradcheck

def test_mul(pair):
    assert gradcheck(torch.mul, pair)

def test_plain(plain):
    assert gradcheck(torch.sin, (plain,))
"""


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def test_fixtures_come_from_conftest_files_above(cli, tmp_path):
    _write(tmp_path, {"conftest.py": _CONFTEST, "tests/unit/test_ops.py": _TEST,
                      "tests/conftest.py": "import pytest\n@pytest.fixture\ndef other():\n    return 1\n"})
    result = cli("check", "--format", "json", ".", cwd=tmp_path)
    findings = json.loads(result.stdout)
    assert [(f["code"], f["line"]) for f in findings] == [("GL001", 5), ("GL002", 8)], findings
    assert findings[0]["message"] == ("gradcheck input #0 of `pair` is float32 (torch's default "
                                      "dtype); finite differences need float64")
    assert findings[0]["fix"] is None  # the fixture is in another file


def test_a_conftest_below_the_file_does_not_count(cli, tmp_path):
    _write(tmp_path, {"other/conftest.py": _CONFTEST, "tests/test_ops.py": _TEST})
    result = cli("check", "--format", "json", ".", cwd=tmp_path)
    assert json.loads(result.stdout) == []


_EXTRA_NONE = """
import torch
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return 2 * x * grad, None
"""


def test_hints_are_shown_but_do_not_fail_the_check(cli, tmp_path):
    _write(tmp_path, {"square.py": _EXTRA_NONE})
    result = cli("check", "square.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "GL004 hint: backward returns 2 values" in result.stdout
    assert "1 hint (shown, but not counted as problems)." in result.stdout
    listed = json.loads(cli("check", "--format", "json", "square.py", cwd=tmp_path).stdout)
    assert [f["severity"] for f in listed] == ["hint"]
    # configured up to a warning, it fails the check again
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint]\nseverity = { GL004 = "warning" }\n')
    assert cli("check", "square.py", cwd=tmp_path).returncode == 1


def test_an_extra_none_next_to_a_misplaced_gradient_is_a_warning():
    code = textwrap.dedent("""
        import torch
        class Affine(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                return x * w

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                grad_x = grad * w
                grad_w = grad * x
                return grad_w, grad_x, None
        """)
    findings = lint_source(code, "affine.py", LintOptions(select=frozenset({"GL004"}))).findings
    assert [(f.code, f.severity.value) for f in findings] == [("GL004", "warning")]
