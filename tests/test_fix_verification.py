"""`--fix` applies a fix only after checking it: the fixed code compiles, the finding is
gone, nothing new is found, and no keyword was added beside a `**mapping`."""

from __future__ import annotations

from dataclasses import replace

from gradlint.engine.fixes import fix_source, verified
from gradlint.engine.linter import LintCache, LintOptions, lint_source
from gradlint.findings import Edit, Fix, Range

SOURCE = """import torch
from torch.autograd import gradcheck

def test_sin(options):
    x = torch.randn(3, requires_grad=True)
    assert gradcheck(torch.sin, (x,))
    y = torch.zeros(3, **options)
"""


def _gl001():
    findings = lint_source(SOURCE, "t.py", LintOptions()).findings
    (finding,) = [f for f in findings if f.code == "GL001"]
    return finding, findings


def _with_edit(finding, line, start, end, text):
    edit = Edit(Range.of(line, start, line, end), text)
    return replace(finding, fix=Fix("test", finding.fix.applicability, (edit,)))


def test_a_good_fix_is_verified():
    finding, findings = _gl001()
    assert verified(SOURCE, finding, findings, "t.py", LintOptions(), LintCache())


def test_a_fix_that_does_not_compile_is_not_applied():
    finding, findings = _gl001()
    broken = _with_edit(finding, 5, 8, 9, "(")
    assert not verified(SOURCE, broken, findings, "t.py", LintOptions(), LintCache())


def test_a_keyword_beside_double_star_is_not_applied():
    finding, findings = _gl001()
    # also fixes the finding, but adds dtype= to the call that passes **options
    line7 = SOURCE.splitlines()[6]
    column = line7.index("**options")
    both = replace(finding, fix=Fix("test", finding.fix.applicability, (
        *finding.fix.edits, Edit(Range.of(7, column, 7, column), "dtype=torch.float64, "))))
    assert not verified(SOURCE, both, findings, "t.py", LintOptions(), LintCache())


def test_a_fix_that_leaves_its_finding_is_not_applied():
    finding, findings = _gl001()
    useless = _with_edit(finding, 6, 4, 4, "pass; ")
    assert not verified(SOURCE, useless, findings, "t.py", LintOptions(), LintCache())


def test_fix_source_applies_only_verified_fixes():
    outcome = fix_source(SOURCE, "t.py", LintOptions(), unsafe=True)
    assert "torch.randn(3, dtype=torch.float64, requires_grad=True)" in outcome.text
    assert "torch.zeros(3, **options)" in outcome.text


def test_a_fix_that_brings_a_new_finding_is_not_applied():
    finding, findings = _gl001()
    # float64 now, but no longer requires grad: GL002 would appear
    line5 = SOURCE.splitlines()[4]
    swapped = _with_edit(finding, 5, 8, len(line5), "torch.randn(3, dtype=torch.float64)")
    assert not verified(SOURCE, swapped, findings, "t.py", LintOptions(), LintCache())
    fixed = _with_edit(finding, 5, 8, len(line5), "torch.randn(3, dtype=torch.float64, requires_grad=True)")
    assert verified(SOURCE, fixed, findings, "t.py", LintOptions(), LintCache())


def _many_fixable(n: int) -> str:
    tests = "".join(f"\n\ndef test_sin_{i}():\n    x = torch.randn(3, requires_grad=True)\n"
                    f"    assert gradcheck(torch.sin, (x,))\n" for i in range(n))
    return "import torch\nfrom torch.autograd import gradcheck\n" + tests


def _count_lints(monkeypatch, module) -> list:
    """``module.lint_source`` made to record each call (the list it returns grows)."""
    calls: list = []
    real = module.lint_source

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "lint_source", counting)
    return calls


def _lints_to_fix(n: int, monkeypatch) -> tuple[int, int]:
    import gradlint.engine.linter as linter

    real = linter.lint_source
    calls = _count_lints(monkeypatch, linter)
    outcome = fix_source(_many_fixable(n), "t.py", LintOptions())
    monkeypatch.setattr(linter, "lint_source", real)
    return len(calls), outcome.fixed


