"""`gradlint config [PATH]`: the effective configuration and where each value comes from."""

from __future__ import annotations

import json

from gradlint.rules import RULES_BY_CODE


def make_project(root):
    (root / "pkg" / "gen").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[tool.gradlint]\nignore = ["GL003"]\nexclude = ["pkg/gen/"]\n'
        '[tool.gradlint.per-file-ignores]\n"test_*.py" = ["GL002"]\n'
        '[tool.gradlint.severity]\nGL004 = "warning"\n')
    (root / "pkg" / "conftest.py").write_text("import torch\ntorch.set_default_dtype(torch.float64)\n")


def test_text_names_the_origin_of_each_value(cli, tmp_path):
    make_project(tmp_path)
    result = cli("config", "pkg/test_ops.py", "--ignore", "GL005", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    pyproject = str(tmp_path / "pyproject.toml")
    assert lines[0] == "Configuration for pkg/test_ops.py"
    assert lines[1] == f"  configuration file: {pyproject}"
    settings = {line.split()[0]: line for line in lines[4:10]}
    assert settings["select"].endswith("# default") and '["ALL"]' in settings["select"]
    assert settings["ignore"].endswith(f"# {pyproject} + --ignore")
    assert '["GL003", "GL005"]' in settings["ignore"]
    assert settings["exclude"].endswith(f"# {pyproject}")
    assert settings["default-dtype"].endswith("# default")
    assert "  per-file-ignores `test_*.py` matches: ignores GL002" in lines
    enabled = sorted(set(RULES_BY_CODE) - {"GL002", "GL003", "GL005"})
    assert "  enabled rules:  " + ", ".join(enabled) in lines
    assert any(line.startswith("  default dtype:  unknown (a conftest.py") for line in lines)


def test_json_with_flags_and_excludes(cli, tmp_path):
    make_project(tmp_path)
    report = json.loads(cli("config", "pkg/gen/a.py", "--select", "GL001", "--format", "json",
                            cwd=tmp_path).stdout)
    assert report["settings"]["select"] == {"value": ["GL001"], "origin": "--select"}
    assert report["excluded"] is True and report["excludedBy"] == "pkg/gen/"
    assert report["enabledRules"] == ["GL001"]


def test_defaults_without_a_pyproject(cli, tmp_path):
    (tmp_path / "a.py").write_text("import torch\n")
    report = json.loads(cli("config", "a.py", "--format", "json", cwd=tmp_path).stdout)
    assert report["configFile"] is None
    assert {v["origin"] for v in report["settings"].values()} == {"default"}
    assert report["defaultDtype"]["value"] == "auto"


def test_explicit_config_flag(cli, tmp_path):
    make_project(tmp_path)
    other = tmp_path / "other.toml"
    other.write_text('[tool.gradlint]\nselect = ["GL00"]\n')
    report = json.loads(cli("config", "pkg/x.py", "--config", str(other), "--format", "json",
                            cwd=tmp_path).stdout)
    assert report["configFile"] == f"{other} (--config)"
    assert report["settings"]["select"] == {"value": ["GL00"], "origin": str(other)}
