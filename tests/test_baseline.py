"""The baseline, through the `gradlint` command: `--write-baseline` records today's findings,
later runs report only new ones (whatever moved), fixed entries are reported and dropped by
the next `--write-baseline`, and every output format honours it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from gradlint.engine.baseline import Key, scope_of, without_comment

OPS = textwrap.dedent("""\
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x * alpha

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.alpha


    class Shift(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            ctx.beta = beta
            return x - beta

        @staticmethod
        def backward(ctx, grad):
            return grad * 1.0
    """)

TESTS = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))


    def test_cos():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.cos, (x,))
    """)

NEW_MISTAKE = textwrap.dedent("""\


    def test_tan():
        y = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.tan, (y,))
    """)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.gradlint]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ops.py").write_text(OPS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(TESTS)
    return tmp_path


def _baseline(project: Path, name: str = "gradlint-baseline.json") -> dict:
    return json.loads((project / name).read_text())


def _entries(document: dict) -> int:
    return sum(entry.get("count", 1) for entries in document["files"].values() for entry in entries)


def _findings(result) -> list[str]:
    return [line for line in result.stdout.splitlines() if ": GL0" in line]


def test_a_baseline_holds_through_moved_lines_and_reports_only_a_new_mistake(cli, project):
    before = cli("check", cwd=project)
    assert before.returncode == 1 and len(_findings(before)) == 4, before.stdout
    written = cli("check", "--write-baseline", cwd=project)
    assert written.returncode == 0, written.stderr
    assert written.stdout.strip() == "Wrote gradlint-baseline.json: 4 findings in 2 files."
    document = _baseline(project)
    assert sorted(document["files"]) == ["pkg/ops.py", "tests/test_ops.py"]
    assert {entry["scope"] for entry in document["files"]["pkg/ops.py"]} == {"Scale.backward", "Shift.backward"}
    assert not any("line" in entry for entries in document["files"].values() for entry in entries)

    clean = cli("check", cwd=project)
    assert clean.returncode == 0, clean.stdout
    assert clean.stdout.splitlines() == ["All checks passed!",
                                         "4 findings in the baseline (gradlint-baseline.json) not shown."]

    # every line moves: imports and a helper above, a class in between, another's lines edited
    ops = OPS.replace("import torch\n", "import math\nimport torch\n\n\ndef helper(v):\n    return v\n", 1)
    ops = ops.replace("class Shift", "class Unrelated:\n    pass\n\n\nclass Shift")
    ops = ops.replace("ctx.alpha = alpha", "ctx.alpha = alpha  # kept for backward")
    (project / "pkg" / "ops.py").write_text(ops)
    tests = TESTS.replace("def test_cos", "def test_exp():\n    pass\n\n\ndef test_cos")
    (project / "tests" / "test_ops.py").write_text(tests + NEW_MISTAKE)

    result = cli("check", cwd=project)
    assert result.returncode == 1, result.stdout
    [new] = _findings(result)
    assert new.startswith("tests/test_ops.py:21:33: GL001 gradcheck input `y`")
    assert "Found 1 problem" in result.stdout
    assert "4 findings in the baseline (gradlint-baseline.json) not shown." in result.stdout

    # --no-baseline shows everything
    assert len(_findings(cli("check", "--no-baseline", cwd=project))) == 5


def test_fixed_findings_are_removable_and_the_next_write_drops_them(cli, project):
    cli("check", "--write-baseline", cwd=project)
    fixed = TESTS.replace("x = torch.randn(3, requires_grad=True)\n    assert gradcheck(torch.sin",
                          "x = torch.randn(3, dtype=torch.float64, requires_grad=True)\n    assert gradcheck(torch.sin")
    (project / "tests" / "test_ops.py").write_text(fixed)
    result = cli("check", cwd=project)
    assert result.returncode == 0, result.stdout
    assert ("1 baseline entry matches no finding any more (fixed): `gradlint check --write-baseline` "
            "removes it.") in result.stdout
    rewritten = cli("check", "--write-baseline", cwd=project)
    assert rewritten.stdout.strip() == ("Wrote gradlint-baseline.json: 3 findings in 2 files "
                                        "(1 fixed entry dropped).")
    assert _entries(_baseline(project)) == 3
    again = cli("check", cwd=project)
    assert again.returncode == 0 and "no finding any more" not in again.stdout


def test_a_run_over_some_files_or_codes_keeps_the_others_entries(cli, project):
    cli("check", "--write-baseline", cwd=project)
    (project / "pkg" / "ops.py").write_text("import torch\n")  # every finding of ops.py fixed
    one_file = cli("check", "tests/test_ops.py", cwd=project)
    assert one_file.returncode == 0 and "no finding any more" not in one_file.stdout, one_file.stdout
    one_code = cli("check", "--select", "GL001", cwd=project)
    assert "no finding any more" not in one_code.stdout  # GL004 was not checked
    cli("check", "--write-baseline", "tests/test_ops.py", cwd=project)
    assert sorted(_baseline(project)["files"]) == ["pkg/ops.py", "tests/test_ops.py"]
    cli("check", "--write-baseline", "--select", "GL001", cwd=project)
    assert sorted(_baseline(project)["files"]) == ["pkg/ops.py", "tests/test_ops.py"]
    everything = cli("check", "--write-baseline", cwd=project)
    assert "(2 fixed entries dropped)" in everything.stdout
    assert sorted(_baseline(project)["files"]) == ["tests/test_ops.py"]


