"""CI integrations: `--format junit` and `--format json-lines`, and the documented GitHub
Actions workflow (docs/ci/github-actions.yml), whose gradlint commands are run here as
GitHub's runner would run them (bash -eo pipefail, in the checked-out repository)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "ci" / "github-actions.yml"
BIN = Path(sys.executable).parent

FLOAT32 = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
        y = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.cos, (y,))
    """)


def make_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "test_float32.py").write_text(FLOAT32)
    (root / "pkg" / "clean.py").write_text("import torch\n\nx = torch.ones(2)\n")
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [new_code_cell("import torch\nfrom torch.autograd import gradcheck"),
                new_code_cell("gradcheck(torch.sin, (torch.randn(2, requires_grad=True),))")]
    nbformat.write(nb, str(root / "proto.ipynb"))
    return root


# -- formats ------------------------------------------------------------------------------------
def test_junit_has_a_failing_case_per_finding_and_a_passing_case_per_clean_file(cli, tmp_path):
    make_project(tmp_path)
    result = cli("check", "--format", "junit", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites')
    suites = ET.fromstring(result.stdout)
    assert suites.tag == "testsuites"
    assert (suites.get("tests"), suites.get("failures"), suites.get("errors")) == ("4", "3", "0")
    by_file = {suite.get("name"): suite for suite in suites.iter("testsuite")}
    assert set(by_file) == {"pkg/clean.py", "pkg/test_float32.py", "proto.ipynb"}
    [clean] = by_file["pkg/clean.py"].iter("testcase")
    assert clean.find("failure") is None and clean.get("classname") == "pkg/clean.py"
    cases = list(by_file["pkg/test_float32.py"].iter("testcase"))
    assert [c.get("name") for c in cases] == ["GL001 low-precision-gradcheck-input at 7:33",
                                              "GL001 low-precision-gradcheck-input at 9:33"]
    assert [c.get("line") for c in cases] == ["7", "9"]
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "GL001"
    assert failure.text.startswith("pkg/test_float32.py:7:33: GL001 [low-precision-gradcheck-input]")
    [notebook_case] = by_file["proto.ipynb"].iter("testcase")
    assert notebook_case.get("name") == "GL001 low-precision-gradcheck-input at cell 2:1:23"
    assert by_file["pkg/test_float32.py"].get("failures") == "2"


def test_junit_when_everything_passes(cli, tmp_path):
    (tmp_path / "a.py").write_text("import torch\n")
    result = cli("check", "--format", "junit", cwd=tmp_path)
    assert result.returncode == 0
    suites = ET.fromstring(result.stdout)
    assert (suites.get("tests"), suites.get("failures")) == ("1", "0")


def test_json_lines_is_one_object_per_finding(cli, tmp_path):
    make_project(tmp_path)
    lines = cli("check", "--format", "json-lines", cwd=tmp_path).stdout.splitlines()
    full = json.loads(cli("check", "--format", "json", cwd=tmp_path).stdout)
    assert [json.loads(line) for line in lines] == full
    assert len(lines) == 3 and all(line.startswith('{"path":') for line in lines)
    assert [json.loads(line).get("cell") for line in lines].count(2) == 1
    (tmp_path / "pkg" / "test_float32.py").unlink()
    (tmp_path / "proto.ipynb").unlink()
    assert cli("check", "--format", "json-lines", cwd=tmp_path).stdout == ""


# -- the GitHub Actions workflow ------------------------------------------------------------------
def load_workflow() -> dict:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the key `on` as True: GitHub reads it as "on"
    workflow["on"] = workflow.pop(True, workflow.get("on"))
    return workflow


def test_workflow_is_valid_yaml_of_the_right_shape():
    workflow = load_workflow()
    assert workflow["name"] == "gradlint"
    assert set(workflow["on"]) == {"push", "pull_request"}
    assert set(workflow["jobs"]) == {"check", "gradcheck"}
    for job in workflow["jobs"].values():
        assert job["runs-on"] == "ubuntu-latest"
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:
                action, _, version = step["uses"].partition("@")
                assert version.startswith("v"), f"pin {action} to a version"
    check = workflow["jobs"]["check"]
    assert check["permissions"]["security-events"] == "write"
    [upload] = [s for s in check["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif")]
    sarif_step = next(s for s in check["steps"] if "--format sarif" in s.get("run", ""))
    assert sarif_step["run"].endswith(f"> {upload['with']['sarif_file']}")
    # the SARIF is written and uploaded even when the annotation step failed the job
    assert sarif_step["if"] == "always()" and upload["if"] == "always()"
    assert any("--format github" in s.get("run", "") for s in check["steps"])
    assert any(s.get("run", "").startswith("gradlint run") for s in workflow["jobs"]["gradcheck"]["steps"])


def run_step(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """A `run:` step as GitHub's Ubuntu runner runs it (`bash --noprofile --norc -eo pipefail`)."""
    env = {**os.environ, "NO_COLOR": "1", "CI": "true", "GITHUB_ACTIONS": "true",
           "GITHUB_WORKSPACE": str(cwd), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_workflow_commands_run(tmp_path):
    project = make_project(tmp_path / "repo")
    shutil.copytree(ROOT / "tests" / "fixtures" / "run_project", project / "ops")
    workflow = load_workflow()
    outcomes: dict[str, subprocess.CompletedProcess] = {}
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            command = step.get("run")
            if command is None:
                continue
            if step["name"].startswith("Install"):
                assert "pip install" in command  # installs are what this environment already has
                continue
            assert command.startswith("gradlint "), command
            outcomes[step["name"]] = run_step(command, project)

    annotations = outcomes["gradlint check (annotations)"]
    assert annotations.returncode == 1, annotations.stderr
    lines = annotations.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("::error file=") for line in lines)
    assert any("file=pkg/test_float32.py,line=7,col=33," in line for line in lines)

    assert outcomes["gradlint check (SARIF)"].returncode == 0
    sarif = json.loads((project / "gradlint.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert len(sarif["runs"][0]["results"]) == 3

    gradcheck = outcomes["gradlint run"]
    assert gradcheck.returncode == 1, gradcheck.stdout + gradcheck.stderr
    assert "HalfSquare" in gradcheck.stdout
    assert outcomes["gradlint run (JSON report)"].returncode == 0
    report = json.loads((project / "gradcheck.json").read_text())
    assert report and any("HalfSquare" in json.dumps(entry) for entry in report)
