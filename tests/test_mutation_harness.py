"""The mutation harness (scripts/mutation_harness.py) on a small file of our own: each
operator makes the single-bug mutant it describes, and gradlint catches each one."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "mutation_harness.py"

SOURCE = textwrap.dedent('''
    import pytest
    import torch
    from torch.autograd import gradcheck


    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            out = a * b
            ctx.save_for_backward(a, b)
            return out

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.saved_tensors[1], grad * ctx.saved_tensors[0]


    def test_mul():
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        y = torch.randn(3).double().requires_grad_()
        inputs = (x, y)
        assert gradcheck(Mul.apply, inputs, eps=1e-6)
        assert gradcheck(Mul.apply, (x, y))


    @pytest.mark.parametrize("dtype", [torch.float64])
    def test_param(dtype):
        x = torch.randn(3, dtype=dtype, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
''')


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("mutation_harness", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules["mutation_harness"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("mutation_harness", None)
        sys.path.remove(str(SCRIPT.parent))


def test_every_operator_makes_a_mutant_that_gradlint_catches(harness, tmp_path):
    path = tmp_path / "test_ops.py"
    path.write_text(SOURCE)
    mutants = harness.mutants_of(path)
    operators = {(m.rule, m.operator) for m in mutants}
    assert operators >= {
        ("GL001", "dtype64"), ("GL001", "cast64"), ("GL001", "dropcast"), ("GL001", "param64"),
        ("GL002", "nograd"), ("GL003", "spread"), ("GL003", "star"), ("GL003", "posarg"),
        ("GL004", "dropgrad"), ("GL004", "extragrad"), ("GL005", "dropunpack"),
        ("GL005", "localref"), ("GL005", "unpackcount"), ("GL005", "index"),
    }, operators
    linter = harness.Linter()
    original = {(f.code, f.range.start.line) for f in linter.findings(path, SOURCE, tmp_path)}
    assert original == set()
    for mutant in mutants:
        assert mutant.text.count("\n") == SOURCE.count("\n")
        after = {(f.code, f.range.start.line) for f in linter.findings(path, mutant.text, tmp_path)}
        assert any(code == mutant.rule for code, _ in after - original), (mutant.operator, mutant.where)
