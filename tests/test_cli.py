"""The `gradlint` command, run as a subprocess: output formats, exit codes, fixes, stdin."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FLOAT32 = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
    """)
CLEAN = textwrap.dedent("""\
    import torch
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(torch.sin, (x,))
    """)
MISSING_GRAD = textwrap.dedent("""\
    import torch
    def test():
        y = torch.randn(3, dtype=torch.float64)
        torch.autograd.gradcheck(torch.exp, (y,))
    """)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test_ops.py").write_text(FLOAT32)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_text_output_and_exit_code(cli, project):
    result = cli("check", ".", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "test_ops.py:7:33: GL001 gradcheck input `x` is float32 (torch's default dtype); "
        "finite differences need float64 [*]",
        "",
        "Found 1 problem (1 fixable with `--fix`).",
    ]
    assert result.stderr == ""


def test_clean_tree_exits_zero(cli, tmp_path):
    (tmp_path / "clean.py").write_text(CLEAN)
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 0
    assert "All checks passed!" in result.stdout


def test_json_output(cli, project):
    result = cli("check", "--format", "json", cwd=project)
    assert result.returncode == 1
    [finding] = json.loads(result.stdout)
    assert finding == {
        "path": "test_ops.py", "line": 7, "column": 33, "end_line": 7, "end_column": 37,
        "code": "GL001", "name": "low-precision-gradcheck-input", "severity": "error",
        "message": "gradcheck input `x` is float32 (torch's default dtype); finite differences need float64",
        "fix": {"title": "Create `x` as float64", "applicability": "safe",
                "edits": [{"line": 6, "column": 9, "end_line": 6, "end_column": 43,
                           "content": "torch.randn(3, dtype=torch.float64, requires_grad=True)"}]},
    }


