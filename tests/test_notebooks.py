"""Jupyter notebooks through the installed `gradlint` command: code cells joined, IPython
syntax masked, findings in cell coordinates, fixes written back into a notebook that
nbformat (Jupyter's own reader) still validates, with outputs and formatting kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from gradlint.engine.notebooks import CellText, JoinedCells, mask_ipython, read_notebook

FIXTURE = Path(__file__).parent / "fixtures" / "notebooks" / "prototype.ipynb"


def notebook(*cells, language="python", **metadata) -> nbformat.NotebookNode:
    nb = new_notebook(metadata={"kernelspec": {"name": "k", "display_name": "K", "language": language},
                                "language_info": {"name": language}, **metadata})
    nb.cells = list(cells)
    return nb


def write(path: Path, nb) -> Path:
    nbformat.write(nb, str(path))
    return path


# -- IPython syntax ---------------------------------------------------------------------------
@pytest.mark.parametrize("source, masked", [
    ("%matplotlib inline\nimport torch\n", "pass\nimport torch\n"),
    ("!pip install torch\n", "pass\n"),
    ("files = !ls\nx, y = %sx echo 1 2\n", "files = ...\nx, y = ...\n"),
    ("torch.randn?\n??torch\n", "pass\npass\n"),
    ("for i in range(3):\n    %time f(i)\n", "for i in range(3):\n    pass\n"),
    ("!pip install \\\n    torch\nx = 1\n", "pass\n\nx = 1\n"),
    ("%%timeit -n 3\nx = f()\n", "\nx = f()\n"),
    ("%%bash\necho 'x'\nls", "\n\n"),
    ('s = """\n%not a magic\n!nor this\n"""\n', 's = """\n%not a magic\n!nor this\n"""\n'),
    ("y = (a\n     % b)\n", "y = (a\n     % b)\n"),
    ("x = 10 % 3  # % in code\n", "x = 10 % 3  # % in code\n"),
])
def test_ipython_lines_are_masked_keeping_line_count(source, masked):
    text, lines = mask_ipython(source)
    assert text == masked
    assert text.count("\n") <= source.count("\n") + 1
    assert all(source.splitlines()[line - 1] != text.splitlines()[line - 1] or not text.splitlines()[line - 1]
               for line in lines if line <= len(text.splitlines()))


def test_joined_cells_map_positions_back_to_cells():
    joined = JoinedCells([CellText(1, "import torch"), CellText(2, ""), CellText(4, "%%bash\nls\n"),
                          CellText(5, "x = 1\ny = 2")])
    assert joined.text == "import torch\n\n\nx = 1\ny = 2\n"
    assert joined.locate(1, 3) == (0, 1, 3)
    assert joined.locate(4, 2) == (3, 1, 2)
    assert joined.locate(5, 9) == (3, 2, 5)  # clamped to the line
    assert joined.locate(6, 0) == (3, 2, 5)  # end of file: the last cell's end


# -- the command --------------------------------------------------------------------------------
def test_check_reports_cell_line_column(cli, tmp_path):
    shutil.copy(FIXTURE, tmp_path / "prototype.ipynb")
    result = cli("check", "prototype.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    # `x` is made in cell 5 and checked in cell 7 (under %%time); magics, the shell escape,
    # the raw cell, the %%bash cell and the help line are not Python and raise nothing
    assert result.stdout.splitlines()[0] == (
        "prototype.ipynb:cell 7:2:32: GL001 gradcheck input `x` is float32 (torch's default "
        "dtype); finite differences need float64")
    assert "GL000" not in result.stdout


def test_the_summary_counts_a_notebooks_fixes_as_for_a_python_file(cli, tmp_path):
    """`[*]` on a finding and "(N fixable with `--fix`)" in the summary agree for notebooks
    too, with and without the cache."""
    cells = [new_code_cell("import torch\nfrom torch.autograd import gradcheck"),
             new_code_cell("a = torch.randn(2, dtype=torch.float64, requires_grad=True)\n"
                           "b = torch.randn(2, dtype=torch.float64, requires_grad=True)\n"
                           "gradcheck(torch.add, a, b)")]
    write(tmp_path / "nb.ipynb", notebook(*cells))
    for _ in range(2):  # the second run is answered from the cache
        result = cli("check", "nb.ipynb", cwd=tmp_path)
        assert result.stdout.splitlines()[0].endswith("[*]"), result.stdout
        assert "Found 1 problem (1 fixable with `--fix`)." in result.stdout


def test_json_and_sarif_carry_cell_positions(cli, tmp_path):
    shutil.copy(FIXTURE, tmp_path / "prototype.ipynb")
    [finding] = json.loads(cli("check", "prototype.ipynb", "--format", "json", cwd=tmp_path).stdout)
    assert (finding["cell"], finding["line"], finding["column"]) == (7, 2, 32)
    [edit] = finding["fix"]["edits"]
    assert (edit["cell"], edit["line"], edit["column"]) == (5, 1, 5)  # where `x` is made
    sarif = json.loads(cli("check", "prototype.ipynb", "--format", "sarif", cwd=tmp_path).stdout)
    [result] = sarif["runs"][0]["results"]
    [location] = result["locations"]
    assert result["properties"] == {"cell": 7}
    assert location["logicalLocations"] == [{"name": "cell 7", "kind": "module"}]
    assert location["physicalLocation"]["region"]["startLine"] == 2
    assert "fixes" not in result  # cell edits are not file lines
    [line] = cli("check", "prototype.ipynb", "--format", "github", cwd=tmp_path).stdout.splitlines()
    assert line.startswith("::error file=prototype.ipynb,title=GL001 low-precision-gradcheck-input::")
    assert line.endswith("(cell 7, line 2, column 32)")


def test_fix_writes_back_a_valid_notebook_keeping_outputs_and_formatting(cli, tmp_path):
    path = tmp_path / "prototype.ipynb"
    shutil.copy(FIXTURE, path)
    before = path.read_text()
    result = cli("check", "prototype.ipynb", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Found 1 problem (1 fixed, 0 remaining)." in result.stdout
    after = path.read_text()
    changed = [(old, new) for old, new in zip(before.splitlines(), after.splitlines()) if old != new]
    assert changed == [('    "x = torch.randn(4, requires_grad=True)\\n",',
                        '    "x = torch.randn(4, dtype=torch.float64, requires_grad=True)\\n",')]
    assert len(before.splitlines()) == len(after.splitlines())
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    original = nbformat.read(str(FIXTURE), as_version=4)
    assert [c.get("outputs") for c in nb.cells] == [c.get("outputs") for c in original.cells]
    assert nb.metadata == original.metadata
    assert cli("check", "prototype.ipynb", cwd=tmp_path).returncode == 0


def test_diff_shows_cells(cli, tmp_path):
    shutil.copy(FIXTURE, tmp_path / "prototype.ipynb")
    result = cli("check", "prototype.ipynb", "--diff", "--unsafe-fixes", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[:5] == [
        "--- a/prototype.ipynb:cell 5", "+++ b/prototype.ipynb:cell 5", "@@ -1,2 +1,2 @@",
        "-x = torch.randn(4, requires_grad=True)",
        "+x = torch.randn(4, dtype=torch.float64, requires_grad=True)"]
    assert (tmp_path / "prototype.ipynb").read_bytes() == FIXTURE.read_bytes()


@pytest.mark.parametrize("style", [
    dict(indent=2, ensure_ascii=True), dict(indent=4, ensure_ascii=False), dict(indent=None)])
def test_write_back_keeps_the_files_own_json_style(cli, tmp_path, style):
    nb = notebook(new_code_cell("import torch  # café ☕\nfrom torch.autograd import gradcheck"),
                  new_code_cell("assert gradcheck(torch.sin, (torch.randn(2, requires_grad=True),))"))
    text = json.dumps(nb, **style) + ("\n" if style.get("indent") else "")
    path = tmp_path / "styled.ipynb"
    path.write_text(text.replace("\n", "\r\n") if style.get("indent") == 4 else text, newline="")
    before = path.read_bytes()
    assert cli("check", "styled.ipynb", "--fix", cwd=tmp_path).returncode == 0
    after = path.read_bytes()
    assert after != before
    expected = before.replace(b"torch.randn(2, requires_grad=True)",
                              b"torch.randn(2, dtype=torch.float64, requires_grad=True)")
    assert after == expected


def test_directories_include_notebooks_but_not_checkpoints(cli, tmp_path):
    bad = notebook(new_code_cell("import torch\nfrom torch.autograd import gradcheck\n"
                                 "gradcheck(torch.sin, (torch.randn(2, requires_grad=True),))"))
    write(tmp_path / "a.ipynb", bad)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    write(tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb", bad)
    result = cli("check", ".", "--format", "json", cwd=tmp_path)
    assert [f["path"] for f in json.loads(result.stdout)] == ["a.ipynb"]


def test_notebooks_of_other_languages_and_other_cells_are_skipped(cli, tmp_path):
    code = "gradcheck(torch.sin, (torch.randn(2, requires_grad=True),))"
    write(tmp_path / "r.ipynb", notebook(new_code_cell("import torch\n" + code), language="R"))
    sql = new_code_cell("import torch\n" + code)
    sql.metadata["vscode"] = {"languageId": "sql"}
    write(tmp_path / "mixed.ipynb", notebook(new_markdown_cell("import torch\n" + code), sql))
    result = cli("check", "r.ipynb", "mixed.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout


def test_noqa_in_a_cell(cli, tmp_path):
    write(tmp_path / "n.ipynb", notebook(
        new_code_cell("import torch\nfrom torch.autograd import gradcheck"),
        new_code_cell("gradcheck(torch.sin, (torch.randn(2, requires_grad=True),))  # noqa: GL001")))
    result = cli("check", "n.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("text, message", [
    ("{not json", "not a valid notebook: invalid JSON at line 1, column 2"),
    ('{"worksheets": [], "nbformat": 3}', "nbformat 3 notebooks are not supported"),
    ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1: `source` must be a string"),
])
def test_broken_notebooks_are_reported_not_crashed_on(cli, tmp_path, text, message):
    (tmp_path / "bad.ipynb").write_text(text)
    (tmp_path / "ok.py").write_text("import torch\n")
    result = cli("check", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("bad.ipynb:1:1: GL000 ")
    assert message in result.stdout
    assert (tmp_path / "bad.ipynb").read_text() == text


def test_stdin_notebook_fix_prints_the_notebook(cli, tmp_path):
    text = FIXTURE.read_text()
    result = cli("check", "--stdin-filename", "nb.ipynb", "--fix", "--unsafe-fixes", stdin=text)
    assert result.returncode == 0, result.stderr
    fixed = read_notebook(result.stdout)
    assert "dtype=torch.float64" in fixed.sources()[4]
    nbformat.validate(nbformat.reads(result.stdout, as_version=4))


def test_empty_and_markdown_only_notebooks_are_clean(cli, tmp_path):
    write(tmp_path / "empty.ipynb", notebook())
    write(tmp_path / "md.ipynb", notebook(new_markdown_cell("torch.randn(3)")))
    write(tmp_path / "outputs.ipynb", notebook(new_code_cell(
        "", outputs=[new_output("stream", name="stdout", text="gradcheck torch")])))
    result = cli("check", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout


def test_run_refuses_notebooks_with_a_clear_error(cli, tmp_path):
    shutil.copy(FIXTURE, tmp_path / "prototype.ipynb")
    result = cli("run", "prototype.ipynb", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("gradlint: error: prototype.ipynb: gradlint run does not run notebooks "
                             "(`gradlint check` checks them statically)\n")
