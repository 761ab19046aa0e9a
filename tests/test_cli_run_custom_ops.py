"""`gradlint run` on torch.library custom ops, through the installed command: real
workers, real gradcheck and opcheck."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIN_OPS = ROOT / "tests" / "fixtures" / "custom_ops" / "run" / "sin_ops.py"

FUNCTIONS = textwrap.dedent('''\
    import torch


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * grad * x


    @torch.library.custom_op("project::cuda_scale", mutates_args=(), device_types="cuda")
    def cuda_scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
        return x * alpha
''')


def _readme_block(command: str) -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index(f"$ {command}\n") + len(f"$ {command}\n")
    return readme[start: readme.index("```", start)]


def _without_timings(text: str) -> str:
    return re.sub(r"(?m)^(✓ .*?)  \d+\.\d+ s(  \(.*\))?$", r"\1  T s\2", text)


def test_custom_ops_run_beside_functions(cli, tmp_path):
    shutil.copy(SIN_OPS, tmp_path / "sin_ops.py")
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    result = cli("run", "sin_ops.py", cwd=tmp_path, timeout=300)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"✓ sin_ops\.py::fixture::goodsin  \d+\.\d+ s  \(x → output 0; float64\)", lines[0]), lines[0]
    # one line that names the op and the input whose gradient is wrong
    assert lines[1].startswith("✗ sin_ops.py::fixture::badsin: Jacobian mismatch: input x, output 0 "), lines[1]
    # ... and points at the registered backward
    assert lines[2] == "    at sin_ops.py:38 (bad_backward)"
    assert lines[-1] == "1 passed, 1 failed."
    # the README shows this very run
    assert _without_timings(result.stdout) == _without_timings(_readme_block("gradlint run sin_ops.py"))

    everything = cli("run", ".", "--format", "json", cwd=tmp_path, timeout=300)
    assert everything.returncode == 1, everything.stderr
    rows = {row["target"]: row for row in json.loads(everything.stdout)}
    assert {name: row["kind"] for name, row in rows.items()} == {
        "functions.py::Square": "function_class", "functions.py::project::cuda_scale": "custom_op",
        "sin_ops.py::fixture::goodsin": "custom_op", "sin_ops.py::fixture::badsin": "custom_op"}
    assert rows["functions.py::Square"]["result"]["status"] == "pass"
    assert rows["functions.py::project::cuda_scale"]["skipped"] == \
        "its kernel is for cuda only (device_types=); gradlint runs on the CPU"
    good, bad = rows["sin_ops.py::fixture::goodsin"], rows["sin_ops.py::fixture::badsin"]
    assert good["cached"] and bad["cached"]  # from the first run: same source, same request
    assert good["result"]["target"]["op"] == "fixture::goodsin"
    checks = {check["name"]: check["status"] for check in good["result"]["checks"]}
    assert checks["gradcheck"] == checks["opcheck"] == "pass"
    assert (bad["result"]["status"], bad["result"]["verdict"]) == ("fail", "wrong_gradient")
    # opcheck passes the wrong backward: only gradcheck can tell
    assert {check["name"]: check["status"] for check in bad["result"]["checks"]}["opcheck"] == "pass"


DEFINED = textwrap.dedent('''\
    import torch

    torch.library.define("project::lonely", "(Tensor x) -> Tensor")
    torch.library.define("project::cube", "(Tensor x) -> Tensor")


    @torch.library.impl("project::cube", "cpu")
    def cube_cpu(x):
        return x ** 3


    @torch.library.register_fake("project::cube")
    def _(x):
        return torch.empty_like(x)


    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])


    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x ** 2  # wrong: 3 x^2


    torch.library.register_autograd("project::cube", backward, setup_context=setup_context)
''')


def test_ops_made_with_define_and_an_op_without_a_kernel(cli, tmp_path):
    (tmp_path / "defined.py").write_text(DEFINED)
    listed = cli("run", "defined.py", "--no-cache", "--format", "json", cwd=tmp_path, timeout=300)
    assert listed.returncode == 1, listed.stderr
    rows = {row["target"]: row for row in json.loads(listed.stdout)}
    assert rows["defined.py::project::lonely"]["skipped"] == \
        "defined with torch.library.define, but no kernel is registered in this file (impl)"
    cube = rows["defined.py::project::cube"]["result"]
    assert (cube["status"], cube["verdict"]) == ("fail", "wrong_gradient")
    # the worker cannot see the backward of a `define`d op: the line gradlint found statically
    assert cube["location"]["line"] == DEFINED.splitlines().index("def backward(ctx, grad):") + 1
    assert cube["summary"].startswith("✗ Jacobian mismatch for x, output 0: analytical = 0.667 × numerical")

    named = cli("run", "defined.py::project::lonely", "--no-cache", cwd=tmp_path, timeout=300)
    assert named.returncode == 1
    assert named.stdout.splitlines()[0] == (
        "✗ defined.py::project::lonely: the op `project::lonely` has no kernel for the CPU backend: "
        "register one (torch.library.impl, Library.impl, register_kernel)")
    unknown = cli("run", "defined.py::project::nope", cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr == ("gradlint: error: no autograd Function, custom op or module-level function "
                              "`project::nope` in defined.py\n")


CLAMP_OP = textwrap.dedent('''\
    import torch


    @torch.library.custom_op("project::relu_inplace", mutates_args=())
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


    torch.library.define("project::scaled", "(Tensor x) -> Tensor")


    @torch.library.impl("project::scaled", "cpu")
    def scaled_cpu(x):
        x.mul_(2.0)
        return x * 1.0


    @torch.library.register_fake("project::scaled")
    def _(x):
        return torch.empty_like(x)
''')
TORCH_INPLACE = "one of the variables needed for gradient computation has been modified by an inplace operation"


def test_a_run_leads_with_the_cause_and_names_the_static_finding(cli, tmp_path):
    # issue 29: gradcheck raises in the backward because the op clamps x in place undeclared;
    # the report is opcheck's schema failure at the clamp, with GL032 (the same line) as the
    # likely cause, and torch's sentence once
    (tmp_path / "clamp_op.py").write_text(CLAMP_OP)
    result = cli("run", "clamp_op.py::relu_inplace", "--no-cache", cwd=tmp_path, timeout=300)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "✗ clamp_op.py::relu_inplace: opcheck schema: the op writes to its input `x` (`y = x.clamp_(min=0.0)`, "
        "line 6) but mutates_args does not list it",
        "    at clamp_op.py:6 (relu_inplace)",
        "    RuntimeError: Argument x is not defined as mutable but was mutated"]
    assert lines[3].startswith("    Fix this first: it also explains gradcheck (line 21): RuntimeError in backward: "
                               + TORCH_INPLACE)
    assert lines[4].startswith("    likely cause: clamp_op.py:6: GL032 custom op `project::relu_inplace` writes to "
                               "its input `x` (`x.clamp_(...)`) but mutates_args does not list it")
    assert result.stdout.count(TORCH_INPLACE) == 1

    # an op made with torch.library.define (no autograd formula) whose kernel writes to x: torch
    # refuses the write to an input that requires grad, whatever the input; not "no inputs"
    rows = {row["target"]: row["result"] for row in json.loads(cli(
        "run", "clamp_op.py", "--no-cache", "--format", "json", cwd=tmp_path, timeout=300).stdout)}
    scaled = rows["clamp_op.py::project::scaled"]
    write = CLAMP_OP.splitlines().index("    x.mul_(2.0)") + 1
    assert (scaled["status"], scaled["verdict"]) == ("fail", "input_mutated")
    assert scaled["location"]["line"] == write
    assert scaled["summary"] == f"✗ forward modifies an input that requires grad in place: `x.mul_(2.0)` (line {write})"
    assert [(f["code"], f["line"]) for f in scaled["related_findings"]] == [("GL032", write)]
    relu = rows["clamp_op.py::project::relu_inplace"]
    assert [(f["code"], f["line"], f["file"]) for f in relu["related_findings"]] == \
        [("GL032", 6, str(tmp_path / "clamp_op.py"))]

    # the findings `gradlint check` would report: its configuration and suppressions count
    (tmp_path / "pyproject.toml").write_text("[tool.gradlint]\nignore = [\"GL032\"]\n")
    quiet = cli("run", "clamp_op.py::relu_inplace", "--no-cache", "--format", "json", cwd=tmp_path, timeout=300)
    [row] = json.loads(quiet.stdout)
    assert row["result"]["verdict"] == "op_schema" and row["result"]["related_findings"] == []