def test_sarif_output_is_valid_sarif(cli, project):
    import jsonschema  # pinned in requirements-dev.txt: a missing one must fail, not skip
    schema = json.loads((ROOT / "tests/data/sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    result = cli("check", "--format", "sarif", cwd=project)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema)
    [run] = document["runs"]
    [sarif] = run["results"]
    assert sarif["ruleId"] == "GL001"
    assert sarif["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 7, "startColumn": 33, "endLine": 7, "endColumn": 37}
    assert run["tool"]["driver"]["rules"][sarif["ruleIndex"]]["id"] == "GL001"


def test_github_output(cli, project):
    result = cli("check", "--format", "github", cwd=project)
    assert result.returncode == 1
    assert result.stdout.strip() == (
        "::error file=test_ops.py,line=7,col=33,endLine=7,endColumn=37,"
        "title=GL001 low-precision-gradcheck-input::GL001 gradcheck input `x` is float32 "
        "(torch's default dtype); finite differences need float64")


def test_fix_writes_files_and_exits_zero_when_all_fixed(cli, project):
    result = cli("check", "--fix", cwd=project)
    assert result.returncode == 0, result.stdout
    assert "Found 1 problem (1 fixed, 0 remaining)." in result.stdout
    text = (project / "test_ops.py").read_text()
    assert "x = torch.randn(3, dtype=torch.float64, requires_grad=True)" in text
    assert cli("check", cwd=project).returncode == 0


def test_diff_writes_nothing(cli, project):
    before = (project / "test_ops.py").read_text()
    result = cli("check", "--diff", cwd=project)
    assert result.returncode == 1
    assert "-    x = torch.randn(3, requires_grad=True)" in result.stdout
    assert "+    x = torch.randn(3, dtype=torch.float64, requires_grad=True)" in result.stdout
    assert (project / "test_ops.py").read_text() == before


def test_unsafe_fixes_need_the_flag(cli, tmp_path):
    (tmp_path / "fn.py").write_text(textwrap.dedent("""\
        import torch
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.factor
        """))
    safe_only = cli("check", "--fix", cwd=tmp_path)
    assert safe_only.returncode == 1
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option." in safe_only.stdout
    assert "return grad * ctx.factor\n" in (tmp_path / "fn.py").read_text()
    unsafe = cli("check", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert unsafe.returncode == 0, unsafe.stdout
    assert "return grad * ctx.factor, None\n" in (tmp_path / "fn.py").read_text()


def test_select_and_ignore(cli, project):
    (project / "more.py").write_text(MISSING_GRAD)
    assert cli("check", "--select", "GL002", cwd=project).stdout.count("GL0") == 1
    assert "GL001" not in cli("check", "--ignore", "GL001", cwd=project).stdout
    everything = cli("check", "--select", "GL00", cwd=project)
    assert "GL001" in everything.stdout and "GL002" in everything.stdout


def test_unknown_code_is_a_usage_error(cli, project):
    result = cli("check", "--select", "GL999", cwd=project)
    assert result.returncode == 2
    assert result.stderr == "gradlint: error: --select: unknown rule code `GL999` (see `gradlint rules`)\n"
    assert result.stdout == ""


def test_missing_path_is_a_usage_error(cli, project):
    result = cli("check", "nope/", cwd=project)
    assert result.returncode == 2
    assert result.stderr == "gradlint: error: path does not exist: nope\n"


def test_bad_flag_is_one_line_and_exit_2(cli, project):
    result = cli("check", "--formt", "json", cwd=project)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_exit_zero(cli, project):
    result = cli("check", "--exit-zero", cwd=project)
    assert result.returncode == 0
    assert "GL001" in result.stdout


def test_statistics(cli, project):
    (project / "more.py").write_text(MISSING_GRAD)
    result = cli("check", "--statistics", cwd=project)
    assert "1\tGL001\t[*] low-precision-gradcheck-input" in result.stdout
    assert "1\tGL002\t[*] gradcheck-without-requires-grad" in result.stdout


def test_stdin(cli, tmp_path):
    result = cli("check", "--stdin-filename", "tests/test_x.py", cwd=tmp_path, stdin=FLOAT32)
    assert result.returncode == 1
    assert result.stdout.startswith("tests/test_x.py:7:33: GL001")
    dash = cli("check", "-", cwd=tmp_path, stdin=FLOAT32)
    assert dash.stdout.startswith("-:7:33: GL001")


def test_stdin_fix_prints_the_fixed_source(cli, tmp_path):
    result = cli("check", "--fix", "-", cwd=tmp_path, stdin=FLOAT32)
    assert result.returncode == 0
    assert result.stdout == FLOAT32.replace("torch.randn(3, requires_grad=True)",
                                            "torch.randn(3, dtype=torch.float64, requires_grad=True)")


def test_unreadable_undecodable_and_broken_files_do_not_stop_the_others(cli, tmp_path):
    (tmp_path / "a_latin1.py").write_bytes(b"import torch\nname = '\xe9t\xe9'\n")
    (tmp_path / "b_broken.py").write_text("import torch\ndef f(:\n    pass\n")
    (tmp_path / "c_ops.py").write_text(FLOAT32)
    (tmp_path / "d_declared.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\n")
    result = cli("check", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    findings = json.loads(result.stdout)
    by_file = {(f["path"], f["code"]) for f in findings}
    assert by_file == {("a_latin1.py", "GL000"), ("b_broken.py", "GL000"), ("c_ops.py", "GL001")}
    latin = next(f for f in findings if f["path"] == "a_latin1.py")
    assert latin["message"] == "file is not valid utf-8: byte 0xe9 cannot be decoded"
    assert (latin["line"], latin["column"]) == (2, 9)
    broken = next(f for f in findings if f["path"] == "b_broken.py")
    assert broken["line"] == 2 and broken["message"].startswith("syntax error:")


def test_discovery_skips_virtualenvs_and_build_dirs(cli, tmp_path):
    for directory in (".venv/lib", "node_modules/pkg", "build/lib", "env_custom", ".git"):
        (tmp_path / directory).mkdir(parents=True)
        (tmp_path / directory / "bad.py").write_text(FLOAT32)
    (tmp_path / "env_custom" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ok.py").write_text(FLOAT32)
    result = cli("check", "--format", "json", cwd=tmp_path)
    assert [f["path"] for f in json.loads(result.stdout)] == ["src/ok.py"]
    # a file named explicitly is always checked
    explicit = cli("check", "build/lib/bad.py", "--format", "json", cwd=tmp_path)
    assert [f["path"] for f in json.loads(explicit.stdout)] == ["build/lib/bad.py"]


def test_rule_docs(cli):
    result = cli("rule", "GL003")
    assert result.returncode == 0
    assert result.stdout.startswith("# gradcheck-inputs-not-one-argument (GL003)\n")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety"):
        assert section in result.stdout
    assert cli("rule", "backward-gradient-count").stdout.startswith("# backward-gradient-count (GL004)")
    unknown = cli("rule", "GL999")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr


def test_rules_listing(cli):
    result = cli("rules", "--format", "json")
    rules = json.loads(result.stdout)
    from gradlint.rules import ALL_RULES
    codes = [r["code"] for r in rules]
    assert codes == [rule.code for rule in ALL_RULES] == sorted(codes)
    assert codes == [f"GL{n:03d}" for n in range(48)]
    assert {r["code"]: r["fixable"] for r in rules}["GL001"] is True
    text = cli("rules").stdout
    assert "GL004  [*]  backward-gradient-count" in text


def test_python_dash_m(tmp_path, project):
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-m", "gradlint", "check", "."], cwd=project,
                            capture_output=True, text=True)
    assert result.returncode == 1 and "GL001" in result.stdout


HALF_TYPED = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck

    x = torch.randn(4, requires_grad=True


    def test_sin():
        y = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (y,))
    """)


def test_a_file_that_does_not_parse_has_no_fixable_findings(cli, tmp_path):
    (tmp_path / "half_typed.py").write_text(HALF_TYPED)
    result = cli("check", "--statistics", cwd=tmp_path)
    assert result.returncode == 1
    gl001 = next(line for line in result.stdout.splitlines() if " GL001 " in line)
    assert not gl001.endswith("[*]"), "--fix never edits a file that does not parse"
    assert "1\tGL001\t[ ] low-precision-gradcheck-input" in result.stdout
    assert result.stdout.splitlines()[-1] == "Found 2 problems."
    before = (tmp_path / "half_typed.py").read_text()
    assert "0 fixed" not in cli("check", "--fix", cwd=tmp_path).stdout
    assert (tmp_path / "half_typed.py").read_text() == before


@pytest.mark.parametrize("unsafe", [[], ["--unsafe-fixes"]], ids=["safe", "unsafe"])
def test_fixable_count_is_what_fix_fixes(cli, tmp_path, unsafe):
    """"N fixable with `--fix`" is exactly the "N fixed" that `--fix` then reports, on the
    examples (a file that does not parse, fixes that unlock or overlap others)."""
    import re
    import shutil

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    checked = cli("check", *unsafe, "examples", cwd=tmp_path).stdout
    [fixable] = re.findall(r"\((\d+) fixable with `--fix`\)", checked)
    fixed_out = cli("check", "--fix", *unsafe, "examples", cwd=tmp_path).stdout
    [fixed] = re.findall(r"\((\d+) fixed, \d+ remaining\)", fixed_out)
    assert int(fixable) == int(fixed) > 0
