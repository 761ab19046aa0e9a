"""A real editor end to end: headless Neovim, configured with the README's snippet as
printed, talks to `gradlint lsp`, receives the diagnostic, applies the quick fix, and sees
the diagnostic clear."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from readme_config import python3_on_path, snippet

SCRIPT = Path(__file__).with_name("nvim_quickfix.lua")
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
    assert (before["lnum"], before["col"]) == (6, 33)
    assert data["actions"][0] == "gradlint (GL001): Create `x` as float64"
    assert "Suppress GL001 on this line" in data["actions"][1]
    assert data["fixed_line"] == "    x = torch.randn(3, dtype=torch.float64, requires_grad=True)"
    assert data["steps"] == ["started", "diagnostics", "code actions", "applied", "cleared"]


def test_neovim_negative_control(tmp_path):
    """A correct file gets no diagnostics: the harness does not pass by accident."""
    clean = SOURCE.replace("requires_grad=True)", "dtype=torch.float64, requires_grad=True)")
    data = _run_nvim(tmp_path, clean, wait_ms=4000)
    assert not data["ok"] and data["error"] == "no diagnostics"
