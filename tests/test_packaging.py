"""The package as a stranger gets it: a wheel built from the tracked files of this clone,
installed under its own name (torch-gradlint) into a fresh venv that has nothing else, and
then `gradlint check`, `gradlint lsp` and `gradlint run --python ...` from that venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import gradlint

ROOT = Path(__file__).resolve().parent.parent
WHEEL = f"torch_gradlint-{gradlint.__version__}-py3-none-any.whl"


def _clean_env() -> dict[str, str]:
    """No trace of the test's own environment: the fresh venv must stand on its own."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    return {k: v for k, v in os.environ.items() if k not in drop} | {"NO_COLOR": "1"}


def _run(args, cwd: Path, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=_clean_env(), capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def _tracked_tree(destination: Path) -> Path:
    """The files `git clone` would give (built from these, not from the working tree's extras)."""
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in listing.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target)
    return destination


def _initialize(command: list[str], cwd: Path) -> dict:
    """Start `gradlint lsp`, send `initialize`, return the answer; then shutdown and exit."""
    def frame(message: dict) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def read(stream) -> dict:
        length = 0
        while (line := stream.readline().strip()):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(stream.read(length))

    proc = subprocess.Popen(command, cwd=cwd, env=_clean_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": cwd.as_uri(), "capabilities": {}}}))
        proc.stdin.flush()
        answer = read(proc.stdout)
        while answer.get("id") != 1:  # notifications (log messages) may come first
            answer = read(proc.stdout)
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
        return answer
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_the_wheel_installs_under_its_own_name_into_a_fresh_venv_and_works(tmp_path):
    # 1. the wheel, from a clone's files (pinned setuptools of requirements-dev.txt, offline)
    source = _tracked_tree(tmp_path / "clone")
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "--disable-pip-version-check", "--wheel-dir", tmp_path / "dist", source], cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    wheel = tmp_path / "dist" / WHEEL
    assert wheel.is_file(), sorted(p.name for p in (tmp_path / "dist").iterdir())
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"torch_gradlint-{gradlint.__version__}.dist-info/METADATA").decode()
        entry_points = archive.read(f"torch_gradlint-{gradlint.__version__}.dist-info/entry_points.txt").decode()
    assert "Name: torch-gradlint\n" in metadata
    assert 'Requires-Dist: torch==2.13.0; extra == "torch"' in metadata  # pip install torch-gradlint[torch]
    assert "gradlint = gradlint.cli.main:main" in entry_points
    assert {"gradlint/worker/__main__.py", "gradlint/server/server.py", "gradlint/rules/__init__.py"} <= names
    assert not any(name.startswith(("tests/", "vscode-extension/")) for name in names)

    # 2. a fresh venv with nothing but pip; the wheel and its dependencies (from the index)
    env_dir = tmp_path / "fresh venv"  # a space in the path, as on many machines
    venv.EnvBuilder(with_pip=True, symlinks=True).create(str(env_dir))
    python, command = env_dir / "bin" / "python", env_dir / "bin" / "gradlint"
    installed = _run([python, "-m", "pip", "install", "--disable-pip-version-check", wheel], cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    probe = _run([python, "-c", "import gradlint, importlib.metadata as m, json; print(json.dumps(["
                  "m.version('torch-gradlint'), gradlint.__file__, m.packages_distributions()['gradlint']]))"],
                 cwd=tmp_path)
    version, module, providers = json.loads(probe.stdout)
    assert version == gradlint.__version__ and providers == ["torch-gradlint"]
    assert Path(module).is_relative_to(env_dir), module
    assert _run([python, "-c", "import torch"], cwd=tmp_path).returncode != 0, "the fresh venv has no torch"

    # 3. gradlint check
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    checked = _run([command, "check", "examples"], cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr
    assert " GL001 " in checked.stdout and any(
        line.startswith("Found ") for line in checked.stdout.splitlines()[-3:])

    # 4. gradlint lsp answers initialize (what an editor does first)
    answer = _initialize([str(command), "lsp"], tmp_path)
    assert answer["id"] == 1 and "result" in answer, answer
    capabilities = answer["result"]["capabilities"]
    assert capabilities["codeActionProvider"] and capabilities["codeLensProvider"]
    assert "gradlint.runGradcheck" in capabilities["executeCommandProvider"]["commands"]

    # 5. gradlint run: the worker comes from the installed wheel and runs in another
    #    interpreter, one with torch (this test's)
    shutil.copytree(ROOT / "tests" / "fixtures" / "run_project", tmp_path / "project")
    ran = _run([command, "run", "ops.py::Square", "--python", sys.executable, "--no-cache"],
               cwd=tmp_path / "project")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("✓ ops.py::Square")
    # ... and without --python, in the venv's own interpreter (no torch), it says what to do
    no_torch = _run([command, "run", "ops.py::Square", "--no-cache"], cwd=tmp_path / "project")
    assert no_torch.returncode == 2
    assert no_torch.stderr.startswith(f"gradlint: error: torch is not installed in {python}")
    assert "--python PATH" in no_torch.stderr and '"torch-gradlint[torch] @ git+' in no_torch.stderr
