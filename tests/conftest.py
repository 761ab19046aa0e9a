from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# fixture trees are data for gradlint, not tests for pytest
collect_ignore = ["fixtures"]

# tests/testing/test_plugin.py runs pytest --gradlint on projects it makes
pytest_plugins = ("pytester",)


@pytest.fixture(autouse=True, scope="session")
def _users_own_configuration(tmp_path_factory):
    """The folders trusted with `gradlint trust` live in the user's configuration: the tests
    (and every gradlint they start) use an empty one of their own, never the real user's."""
    previous = os.environ.get("GRADLINT_CONFIG_DIR")
    os.environ["GRADLINT_CONFIG_DIR"] = str(tmp_path_factory.mktemp("user-config"))
    yield
    if previous is None:
        os.environ.pop("GRADLINT_CONFIG_DIR", None)
    else:
        os.environ["GRADLINT_CONFIG_DIR"] = previous


def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true",
                     help="rewrite the expected-output snapshots from the current output")


@pytest.fixture
def update_snapshots(request) -> bool:
    return request.config.getoption("--update-snapshots")


@dataclass
class Completed:
    returncode: int
    stdout: str | bytes
    stderr: str | bytes


def gradlint_command() -> list[str]:
    """The installed console script (tests run the real command, as users do)."""
    script = Path(sys.executable).parent / "gradlint"
    if script.exists():
        return [str(script)]
    found = shutil.which("gradlint")
    assert found, "the gradlint command is not installed (pip install -e .)"
    return [found]


@pytest.fixture
def cli():
    def run(*args: str, cwd: Path | str | None = None, stdin: str | bytes | None = None,
            env: dict | None = None, timeout: float = 120, raw: bool = False) -> Completed:
        """``raw``: stdout and stderr as bytes, not decoded."""
        environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
        data = stdin.encode() if isinstance(stdin, str) else stdin
        result = subprocess.run([*gradlint_command(), *args], cwd=cwd, input=data,
                                capture_output=True, env=environment, timeout=timeout)
        if raw:
            return Completed(result.returncode, result.stdout, result.stderr)
        return Completed(result.returncode, result.stdout.decode(), result.stderr.decode())
    return run
