"""`gradlint run` against code that misbehaves at the process level, as a user runs it:
the installed command, a real worker, and a process-tree check afterwards (every process
started from the command carries a token in its environment, so one that escaped into a
session of its own and was re-parented is found too)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from process_tree import kill_tagged, new_token, recorded_pids, tagged, tagged_env

FAULTS = Path(__file__).parent / "runner" / "fixtures" / "faults.py"
TARGETS = ("setsid_child", "double_fork", "fork_bomb", "exit3", "segfault", "memory_bomb",
           "floods_100mb", "reads_stdin", "escapes_then_hangs")
DECLARATION = "# gradlint: inputs=(torch.ones(3, dtype=torch.float64, requires_grad=True),)"


@pytest.fixture
def project(tmp_path) -> Path:
    """The runner's fault fixtures, each behind a module-level function with declared inputs."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(FAULTS, root / "faults_impl.py")
    lines = ["import torch", "", "import faults_impl as impl", ""]
    for name in TARGETS:
        lines += ["", DECLARATION, f"def {name}(x):", f"    return impl.{name}(x)", ""]
    (root / "faults.py").write_text("\n".join(lines))
    return root


@pytest.fixture
def token():
    value = new_token()
    yield value
    kill_tagged(value)


def _gradlint() -> str:
    return str(Path(sys.executable).parent / "gradlint")


def test_every_fault_is_reported_and_nothing_outlives_the_command(project, token, tmp_path):
    pids = tmp_path / "pids"
    result = subprocess.run(
        [_gradlint(), "run", "faults.py", "--format", "json", "--no-cache", "--memory-limit", "256",
         "--timeout", "10"],
        cwd=project, capture_output=True, timeout=300,
        env=tagged_env(token, GRADLINT_TEST_PIDS=str(pids)))
    left = tagged(token)  # at once: `gradlint run` has returned
    assert result.returncode == 1, result.stderr
    statuses = {item["target"].split("::")[1]: item["result"]["status"] for item in json.loads(result.stdout)}
    assert statuses == {
        "setsid_child": "pass", "double_fork": "pass", "fork_bomb": "pass", "exit3": "crash",
        "segfault": "crash", "memory_bomb": "memory", "floods_100mb": "output_limit",
        "reads_stdin": "pass", "escapes_then_hangs": "timeout"}
    assert len(recorded_pids(pids)) >= 6  # setsid child, daemon, bomb (3+), and two more
    assert left == []
    assert b"Traceback" not in result.stderr


def _worker_of(cli_pid: int, token: str) -> int | None:
    for pid in tagged(token):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == cli_pid:
            return pid
    return None


def _start_escapes(project: Path, token: str, pids: Path) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [_gradlint(), "run", "faults.py::escapes_then_hangs", "--no-cache", "--timeout", "120"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=tagged_env(token, GRADLINT_TEST_PIDS=str(pids)))
    deadline = time.monotonic() + 120
    while len(recorded_pids(pids)) < 2:
        assert time.monotonic() < deadline and process.poll() is None, "the run never started"
        time.sleep(0.05)
    worker = _worker_of(process.pid, token)
    assert worker is not None
    return process, worker


def test_a_worker_killed_from_outside_leaves_nothing_behind(project, token, tmp_path):
    """SIGKILL to the worker (as the kernel's OOM killer would): the run dies with it, and
    what the run had started, adopted by `gradlint run`, is killed before it returns."""
    process, worker = _start_escapes(project, token, tmp_path / "pids")
    os.kill(worker, signal.SIGKILL)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "crashed: the gradcheck worker" in out.decode()
    assert tagged(token) == []


def test_sigterm_to_gradlint_run_leaves_nothing_behind(project, token, tmp_path):
    process, _ = _start_escapes(project, token, tmp_path / "pids")
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=300)
    deadline = time.monotonic() + 300  # a safety net: how fast is the machine's, not the test's
    while tagged(token) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert tagged(token) == []
