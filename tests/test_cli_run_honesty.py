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


def test_a_tick_says_what_it_did_not_cover_and_at_what_resolution(cli, tmp_path):
    # a ✓ line is followed by the branch of backward no input took, and by the coarser step a
    # forward that computes in float32 inside was checked with
    import shutil
    from pathlib import Path

    fixtures = Path(__file__).parent / "runner" / "fixtures"
    for name in ("rare_branch.py", "float32_inside.py"):
        shutil.copy(fixtures / name, tmp_path / name)
    r = cli("run", "--no-cache", "-j", "1", "rare_branch.py::FarArm", "float32_inside.py::Float32Attention",
            cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    far = lines.index(next(line for line in lines if line.startswith("✓ rare_branch.py::FarArm")))
    assert lines[far + 1].startswith("    not covered: backward's branch at line "), lines
    f32 = lines.index(next(line for line in lines if line.startswith("✓ float32_inside.py::Float32Attention")))
    assert lines[f32 + 1].startswith("    checked at float32's resolution: forward computes in float32 inside"), lines
