"""`gradlint run`, as a subprocess: real workers, real gradcheck."""

from __future__ import annotations

import json
import shutil
import venv
from pathlib import Path

import pytest

PROJECT = Path(__file__).parent / "fixtures" / "run_project"


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    return root


def test_run_reports_each_target_and_fails_on_a_wrong_gradient(cli, project):
    result = cli("run", "ops.py", "--format", "json", "--no-cache", cwd=project, timeout=300)
    assert result.returncode == 1, result.stderr
    runs = {item["target"]: item for item in json.loads(result.stdout)}
    assert set(runs) == {"ops.py::Square", "ops.py::HalfSquare", "ops.py::MatMul"}
    assert runs["ops.py::Square"]["result"]["status"] == "pass"
    # Square's inputs come from the call in the project's tests
    assert runs["ops.py::Square"]["inputs_source"] == "from the gradcheck call at tests/test_ops.py:8"
    half = runs["ops.py::HalfSquare"]["result"]
    assert (half["status"], half["verdict"]) == ("fail", "wrong_gradient")
    assert half["location"]["line"] == 27
    assert runs["ops.py::MatMul"]["inputs_source"] == "declared at line 32"
    matmul = runs["ops.py::MatMul"]["result"]
    assert matmul["status"] == "pass"
    assert [i["promoted_from"] for i in matmul["inputs"]] == ["float32", "float32"]
    assert [i["requires_grad"] for i in matmul["inputs"]] == [True, True]


def test_run_text_report_and_named_symbol(cli, project):
    result = cli("run", "ops.py::HalfSquare", "--no-cache", cwd=project, timeout=300)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    # the mismatch pattern comes first: the backward is off by a constant factor
    assert lines[0].startswith("✗ ops.py::HalfSquare: Jacobian mismatch for x, output 0: "
                               "analytical = 0.5 × numerical (a constant factor) (worst |Δ|"), lines[0]
    assert "    at ops.py:27 (HalfSquare.backward)" in lines
    assert any(line.strip().startswith("worst elements") for line in lines)
    assert lines[-1] == "0 passed, 1 failed."
    ok = cli("run", "ops.py::Square", cwd=project, timeout=300)
    assert ok.returncode == 0 and ok.stdout.startswith("✓ ops.py::Square")
    cached = cli("run", "ops.py::Square", cwd=project, timeout=300)
    assert "(cached)" in cached.stdout.splitlines()[0]


def test_check_options(cli, project):
    loose = cli("run", "ops.py::HalfSquare", "-o", "atol=2", "-o", "rtol=1", "--format", "json",
                "--no-cache", cwd=project, timeout=300)
    [item] = json.loads(loose.stdout)
    assert item["result"]["status"] == "pass" and item["result"]["options"]["atol"] == 2
    bad = cli("run", "ops.py::HalfSquare", "-o", "bogus=1", cwd=project)
    assert bad.returncode == 2 and bad.stderr.startswith("gradlint: error: unknown check option `bogus=1`")


def test_run_usage_errors(cli, project):
    missing = cli("run", "nope.py", cwd=project)
    assert missing.returncode == 2 and missing.stderr == "gradlint: error: path does not exist: nope.py\n"
    unknown = cli("run", "ops.py::Cube", cwd=project)
    assert unknown.returncode == 2
    assert unknown.stderr == "gradlint: error: no autograd Function, custom op or module-level function `Cube` in ops.py\n"
    bad_python = cli("run", "ops.py::Square", "--python", "/nonexistent/python", "--no-cache", cwd=project)
    assert bad_python.returncode == 2
    assert bad_python.stderr.startswith("gradlint: error: ") and len(bad_python.stderr.splitlines()) == 1
    assert "`gradlint run --python PATH ...`" in bad_python.stderr


def test_run_without_torch_says_what_to_do(cli, project, tmp_path):
    env_dir = tmp_path / "no-torch"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(str(env_dir))
    python = str(env_dir / "bin" / "python")
    result = cli("run", "ops.py::Square", "--python", python, "--no-cache", cwd=project, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"gradlint: error: torch is not installed in {python}. ")
    assert "`gradlint run --python PATH ...`" in line  # another interpreter
    assert f"`{python} -m pip install torch==2.13.0`" in line  # or torch there
    assert '`pip install "torch-gradlint[torch] @ git+https://github.com/gradlint/gradlint@v' in line


def test_run_call_site_by_line(cli, project):
    result = cli("run", "tests/test_ops.py::8", "--format", "json", "--no-cache", cwd=project, timeout=300)
    assert result.returncode == 0, result.stdout
    [item] = json.loads(result.stdout)
    assert item["kind"] == "call_site" and item["result"]["status"] == "pass"