def test_identical_findings_are_counted(cli, tmp_path):
    body = "x = torch.randn(3, requires_grad=True)\nassert gradcheck(torch.sin, (x,))\n"
    (tmp_path / "test_a.py").write_text("import torch\nfrom torch.autograd import gradcheck\n" + body * 2)
    cli("check", "--write-baseline", cwd=tmp_path)
    [entry] = _baseline(tmp_path)["files"]["test_a.py"]
    assert entry["count"] == 2
    (tmp_path / "test_a.py").write_text("import torch\nfrom torch.autograd import gradcheck\n" + body * 3)
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 1 and len(_findings(result)) == 1, result.stdout


def test_configured_and_explicit_baseline_files(cli, project):
    (project / "pyproject.toml").write_text('[tool.gradlint]\nbaseline = "ci/gradlint-baseline.json"\n')
    missing = cli("check", cwd=project)
    assert missing.returncode == 2
    assert missing.stderr.strip() == ("gradlint: error: baseline file not found: ci/gradlint-baseline.json "
                                      "(create it with `gradlint check --write-baseline`)")
    assert cli("check", "--write-baseline", cwd=project).returncode == 0
    assert (project / "ci" / "gradlint-baseline.json").is_file()
    assert not (project / "gradlint-baseline.json").exists()
    # paths in it are relative to its own directory
    assert sorted(_baseline(project, "ci/gradlint-baseline.json")["files"]) == ["../pkg/ops.py",
                                                                                  "../tests/test_ops.py"]
    assert cli("check", cwd=project / "tests").returncode == 0  # found from a subdirectory too
    # --baseline names another file, for reading and writing
    other = project / "other.json"
    assert cli("check", "--baseline", str(other), cwd=project).returncode == 2
    cli("check", "--baseline", str(other), "--write-baseline", "pkg", cwd=project)
    result = cli("check", "--baseline", str(other), cwd=project)
    assert result.returncode == 1 and len(_findings(result)) == 2  # the tests are not in it


def test_every_format_reports_only_new_findings(cli, project):
    cli("check", "--write-baseline", cwd=project)
    (project / "tests" / "test_ops.py").write_text(TESTS + NEW_MISTAKE)
    as_json = cli("check", "--format", "json", cwd=project)
    assert as_json.returncode == 1 and [f["line"] for f in json.loads(as_json.stdout)] == [17]
    lines = cli("check", "--format", "json-lines", cwd=project)
    assert len(lines.stdout.splitlines()) == 1
    sarif = json.loads(cli("check", "--format", "sarif", cwd=project).stdout)
    assert len(sarif["runs"][0]["results"]) == 1
    github = cli("check", "--format", "github", cwd=project)
    assert len(github.stdout.splitlines()) == 1 and github.stdout.startswith("::error")
    junit = cli("check", "--format", "junit", cwd=project).stdout
    assert junit.count("<failure") == 1
    # a fixed entry is told on stderr, the report stays machine-readable
    (project / "pkg" / "ops.py").write_text("import torch\n")
    quiet = cli("check", "--format", "json", cwd=project)
    assert json.loads(quiet.stdout)[0]["line"] == 17
    assert "2 baseline entries match no finding any more" in quiet.stderr


def test_notebook_findings_hold_when_cells_are_inserted(cli, tmp_path):
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    cells = [new_code_cell("import torch\nfrom torch.autograd import gradcheck"),
             new_code_cell("x = torch.randn(2, requires_grad=True)\ngradcheck(torch.sin, (x,))")]
    nbformat.write(new_notebook(cells=cells, metadata=meta), str(tmp_path / "proto.ipynb"))
    cli("check", "--write-baseline", cwd=tmp_path)
    cells = [new_markdown_cell("# notes"), cells[0], new_code_cell("print(1)\n\n"), cells[1],
             new_code_cell("z = torch.randn(2, requires_grad=True)\ngradcheck(torch.sin, (z,))")]
    nbformat.write(new_notebook(cells=cells, metadata=meta), str(tmp_path / "proto.ipynb"))
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 1
    assert [line.split(": GL")[0] for line in _findings(result)] == ["proto.ipynb:cell 5:2:22"]


def test_usage_errors(cli, project):
    (project / "gradlint-baseline.json").write_text("{not json")
    broken = cli("check", cwd=project)
    assert broken.returncode == 2 and broken.stderr.startswith("gradlint: error: ")
    assert "--write-baseline" in broken.stderr and len(broken.stderr.splitlines()) == 1
    assert cli("check", "--write-baseline", "--diff", cwd=project).returncode == 2
    assert cli("check", "--write-baseline", "-", stdin="import torch\n", cwd=project).returncode == 2
    (project / "pyproject.toml").write_text("[tool.gradlint]\nbaseline = 3\n")
    assert "baseline: expected the path" in cli("check", cwd=project).stderr


def test_scope_and_comments_are_read_from_the_text():
    lines = OPS.splitlines()
    assert scope_of(lines, lines.index("        return grad * ctx.alpha")) == "Scale.backward"
    assert scope_of(lines, 0) == ""
    assert without_comment("x = 1  # note") == "x = 1  "
    assert without_comment("s = '#' + \"#\"  # note") == "s = '#' + \"#\"  "
    assert without_comment("s = '''a # b'''") == "s = '''a # b'''"
    assert Key("a.py", "GL001", "", "x", "y") < Key("b.py", "GL001", "", "x", "y")
