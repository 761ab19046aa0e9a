"""`gradlint run --compile/--dtype/--precision-factor` and `[tool.gradlint.run]`, as a
subprocess: real workers, torch 2.13 on CPU (aot_eager only: compiling is slow)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

OPS = textwrap.dedent('''\
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
    ''')


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "ops.py").write_text(OPS)
    (root / "pyproject.toml").write_text('[project]\nname = "ops"\n')
    return root


def _checks(item: dict) -> list[str]:
    return [check["name"] for check in item["result"]["checks"]]


def test_compile_reports_a_dropped_backward_and_what_a_pass_covers(cli, project):
    result = cli("run", "ops.py", "--compile-backend", "aot_eager", "-o", "draws=1", "--no-cache",
                 cwd=project, timeout=600)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    [failed] = [line for line in lines if line.startswith("✗ ops.py::StraightThroughRound")]
    assert failed.endswith("torch.compile(torch.func.grad(f)) changes the gradients of x (backend=aot_eager): "
                           "compiled gradients equal autograd through forward: your custom backward is not used")
    assert any(line.strip().startswith("✗ compile func.grad (aot_eager)") for line in lines)
    passed = lines.index(next(line for line in lines if line.startswith("✓ ops.py::Sin")))
    assert lines[passed + 1].startswith("    compile: 4 comparisons agree with eager (func.grad, compile (aot_eager), ")
    assert lines[-1] == "1 passed, 1 failed."


def test_the_projects_run_table_reaches_the_worker_and_flags_override_it(cli, project):
    (project / "pyproject.toml").write_text(textwrap.dedent('''\
        [project]
        name = "ops"

        [tool.gradlint.run]
        dtype = "bfloat16"
        precision-factor = 3
        '''))
    first = cli("run", "ops.py::Sin", "--format", "json", cwd=project, timeout=300)
    [item] = json.loads(first.stdout)
    assert item["result"]["status"] == "pass", item["result"]["summary"]
    assert item["result"]["options"]["dtype"] == "bfloat16"
    [precision] = [c for c in item["result"]["checks"] if c["name"] == "precision (bfloat16)"]
    assert precision["details"]["factor"] == 3.0
    # the text report of a pass says what the precision verdict covered
    text = cli("run", "ops.py::Sin", cwd=project, timeout=300)
    assert text.stdout.splitlines()[1].startswith("    precision (bfloat16): within k = 3 × the error of "), text.stdout
    # a flag wins over the project; a run with other options is not served from the cache
    plain = cli("run", "ops.py::Sin", "--dtype", "none", "--format", "json", cwd=project, timeout=300)
    [item] = json.loads(plain.stdout)
    assert not item["cached"] and item["result"]["options"].get("dtype") is None
    assert not [name for name in _checks(item) if name.startswith("precision")]
    half = cli("run", "ops.py::Sin", "--dtype", "float16", "--precision-factor", "4", "--format", "json",
               cwd=project, timeout=300)
    [item] = json.loads(half.stdout)
    assert not item["cached"] and "precision (float16)" in _checks(item)
    again = cli("run", "ops.py::Sin", "--dtype", "float16", "--precision-factor", "4", "--format", "json",
                cwd=project, timeout=300)
    assert json.loads(again.stdout)[0]["cached"]


def test_no_compile_switches_off_the_projects_compile_checks(cli, project):
    (project / "pyproject.toml").write_text('[tool.gradlint.run]\ncompile = ["aot_eager"]\n')
    result = cli("run", "ops.py::StraightThroughRound", "--no-compile", "--format", "json", "--no-cache",
                 cwd=project, timeout=300)
    [item] = json.loads(result.stdout)
    assert item["result"]["status"] == "inconclusive"  # gradcheck alone cannot judge a surrogate
    assert not [name for name in _checks(item) if name.startswith(("compile", "func."))]


@pytest.mark.parametrize("args, error", [
    (["--no-compile", "--compile-backend", "aot_eager"], "--no-compile and --compile-backend contradict each other"),
    (["--precision-factor", "0.5"], "--precision-factor: expected a number ≥ 1, got 0.5"),
    (["-o", "dtype=int8"], "-o dtype=int8: `int8` is not one of bfloat16, float16, float32 (or none)"),
    (["-o", "compile=tvm"], "-o compile=tvm: expected true, false or backends among aot_eager, inductor"),
])
def test_bad_run_options_are_usage_errors(cli, project, args, error):
    result = cli("run", "ops.py::Sin", *args, cwd=project)
    assert result.returncode == 2 and result.stderr.startswith(f"gradlint: error: {error}"), result.stderr
