"""The documented launch lines never run code from the workspace the editor starts the
server in: not a `gradlint.py` or `gradlint/` there (which `python -m gradlint` would
import instead of gradlint), nor a `libcst.py` or `pygls/` shadowing a dependency."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lsp_helpers import StdioConnection

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SCRIPT = str(Path(PYTHON).parent / "gradlint")
# README, "Safe launch lines": the script, or Python without the working directory on sys.path
LAUNCH_LINES = {
    "gradlint lsp": [SCRIPT, "lsp"],
    "python3 -P -m gradlint lsp": [PYTHON, "-P", "-m", "gradlint", "lsp"],
    "python3 -I -m gradlint lsp": [PYTHON, "-I", "-m", "gradlint", "lsp"],
}
SHADOWED = ("libcst", "pygls", "lsprotocol", "attrs", "cattrs", "typing_extensions", "json")


def _booby_trap(path: Path, marker: Path) -> None:
    path.write_text(f"open({str(marker)!r}, 'a').write({path.name!r} + '\\n')\nraise SystemExit(3)\n")


def _workspace(tmp_path: Path, own_name: str | None) -> tuple[Path, Path]:
    """A workspace full of modules that record it when they are imported."""
    root, marker = tmp_path / "workspace", tmp_path / "imported"
    root.mkdir()
    for name in SHADOWED:
        _booby_trap(root / f"{name}.py", marker)
    if own_name == "module":
        _booby_trap(root / "gradlint.py", marker)
    elif own_name == "package":
        (root / "gradlint").mkdir()
        for name in ("__init__.py", "__main__.py"):
            _booby_trap(root / "gradlint" / name, marker)
    return root, marker


def _serves(command: list[str], root: Path) -> None:
    process = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    connection = StdioConnection(process)
    try:
        connection.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {}}})
        reply = connection.reply(1, timeout=300)
        assert reply["result"]["serverInfo"]["name"] == "gradlint"
        connection.send({"id": 2, "method": "shutdown"})
        connection.reply(2)
        connection.send({"method": "exit"})
        assert process.wait(timeout=300) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("own_name", ["module", "package"])
@pytest.mark.parametrize("line", list(LAUNCH_LINES))
def test_documented_launch_lines_run_nothing_from_the_workspace(tmp_path, line, own_name):
    root, marker = _workspace(tmp_path, own_name)
    _serves(LAUNCH_LINES[line], root)
    assert not marker.exists(), marker.read_text()


def test_python_m_gradlint_does_not_import_dependencies_from_the_workspace(tmp_path):
    """`python -m gradlint` itself drops the working directory from sys.path first thing
    (what it cannot avoid is a `gradlint.py` there: hence the launch lines above)."""
    root, marker = _workspace(tmp_path, None)
    _serves([PYTHON, "-m", "gradlint", "lsp"], root)
    assert not marker.exists(), marker.read_text()


def test_the_readme_documents_the_safe_launch_lines():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("Safe launch lines"):]
    for line in LAUNCH_LINES:
        assert f"`{line}`" in section, line
