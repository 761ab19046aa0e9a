"""`gradlint check --timings`: where the CPU time went, on stderr, whatever the output and path.

Only the table's shape is checked (phases, rules, files, counts): never a duration."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

FLOAT32 = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
""")
CLEAN = "import torch\n\n\ndef f(x):\n    return torch.sin(x)\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test_ops.py").write_text(FLOAT32)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def table(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Timings (CPU seconds):"))
    return lines[start:]


def labels(lines: list[str]) -> list[str]:
    """Each row's label (the text before its figure)."""
    return [line.rsplit(None, 1)[0].strip() for line in lines[1:] if line.startswith("  ")]


def test_text_output_unchanged_and_table_on_stderr(cli, project):
    plain = cli("check", "--no-cache", ".", cwd=project)
    timed = cli("check", "--no-cache", "--timings", ".", cwd=project)
    assert timed.returncode == plain.returncode == 1
    assert timed.stdout == plain.stdout
    lines = table(timed.stderr)
    assert "lint passes" in lines[0]
    assert lines[0].startswith("Timings (CPU seconds): 2 files checked, ")
    assert "0 answered from the cache" in lines[0]
    rows = labels(lines)
    for phase in ("total", "importing libcst and the rules", "reading files", "parsing (libcst)",
                  "rules (with the analysis they ask for)", "GL001 low-precision-gradcheck-input",
                  "positions of findings", "other"):
        assert phase in rows, (phase, rows)
    assert "  slowest files:" in lines
    assert {"test_ops.py", "clean.py"} <= {line.split()[-1] for line in lines if line.startswith("    ")}
    assert lines[-1].startswith("  the whole command so far")


def test_json_stays_json(cli, project):
    result = cli("check", "--no-cache", "--timings", "--format", "json", ".", cwd=project)
    [finding] = json.loads(result.stdout)
    assert finding["code"] == "GL001"
    assert "GL001 low-precision-gradcheck-input" in labels(table(result.stderr))


def test_workers_time_is_counted(cli, project):
    for index in range(6):
        (project / f"test_more_{index}.py").write_text(FLOAT32)
    result = cli("check", "--no-cache", "--timings", "-j", "2", ".", cwd=project)
    lines = table(result.stderr)
    assert lines[0].startswith("Timings (CPU seconds): 8 files checked, ")
    assert "GL001 low-precision-gradcheck-input" in labels(lines)


def test_cache_answers_are_counted(cli, project):
    cli("check", ".", cwd=project)
    again = cli("check", "--timings", ".", cwd=project)
    assert "0 files checked, none parsed, 2 answered from the cache" in table(again.stderr)[0]


def test_one_file_from_stdin(cli, project):
    result = cli("check", "--timings", "--stdin-filename", "test_ops.py", cwd=project, stdin=FLOAT32)
    assert result.returncode == 1
    lines = table(result.stderr)
    assert lines[0].startswith("Timings (CPU seconds): 1 file checked, ")
    assert "GL001 low-precision-gradcheck-input" in labels(lines)


@pytest.mark.parametrize("mode", [["--diff"], ["--write-baseline"], ["--fix", "--stdin-filename", "t.py"]])
def test_paths_that_return_early_still_print_the_table(cli, project, mode):
    stdin = FLOAT32 if "--stdin-filename" in mode else None
    args = [] if stdin else ["."]
    result = cli("check", "--no-cache", "--timings", *mode, *args, cwd=project, stdin=stdin)
    assert "GL001 low-precision-gradcheck-input" in labels(table(result.stderr)), result.stderr