def test_good_fixes_are_verified_together_not_one_lint_each(monkeypatch):
    """Checking each fix alone lints the whole file once per finding: the square of its size
    on a file with a finding per block (a 5,000-line generated file took 34 s to check, 2 s
    now). Good fixes are verified together, with one lint, whatever their number."""
    few, fixed_few = _lints_to_fix(3, monkeypatch)
    many, fixed_many = _lints_to_fix(30, monkeypatch)
    assert (fixed_few, fixed_many) == (3, 30)
    assert many == few <= 2  # the first lint, the fixes together (whose lint is the fixed text's)


def test_counting_what_fix_would_apply_costs_one_lint_beyond_the_check(monkeypatch):
    """`gradlint check` counts "N fixable with --fix" by fixing a copy: it starts from the
    check's own findings and reuses the verification's lint of the fixed text, so the count
    costs one more lint of the file, not three (a 8,000-line generated file: 5.6 s -> 4.0 s)."""
    import gradlint.engine.linter as linter
    from gradlint.engine.files import lint_text

    calls = _count_lints(monkeypatch, linter)
    report = lint_text(_many_fixable(30), None, "t.py", LintOptions(), count_fixes=True)
    assert report.fixable == 30
    assert len(calls) == 2  # the check, and the fixes verified together


def test_a_bad_fix_among_good_ones_is_still_found_alone():
    from gradlint.engine.fixes import verified_together

    text = _many_fixable(2)
    findings = lint_source(text, "t.py", LintOptions()).findings
    first, second = [f for f in findings if f.code == "GL001"]
    bad = _with_edit(second, 12, 4, 10, "assert (")  # does not compile, on another line than first's fix
    options, cache = LintOptions(), LintCache()
    assert not verified_together(text, [first, bad], findings, "t.py", options, cache)
    assert verified(text, first, findings, "t.py", options, cache)  # the good one, alone
    assert not verified(text, bad, findings, "t.py", options, cache)
    assert verified_together(text, [first, second], findings, "t.py", options, cache)


def test_counting_what_fix_would_apply_to_a_notebook_costs_one_lint_beyond_the_check(monkeypatch):
    """The same for a notebook: the count starts from the check's findings (it linted the cells
    three times: the check, the count's own first lint, the fixed cells)."""
    import json

    import gradlint.engine.notebooks as notebooks
    from gradlint.engine.files import lint_text

    calls = _count_lints(monkeypatch, notebooks)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": _many_fixable(3)}
    raw = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    report = lint_text(raw, None, "t.ipynb", LintOptions(), count_fixes=True)
    assert report.fixable == 3
    assert len(calls) == 2  # the check, and the fixed cells


def test_a_notebook_fix_that_does_not_compile_is_not_applied_and_the_good_ones_are():
    """A notebook's fixes pass the tests a ``.py`` file's do (they were applied unchecked)."""
    from gradlint.engine.notebooks import CellText, fix_cells, lint_cells

    cells = [CellText(0, "import torch\nfrom torch.autograd import gradcheck\n"), CellText(1, _many_fixable(2))]
    findings = lint_cells(cells, "t.ipynb", LintOptions())
    first, second = [f for f in findings if f.code == "GL001"]
    edit = Edit(Range.of(5, 4, 5, 10), "assert (", cell=1)
    bad = replace(second, fix=Fix("test", second.fix.applicability, (edit,)))
    outcome = fix_cells(cells, "t.ipynb", LintOptions(), findings=[first, bad])
    assert outcome.fixed == 2  # the good one, then (linted afresh) the real fix of the second
    assert "assert (" not in outcome.sources[1]
    compile(outcome.sources[1], "cell", "exec")
    alone = fix_cells(cells, "t.ipynb", LintOptions(), findings=[bad])
    assert alone.fixed == 0 and alone.sources[1] == cells[1].text
