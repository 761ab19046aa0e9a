"""Hostile files and configurations, through the installed command: nothing hangs, nothing
ends in a traceback, every bad configuration is one line and exit 2, and every output
format stays valid UTF-8 whatever the file names are."""

from __future__ import annotations

import base64
import json
import os
import textwrap
from pathlib import Path

import pytest

FLOAT32 = textwrap.dedent("""\
    import torch
    x = torch.randn(3, requires_grad=True)
    torch.autograd.gradcheck(torch.sin, (x,))
    """)
NOT_UTF8_NAME = os.fsdecode(b"caf\xe9.py")  # a Latin-1 file name


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "ok.py").write_text(FLOAT32)
    return root


def _no_traceback(result) -> None:
    assert "Traceback" not in result.stderr, result.stderr


# -- files that are not files --------------------------------------------------------------
def test_a_fifo_named_py_is_reported_not_read(cli, project):
    os.mkfifo(project / "pipe.py")  # opening it for reading would wait for a writer for ever
    result = cli("check", ".", cwd=project, timeout=60)
    assert result.returncode == 1
    assert "pipe.py:1:1: GL000 cannot read file: not a regular file (a FIFO)" in result.stdout
    assert "ok.py:3:" in result.stdout  # the other files are still checked
    named = cli("check", "pipe.py", cwd=project, timeout=60)
    assert "GL000 cannot read file: not a regular file (a FIFO)" in named.stdout
    _no_traceback(result)


def test_a_symlink_to_dev_zero_is_reported_not_read(cli, project):
    (project / "zero.py").symlink_to("/dev/zero")  # reading it never ends (MemoryError)
    result = cli("check", ".", cwd=project, timeout=60)
    assert result.returncode == 1
    assert "zero.py:1:1: GL000 cannot read file: not a regular file (a character device)" in result.stdout
    _no_traceback(result)


def test_a_huge_file_is_refused_by_its_size_before_it_is_read(cli, project):
    with open(project / "huge.py", "wb") as handle:  # sparse: 1 TiB that takes no disk
        handle.truncate(2 ** 40)
    result = cli("check", ".", cwd=project, timeout=60)
    assert "huge.py:1:1: GL000 file is too large to analyse (1048576 MiB; the limit is 8 MiB)" in result.stdout
    _no_traceback(result)


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


def test_gradlint_run_skips_a_fifo_among_the_tests_it_searches(cli, project):
    """`gradlint run` reads the project's tests for a gradcheck call that gives a Function
    its inputs: a FIFO there must not hang it."""
    (project / "ops.py").write_text(DOUBLE)
    (project / "tests").mkdir()
    os.mkfifo(project / "tests" / "test_pipe.py")
    result = cli("run", "ops.py::Double", "--format", "json", "--no-cache", cwd=project, timeout=120)
    assert result.returncode == 0, result.stderr
    [item] = json.loads(result.stdout)
    assert item["result"]["status"] == "pass" and item["inputs_source"].startswith("synthesized")


# -- configurations ------------------------------------------------------------------------
BAD_CONFIGURATIONS = {
    "binary": (bytes(range(256)), "not UTF-8 text (byte 128); TOML files must be UTF-8"),
    "latin-1": ('[tool.gradlint]\nselect = ["GL001"]  # café\n'.encode("latin-1"),
                "not UTF-8 text (byte 41); TOML files must be UTF-8"),
    "tool is a number": (b"tool = 5\n", "`tool` must be a table, not an integer"),
    "tool.gradlint is a string": (b'tool = { gradlint = "all" }\n', "[tool.gradlint] must be a table, not a string"),
    "invalid TOML": (b"[tool.gradlint\n", "invalid TOML: "),
}


@pytest.mark.parametrize("name", list(BAD_CONFIGURATIONS))
def test_a_bad_pyproject_is_one_line_and_exit_2(cli, project, name):
    content, message = BAD_CONFIGURATIONS[name]
    (project / "pyproject.toml").write_bytes(content)
    for command in (["check", "."], ["run", "ok.py"]):
        result = cli(*command, cwd=project, timeout=60)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith(f"gradlint: error: {project / 'pyproject.toml'}: {message}")
        assert len(result.stderr.splitlines()) == 1, result.stderr


def test_a_pyproject_that_is_not_a_file_is_an_error(cli, project):
    os.mkfifo(project / "pyproject.toml")
    result = cli("check", ".", cwd=project, timeout=60)
    assert result.returncode == 2
    assert result.stderr == f"gradlint: error: {project / 'pyproject.toml'}: cannot read: not a regular file (a FIFO)\n"
    explicit = cli("check", ".", "--config", "pyproject.toml", cwd=project, timeout=60)
    assert explicit.returncode == 2 and "not a regular file (a FIFO)" in explicit.stderr


# -- file names that are not UTF-8 ---------------------------------------------------------
def test_json_output_is_valid_utf8_and_keeps_the_exact_name(cli, project):
    (project / NOT_UTF8_NAME).write_text(FLOAT32)
    result = cli("check", "--format", "json", ".", cwd=project, raw=True)
    assert result.returncode == 1
    findings = json.loads(result.stdout.decode("utf-8"))  # strict: raises on invalid UTF-8
    [odd] = [f for f in findings if f["path"] != "ok.py"]
    assert odd["path"] == "caf\ufffd.py"
    assert base64.b64decode(odd["path_bytes"]) == b"caf\xe9.py"
    assert all("path_bytes" not in f for f in findings if f["path"] == "ok.py")


def test_sarif_uri_is_percent_encoded_from_the_bytes(cli, project):
    (project / NOT_UTF8_NAME).write_text(FLOAT32)
    result = cli("check", "--format", "sarif", ".", cwd=project, raw=True)
    sarif = json.loads(result.stdout.decode("utf-8"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert uris == {"caf%E9.py", "ok.py"}


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_text_formats_do_not_crash_on_the_name(cli, project, fmt):
    (project / NOT_UTF8_NAME).write_text(FLOAT32)
    result = cli("check", "--format", fmt, ".", cwd=project, raw=True,
                 env={"PYTHONIOENCODING": "utf-8:strict"})  # stdout as in a UTF-8 locale
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr
    if fmt == "text":
        assert b"caf\xe9.py:3:" in result.stdout  # the name's own bytes, as ls prints them
    else:
        result.stdout.decode("utf-8")
        assert "file=caf\ufffd.py," in result.stdout.decode("utf-8")
