"""`[tool.gradlint]` configuration, through the real command."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from test_cli import FLOAT32, MISSING_GRAD


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _codes(result) -> list[tuple[str, str]]:
    return sorted((f["path"], f["code"]) for f in json.loads(result.stdout))


def test_select_ignore_and_per_file_ignores(cli, tmp_path):
    _write(tmp_path, {
        "pyproject.toml": """
            [tool.gradlint]
            ignore = ["GL002"]
            per-file-ignores = { "tests/legacy/**" = ["GL001"] }
            """,
        "a.py": FLOAT32,
        "b.py": MISSING_GRAD,
        "tests/legacy/old_test.py": FLOAT32,
        "tests/new_test.py": FLOAT32,
    })
    result = cli("check", "--format", "json", cwd=tmp_path)
    assert _codes(result) == [("a.py", "GL001"), ("tests/new_test.py", "GL001")]


def test_more_specific_selector_wins(cli, tmp_path):
    _write(tmp_path, {
        "pyproject.toml": '[tool.gradlint]\nselect = ["GL001"]\nignore = ["GL"]\n',
        "a.py": FLOAT32, "b.py": MISSING_GRAD,
    })
    assert _codes(cli("check", "--format", "json", cwd=tmp_path)) == [("a.py", "GL001")]


def test_exclude(cli, tmp_path):
    _write(tmp_path, {
        "pyproject.toml": '[tool.gradlint]\nexclude = ["third_party/", "**/gen_*.py"]\n',
        "third_party/x.py": FLOAT32, "pkg/gen_ops.py": FLOAT32, "pkg/ops.py": FLOAT32,
    })
    assert _codes(cli("check", "--format", "json", cwd=tmp_path)) == [("pkg/ops.py", "GL001")]


def test_severity_override(cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nseverity = { GL001 = "warning" }\n',
                      "a.py": FLOAT32})
    [finding] = json.loads(cli("check", "--format", "json", cwd=tmp_path).stdout)
    assert finding["severity"] == "warning"


def test_default_dtype_setting(cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.gradlint]\ndefault-dtype = "float64"\n', "a.py": FLOAT32})
    assert cli("check", cwd=tmp_path).returncode == 0


def test_conftest_that_sets_the_default_dtype_silences_default_dtype_findings(cli, tmp_path):
    _write(tmp_path, {
        "tests/conftest.py": "import torch\ntorch.set_default_dtype(torch.float64)\n",
        "tests/test_a.py": FLOAT32,
        "src/a.py": FLOAT32,
    })
    assert _codes(cli("check", "--format", "json", cwd=tmp_path)) == [("src/a.py", "GL001")]


def test_nearest_pyproject_wins(cli, tmp_path):
    _write(tmp_path, {
        "pyproject.toml": '[tool.gradlint]\nignore = ["GL001"]\n',
        "sub/pyproject.toml": '[tool.gradlint]\nselect = ["GL"]\n',
        "a.py": FLOAT32, "sub/b.py": FLOAT32,
    })
    assert _codes(cli("check", "--format", "json", cwd=tmp_path)) == [("sub/b.py", "GL001")]


def test_pyproject_without_section_is_skipped(cli, tmp_path):
    _write(tmp_path, {
        "pyproject.toml": '[tool.gradlint]\nignore = ["GL001"]\n',
        "sub/pyproject.toml": '[project]\nname = "x"\n',
        "sub/b.py": FLOAT32,
    })
    assert cli("check", cwd=tmp_path).returncode == 0


def test_unknown_key_is_exit_2_naming_it(cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nselct = ["GL"]\n', "a.py": FLOAT32})
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("gradlint: error: pyproject.toml [tool.gradlint]: unknown key `selct`")
    assert len(result.stderr.splitlines()) == 1


def test_unknown_code_in_config_is_exit_2(cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nignore = ["GL404"]\n', "a.py": FLOAT32})
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown rule code `GL404`" in result.stderr


def test_invalid_toml_is_exit_2(cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.gradlint\n', "a.py": FLOAT32})
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid TOML" in result.stderr


def test_bad_severity_value(cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nseverity = { GL001 = "fatal" }\n', "a.py": FLOAT32})
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 2 and "`fatal`" in result.stderr


def test_explicit_config(cli, tmp_path):
    _write(tmp_path, {"other.toml": '[tool.gradlint]\nignore = ["GL001"]\n', "a.py": FLOAT32})
    assert cli("check", "--config", "other.toml", cwd=tmp_path).returncode == 0
    missing = cli("check", "--config", "nope.toml", cwd=tmp_path)
    assert missing.returncode == 2 and "config file not found" in missing.stderr


# [tool.gradlint.run] (issue 25: compile and precision checks asked for in the project) ------

def test_run_table_becomes_worker_options(tmp_path):
    from gradlint.engine.config import parse_config

    config = parse_config({"run": {"compile": "aot_eager", "dtype": "bfloat16", "precision-factor": 3}},
                          tmp_path, None)
    assert config.run_options == {"compile": ["aot_eager"], "dtype": "bfloat16", "precision_factor": 3.0}
    assert parse_config({"run": {"compile": True}}, tmp_path, None).run_options == {"compile": True}
    assert parse_config({}, tmp_path, None).run_options == {}


@pytest.mark.parametrize("table, error", [
    ({"compile": "tvm"}, "compile: expected true, false or backends"),
    ({"dtype": "int8"}, "dtype: `int8` is not one of bfloat16, float16, float32"),
    ({"precision-factor": 0.5}, "precision-factor: expected a number ≥ 1"),
    ({"timeout": 3}, "unknown key `timeout`"),
    ("yes", "expected a table"),
])
def test_bad_run_table_is_a_one_line_error(tmp_path, table, error):
    from gradlint.engine.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=re.escape(error)):
        parse_config({"run": table}, tmp_path, None)