def test_ctrl_c_kills_the_runs_and_leaves_no_processes(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "loop.py").write_text(
        "import time\nimport torch\n\n\n"
        "# gradlint: inputs=(torch.ones(2),)\n"
        "class Forever(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        while True:\n            time.sleep(0.01)\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad\n")
    gradlint = str(Path(sys.executable).parent / "gradlint")
    process = subprocess.Popen([gradlint, "run", "loop.py", "--no-cache"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.2)
        workers = _descendants(process.pid)  # the worker, then the run it forks
    assert len(workers) >= 2, "the run never started"
    time.sleep(1.0)  # let the run reach the loop
    os.kill(process.pid, signal.SIGINT)
    process.communicate(timeout=60)
    assert process.returncode == 130
    time.sleep(0.5)
    assert [pid for pid in workers if _alive(pid)] == []


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in (Path("/proc") / str(pid) / "status").read_text()
    except OSError:
        return False


def test_a_call_that_the_test_expects_to_raise_is_not_run_unless_named(cli, tmp_path):
    (tmp_path / "test_errors.py").write_text(
        "import pytest\nimport torch\nfrom torch.autograd import gradcheck\n\n\n"
        "def test_ok():\n"
        "    x = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
        "    assert gradcheck(torch.sin, (x,))\n\n\n"
        "def test_bad_dim():\n"
        "    x = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
        "    with pytest.raises(IndexError):\n"
        "        gradcheck(lambda t: t.sum(5), (x,))\n")
    everything = cli("run", ".", "--no-cache", cwd=tmp_path, timeout=300)
    assert everything.returncode == 0, everything.stdout + everything.stderr
    assert "1 passed, 0 failed, 1 skipped." in everything.stdout
    assert "inside pytest.raises/assertRaises: the test expects this call to raise" in everything.stdout
    named = cli("run", "test_errors.py::14", "--no-cache", cwd=tmp_path, timeout=300)
    assert named.returncode == 1 and "IndexError in forward" in named.stdout


def test_a_call_that_checks_a_same_named_class_elsewhere_gives_no_inputs(cli, tmp_path):
    # a copy of a Function in another module (a vendored or edited version): the test's call
    # checks the original, so it must not lend its inputs to the copy (which is then synthesized)
    square = ("import torch\n\n\nclass Square(torch.autograd.Function):\n"
              "    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x * x\n\n"
              "    @staticmethod\n    def backward(ctx, grad):\n        (x,) = ctx.saved_tensors\n"
              "        return {} * x * grad\n")
    (tmp_path / "ops.py").write_text(square.format(2))
    (tmp_path / "ops_copy.py").write_text(square.format(3))
    (tmp_path / "test_ops.py").write_text(
        "import torch\nfrom torch.autograd import gradcheck\nfrom ops import Square\n\n\n"
        "def test_square():\n"
        "    x = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
        "    assert gradcheck(Square.apply, (x,))\n")
    result = cli("run", "ops.py::Square", "ops_copy.py::Square", "--no-cache", cwd=tmp_path, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "✓ ops.py::Square" in result.stdout
    assert "✗ ops_copy.py::Square: Jacobian mismatch" in result.stdout


def test_a_call_in_a_test_marked_skip_is_not_run_unless_named(cli, tmp_path):
    (tmp_path / "test_slow.py").write_text(
        "import pytest\nimport torch\nfrom torch.autograd import gradcheck\n\n\n"
        "@pytest.mark.skip(\"too slow\")\n"
        "def test_slow():\n"
        "    x = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
        "    assert gradcheck(torch.sin, (x,))\n")
    everything = cli("run", ".", "--no-cache", cwd=tmp_path, timeout=300)
    assert "test_slow.py::line 9: skipped: the test is marked skip: too slow" in everything.stdout
    assert "0 passed, 0 failed, 1 skipped." in everything.stdout
    named = cli("run", "test_slow.py::9", "--no-cache", cwd=tmp_path, timeout=300)
    assert named.returncode == 0 and "1 passed" in named.stdout, named.stdout + named.stderr


def test_a_tests_gradcheck_call_that_a_function_used_runs_once(cli, project):
    # Square takes its inputs from tests/test_ops.py:8; running the whole project reports both
    # targets from one run (the Functions run first; the call site reuses the result)
    result = cli("run", ".", "--format", "json", "--no-cache", cwd=project, timeout=300)
    runs = {item["target"]: item for item in json.loads(result.stdout)}
    square, call = runs["ops.py::Square"], runs["tests/test_ops.py::line 8"]
    assert square["inputs_source"] == "from the gradcheck call at tests/test_ops.py:8"
    assert call["result"]["status"] == square["result"]["status"] == "pass"
    assert call["result"]["id"] == square["result"]["id"]  # the same worker run


def test_the_worker_starts_before_the_planning_imports():
    """`gradlint run` spawns the worker (seconds of torch import) first: loading the CLI does
    not import libcst or the planning modules, which load while the worker starts."""
    import subprocess
    import sys

    code = ("import sys, gradlint.cli.main, gradlint.cli.run; "
            "print(sorted(m for m in ('libcst', 'gradlint.engine.linter', 'gradlint.runner.plans', "
            "'gradlint.runner.targets', 'gradlint.runner.prove') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_cache_lives_in_the_project_root_whatever_folder_run_starts_from(cli, project):
    """Run from a subfolder of a project (pyproject.toml without [tool.gradlint]): the cache
    is the project's, shared with `gradlint check`, and `gradlint clean` removes it."""
    (project / "pyproject.toml").write_text('[project]\nname = "ops"\n')
    ran = cli("run", "../ops.py::Square", cwd=project / "tests", timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert not (project / "tests" / ".gradlint_cache").exists()
    assert list((project / ".gradlint_cache" / "runs").glob("*.json"))
    again = cli("run", "../ops.py::Square", cwd=project / "tests", timeout=300)
    assert "(cached)" in again.stdout
    assert cli("clean", cwd=project / "tests").stdout.startswith("Removed ")
    assert not (project / ".gradlint_cache").exists()
