"""`gradlint run` (issue 23), as a subprocess: a ✓ line says what it compared, and a test's
gradcheck call that fails on a Function already reported points to that report."""

from __future__ import annotations

import json
import textwrap

OPS = textwrap.dedent('''
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            (w,) = ctx.saved_tensors
            return grad * w, None


    class Product(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w, grad * x
''')
TEST = textwrap.dedent('''
    import torch
    from torch.autograd import gradcheck

    from ops import Scale


    def test_scale():
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        w = torch.randn(3, dtype=torch.float64, requires_grad=True)
        assert gradcheck(Scale.apply, (x, w))
''')


def _project(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "tests" / "test_scale.py").write_text(TEST)
    return tmp_path


def test_one_report_per_bug_and_what_a_tick_compared(cli, tmp_path):
    root = _project(tmp_path)
    result = cli("run", ".", "--no-cache", cwd=root, timeout=600)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stdout.splitlines() if line[:1] in "✓✗⚠"]
    assert lines[0].startswith("✗ ops.py::Scale: backward returns None for `w`, but the output depends on `w`"), lines
    assert lines[1].startswith("✓ ops.py::Product") and lines[1].endswith("(x, w → output 0; float64)"), lines
    assert lines[2] == "✗ tests/test_scale.py::line 11: the same failure as ops.py::Scale (reported above)", lines
    data = json.loads(cli("run", ".", "--no-cache", "--format", "json", cwd=root, timeout=600).stdout)
    call = next(row for row in data if row["kind"] == "call_site")
    assert call["repeats"] == "ops.py::Scale"
    product = next(row for row in data if row["target"] == "ops.py::Product")["result"]
    assert product["proof"]["inputs"] == ["x", "w"] and product["proof"]["outputs"] == ["output 0"]
