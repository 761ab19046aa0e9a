"""`@gradlint.inputs(...)` is a declaration for the runner and the editor too."""

from __future__ import annotations

import json
import textwrap

from gradlint.runner.targets import find_targets

DECLARED = textwrap.dedent('''\
    import torch
    import gradlint
    from gradlint import inputs as example


    @gradlint.inputs(torch.randn(3, 4),
                     torch.randn(4))
    class MatVec(torch.autograd.Function):
        @staticmethod
        def forward(ctx, m, v):
            ctx.save_for_backward(m, v)
            return m @ v

        @staticmethod
        def backward(ctx, grad):
            m, v = ctx.saved_tensors
            return grad[:, None] * v, m.t() @ grad


    @example(torch.randn(5))
    def soft(x, temperature=1.0):
        return (x / temperature).softmax(0)


    def inputs(*values):
        return lambda f: f


    @inputs(torch.randn(2))
    def not_ours(x):
        return x * 2
    ''')


def test_decorator_is_a_declaration_when_it_resolves_to_gradlint():
    targets = {t.qualname: t for t in find_targets(DECLARED)}
    assert targets["MatVec"].declared_inputs == "(torch.randn(3, 4), torch.randn(4))"
    assert targets["MatVec"].declaration_line == 6
    assert targets["soft"].declared_inputs == "(torch.randn(5),)"
    assert "not_ours" not in targets  # a local `inputs` is not gradlint's


def test_gradlint_run_uses_the_decorator(cli, tmp_path):
    (tmp_path / "ops.py").write_text(DECLARED)
    done = cli("run", "ops.py::MatVec", "--format", "json", "--no-cache", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [entry] = json.loads(done.stdout)
    assert entry["inputs_source"] == "declared at line 6"
    result = entry["result"]
    assert result["status"] == "pass"
    assert [(i["shape"], i["promoted_from"], i["source"]) for i in result["inputs"]] == [
        ([3, 4], "float32", "expression"), ([4], "float32", "expression")]
