"""A second real editor end to end: Emacs (batch) with eglot, configured with the README's
snippet as printed, talks to `gradlint lsp`, receives the diagnostic through flymake,
applies the quick fix, and sees it clear."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from readme_config import python3_on_path, snippet
from test_neovim import SOURCE

SCRIPT = Path(__file__).with_name("emacs_quickfix.el")
EMACS = shutil.which("emacs")

pytestmark = pytest.mark.skipif(
    EMACS is None and not os.environ.get("GRADLINT_REQUIRE_EDITORS"),
    reason="Emacs is not installed (.ci/run installs emacs-nox and elpa-eglot)")


def _run_emacs(tmp_path: Path, source: str, wait_seconds: int = 20) -> dict:
    assert EMACS is not None, "GRADLINT_REQUIRE_EDITORS is set but emacs is missing"
    file = tmp_path / "test_ops.py"
    file.write_text(source)
    result = tmp_path / "result.json"
    config = tmp_path / "gradlint.el"
    config.write_text(snippet("Emacs", "elisp"))
    env = {**os.environ, **python3_on_path(tmp_path), "GRADLINT_EMACS_CONFIG": str(config),
           "GRADLINT_FILE": str(file),
           "GRADLINT_RESULT": str(result), "GRADLINT_DIAG_WAIT": str(wait_seconds),
           "HOME": str(tmp_path)}
    completed = subprocess.run([EMACS, "--batch", "-l", str(SCRIPT)], env=env, capture_output=True,
                               text=True, timeout=120, cwd=tmp_path)
    assert result.exists(), f"emacs wrote no result: {completed.stderr[-2000:]}"
    data = json.loads(result.read_text())
    data["returncode"] = completed.returncode
    return data


def test_emacs_eglot_shows_the_diagnostic_and_applies_the_quick_fix(tmp_path):
    data = _run_emacs(tmp_path, SOURCE)
    assert data["ok"] is True, data
    [before] = data["before"]
    assert before["code"] == "GL001" and before["source"] == "gradlint"
    assert before["range"] == {"start": {"line": 6, "character": 32},  # the inputs argument `(x,)`
                               "end": {"line": 6, "character": 36}}
    assert data["actions"][0] == "gradlint (GL001): Create `x` as float64"
    assert data["fixed_line"] == "    x = torch.randn(3, dtype=torch.float64, requires_grad=True)"
    assert data["steps"] == ["started", "diagnostics", "code actions", "applied", "cleared"]


def test_emacs_negative_control(tmp_path):
    clean = SOURCE.replace("requires_grad=True)", "dtype=torch.float64, requires_grad=True)")
    data = _run_emacs(tmp_path, clean, wait_seconds=4)
    assert data["ok"] is False and data["error"] == "no diagnostics"
