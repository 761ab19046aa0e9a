"""Runs stay inside the folder they were asked to look in, symlinks followed, unless the
user names the file: `gradlint run .` does not follow a link out of the project, nor
take a gradcheck call from a test file that links out of it. (The editor's rule, runs
only inside the workspace folders, is tested in tests/server/test_server_containment.py.)"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

DOUBLE = textwrap.dedent("""\
    import torch


    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    """)
OUTSIDE_MODULE = textwrap.dedent("""\
    import os

    import torch

    open(os.environ["GRADLINT_TEST_MARKER"], "a").write("outside module ran\\n")


    # gradlint: inputs=(torch.ones(3, dtype=torch.float64, requires_grad=True),)
    class Triple(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            return grad * 3
    """)
OUTSIDE_TEST = textwrap.dedent("""\
    import os

    import torch
    from torch.autograd import gradcheck

    from ops import Double

    open(os.environ["GRADLINT_TEST_MARKER"], "a").write("outside test ran\\n")


    def test_double():
        x = torch.ones(3, dtype=torch.float64, requires_grad=True)
        assert gradcheck(Double.apply, (x,))
    """)


@pytest.fixture
def layout(tmp_path):
    """project/ (ops.py, linked.py -> ../outside/triple.py, tests/test_link.py ->
    ../../outside/test_double.py) and outside/, whose code records that it ran."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "tests").mkdir(parents=True)
    outside.mkdir()
    (project / "ops.py").write_text(DOUBLE)
    (outside / "triple.py").write_text(OUTSIDE_MODULE)
    (outside / "test_double.py").write_text(OUTSIDE_TEST)
    (project / "linked.py").symlink_to(outside / "triple.py")
    (project / "tests" / "test_link.py").symlink_to(outside / "test_double.py")
    marker = tmp_path / "ran"
    return project, outside, marker, {"GRADLINT_TEST_MARKER": str(marker)}


def test_a_directory_run_does_not_follow_links_out_of_it(cli, layout):
    project, outside, marker, env = layout
    result = cli("run", ".", "--format", "json", "--no-cache", cwd=project, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert [item["target"] for item in json.loads(result.stdout)] == ["ops.py::Double"]
    assert (f"gradlint: skipped linked.py: it is a link to {outside / 'triple.py'}, outside .; "
            f"name the file to run it") in result.stderr
    assert not marker.exists(), marker.read_text()


def test_inputs_never_come_from_a_test_file_that_links_out(cli, layout):
    project, _, marker, env = layout
    result = cli("run", "ops.py::Double", "--format", "json", "--no-cache", cwd=project, env=env, timeout=300)
    [item] = json.loads(result.stdout)
    assert item["inputs_source"].startswith("synthesized"), item["inputs_source"]
    assert item["result"]["status"] == "pass"
    assert not marker.exists(), marker.read_text()


def test_a_file_the_user_names_runs_wherever_it_is(cli, layout):
    project, _, marker, env = layout
    result = cli("run", "linked.py", "--format", "json", "--no-cache", cwd=project, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    [item] = json.loads(result.stdout)
    assert item["target"] == "linked.py::Triple" and item["result"]["status"] == "pass"
    assert marker.read_text().startswith("outside module ran")
