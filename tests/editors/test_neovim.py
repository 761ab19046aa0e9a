"""A real editor end to end: headless Neovim, configured with the README's snippet as
printed, talks to `gradlint lsp`, receives the diagnostic, applies the quick fix, and sees
the diagnostic clear."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from readme_config import python3_on_path, snippet, trust_line

SCRIPT = Path(__file__).with_name("nvim_quickfix.lua")
GRADCHECK_SCRIPT = Path(__file__).with_name("nvim_gradcheck.lua")
NVIM = shutil.which("nvim")

pytestmark = pytest.mark.skipif(
    NVIM is None and not os.environ.get("GRADLINT_REQUIRE_EDITORS"),
    reason="Neovim is not installed (.ci/run installs it)")

SOURCE = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
    """)


def _run_nvim(tmp_path: Path, source: str, wait_ms: int = 20000) -> dict:
    assert NVIM is not None, "GRADLINT_REQUIRE_EDITORS is set but nvim is missing"
    file = tmp_path / "test_ops.py"
    file.write_text(source)
    result = tmp_path / "result.json"
    config = tmp_path / "init.lua"
    config.write_text(snippet("Neovim", "lua"))
    env = {**os.environ, **python3_on_path(tmp_path), "GRADLINT_FILE": str(file),
           "GRADLINT_RESULT": str(result), "HOME": str(tmp_path),
           "GRADLINT_DIAG_WAIT": str(wait_ms)}
    completed = subprocess.run([NVIM, "--headless", "-u", str(config), "-i", "NONE", "-n",
                                "-c", f"luafile {SCRIPT}"], env=env, capture_output=True,
                               text=True, timeout=120, cwd=tmp_path)
    assert result.exists(), f"nvim wrote no result: {completed.stderr[-2000:]}"
    data = json.loads(result.read_text())
    data["returncode"] = completed.returncode
    data["file"] = file.read_text()
    return data


def test_neovim_shows_the_diagnostic_and_applies_the_quick_fix(tmp_path):
    data = _run_nvim(tmp_path, SOURCE)
    assert data["ok"], data
    assert data["returncode"] == 0
    assert data["client"] == "gradlint"
    [before] = data["before"]
    assert before["code"] == "GL001" and before["source"] == "gradlint"
    # the squiggle covers the inputs argument `(x,)`
    assert (before["lnum"], before["col"], before["end_lnum"], before["end_col"]) == (6, 32, 6, 36)
    assert data["actions"][0] == "gradlint (GL001): Create `x` as float64"
    assert "Suppress GL001 on this line" in data["actions"][1]
    assert data["fixed_line"] == "    x = torch.randn(3, dtype=torch.float64, requires_grad=True)"
    assert data["steps"] == ["started", "diagnostics", "code actions", "applied", "cleared"]


def test_neovim_negative_control(tmp_path):
    """A correct file gets no diagnostics: the harness does not pass by accident."""
    clean = SOURCE.replace("requires_grad=True)", "dtype=torch.float64, requires_grad=True)")
    data = _run_nvim(tmp_path, clean, wait_ms=4000)
    assert not data["ok"] and data["error"] == "no diagnostics"


WRONG_BACKWARD = textwrap.dedent("""\
    import torch


    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad
    """)


def _run_gradcheck(tmp_path: Path, trust: bool) -> dict:
    """The README's snippet, plus what the line next to it says: `gradlint trust` in the
    project, then the "Run gradcheck" code action on the Function."""
    project = tmp_path / "project"
    project.mkdir()
    file = project / "ops.py"
    file.write_text(WRONG_BACKWARD)
    config = tmp_path / "init.lua"
    config.write_text(snippet("Neovim", "lua"))
    result = tmp_path / "result.json"
    env = {**os.environ, **python3_on_path(tmp_path), "HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"), "GRADLINT_FILE": str(file),
           "GRADLINT_RESULT": str(result), "GRADLINT_LINE": "3"}
    env.pop("GRADLINT_CONFIG_DIR", None)
    if trust:
        command = trust_line("Neovim")
        assert command == "gradlint trust"
        trusted = subprocess.run([str(Path(sys.executable).parent / "gradlint"), "trust"], cwd=project,
                                 env=env, capture_output=True, text=True, timeout=120)
        assert trusted.returncode == 0, trusted.stderr
    completed = subprocess.run([NVIM, "--headless", "-u", str(config), "-i", "NONE", "-n",
                                "-c", f"luafile {GRADCHECK_SCRIPT}"], env=env, capture_output=True,
                               text=True, timeout=900, cwd=project)
    assert result.exists(), f"nvim wrote no result: {completed.stderr[-2000:]}"
    data = json.loads(result.read_text())
    data["project"] = str(project.resolve())
    return data


def test_neovim_runs_gradcheck_after_gradlint_trust(tmp_path):
    data = _run_gradcheck(tmp_path, trust=True)
    assert data["ok"], data
    assert data["steps"] == ["started", "code action", "ran"], data
    assert "Run gradcheck on `Cube`" in data["actions"]
    answer = data["answer"]
    assert answer["target"] == "Cube"
    result = answer["result"]
    assert result["status"] == "fail" and "Jacobian mismatch" in result["summary"], result
    # the failure is a diagnostic on backward's def (line 11; 0-based 10)
    assert any(d["lnum"] == 10 for d in data["diagnostics"]), data["diagnostics"]


def test_neovim_without_trust_is_told_the_one_line_that_trusts(tmp_path):
    data = _run_gradcheck(tmp_path, trust=False)
    assert data["ok"] and data["steps"] == ["started", "code action", "refused"], data
    assert f"gradlint trust {data['project']}" in data["refused"]
    assert any(f"gradlint trust {data['project']}" in message for message in data["messages"])
