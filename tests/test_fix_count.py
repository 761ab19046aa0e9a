"""The "(N fixable with `--fix`)" count judges the fixed text by a lint that leaves the
findings of re-analysed blocks unplaced (no code generation to place them): the count must
be exactly what fixing applies."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from gradlint.engine.fixes import fix_source, verified
from gradlint.engine.linter import LintCache, LintOptions, is_unplaced, lint_source
from gradlint.engine.notebooks import CellText, fix_cells, lint_cells
from gradlint.findings import Edit, Fix, Range

ROOT = Path(__file__).resolve().parent.parent

SOURCE = """import torch
from torch.autograd import Function, gradcheck


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return 2 * x * grad, None


def test_square():
    x = torch.randn(3, requires_grad=True)
    assert gradcheck(Square.apply, (x,))


def test_sin():
    y = torch.randn(3, requires_grad=True)
    assert gradcheck(torch.sin, (y,))
"""


def _codes(findings):
    return Counter((f.code, f.message) for f in findings)


def test_an_unplaced_lint_finds_what_the_placed_lint_finds_and_caches_none_of_it():
    options, cache = LintOptions(), LintCache()
    unplaced = lint_source(SOURCE, "t.py", options, cache, placed=False)
    assert not unplaced.placed and unplaced.findings
    assert all(is_unplaced(f) for f in unplaced.findings)
    assert all(f.fix is None or f.fix.edits == () for f in unplaced.findings)
    analysed = cache.analysed_blocks
    placed = lint_source(SOURCE, "t.py", options, cache)
    assert placed.placed and not any(is_unplaced(f) for f in placed.findings)
    assert cache.analysed_blocks > analysed  # the unplaced findings were not kept for it
    assert _codes(unplaced.findings) == _codes(placed.findings)
    assert [f.fix is not None for f in unplaced.findings].count(True) == \
        [f.fix is not None for f in placed.findings].count(True)


def test_a_block_with_a_suppression_comment_is_placed_and_suppressed_as_usual():
    line = "    assert gradcheck(Square.apply, (x,))"
    suppressed = SOURCE.replace(line, line + "  # noqa: GL001")
    placed = lint_source(suppressed, "t.py", LintOptions()).findings
    unplaced = lint_source(suppressed, "t.py", LintOptions(), placed=False).findings
    assert _codes(unplaced) == _codes(placed)
    assert [f.code for f in placed].count("GL001") == 1
    other = SOURCE.replace(line, line + "  # noqa: GL017")  # suppresses nothing: GL009
    placed = lint_source(other, "t.py", LintOptions()).findings
    unplaced = lint_source(other, "t.py", LintOptions(), placed=False).findings
    assert _codes(unplaced) == _codes(placed)
    # the test with the comment is placed (as the placed lint has it), the other blocks not
    assert [f for f in unplaced if not is_unplaced(f)] == [f for f in placed if 17 <= f.line <= 19]
    assert {f.code for f in placed if 17 <= f.line <= 19} == {"GL001", "GL009"}
    assert any(is_unplaced(f) for f in unplaced)


def _sources() -> list[str]:
    texts = [SOURCE]
    for path in sorted((ROOT / "examples").glob("*.py")):
        texts.append(path.read_text(encoding="utf-8"))
    for path in sorted((ROOT / "tests" / "fixtures" / "rules").rglob("*.py"))[::4]:
        texts.append(path.read_text(encoding="utf-8"))
    return texts


@pytest.mark.parametrize("unsafe", [False, True])
def test_the_count_is_what_fixing_applies(unsafe):
    for text in _sources():
        options = LintOptions()
        findings = lint_source(text, "t.py", options).findings
        counted = fix_source(text, "t.py", options, unsafe=unsafe, findings=findings, counting=True)
        fixed = fix_source(text, "t.py", options, unsafe=unsafe)
        assert counted.fixed == fixed.fixed, text[:200]


def _many_fixable(n: int) -> str:
    tests = "".join(f"\n\ndef test_sin_{i}():\n    x = torch.randn(3, requires_grad=True)\n"
                    f"    assert gradcheck(torch.sin, (x,))\n" for i in range(n))
    return "import torch\nfrom torch.autograd import gradcheck\n" + tests


def _bad_second(findings, line, cell=None):
    first, second = [f for f in findings if f.code == "GL001"]
    edit = Edit(Range.of(line, 4, line, 10), "assert (", cell=cell)  # does not compile
    return first, replace(second, fix=Fix("test", second.fix.applicability, (edit,)))


def test_a_count_whose_fixed_text_has_fixes_left_places_them_before_judging_them():
    """A bad fix is left out, the good one applied; the lint of that text (unplaced, when
    counting) has the second finding's real fix, which the next pass applies: it must be
    placed for that (its unplaced fix has no edits)."""
    text = _many_fixable(2)
    first, bad = _bad_second(lint_source(text, "t.py", LintOptions()).findings, 12)
    counted = fix_source(text, "t.py", LintOptions(), findings=[first, bad], counting=True)
    assert counted.fixed == fix_source(text, "t.py", LintOptions(), findings=[first, bad]).fixed == 2


def test_a_notebook_count_is_what_fixing_applies():
    cells = [CellText(0, "import torch\nfrom torch.autograd import gradcheck\n"), CellText(1, _many_fixable(2))]
    first, bad = _bad_second(lint_cells(cells, "t.ipynb", LintOptions()), 5, cell=1)
    counted = fix_cells(cells, "t.ipynb", LintOptions(), findings=[first, bad], counting=True)
    assert counted.fixed == fix_cells(cells, "t.ipynb", LintOptions(), findings=[first, bad]).fixed == 2
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": SOURCE}
    raw = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    from gradlint.engine.files import lint_text

    assert lint_text(raw, None, "t.ipynb", LintOptions(), count_fixes=True).fixable == \
        lint_text(raw, None, "t.ipynb", LintOptions(), fix=True).fixes_applied > 0


def test_a_fix_that_brings_a_new_finding_is_not_counted():
    findings = lint_source(SOURCE, "t.py", LintOptions()).findings
    (finding,) = [f for f in findings if f.code == "GL001" and f.line == 19]
    line = SOURCE.splitlines()[17]
    swapped = replace(finding, fix=Fix("test", finding.fix.applicability, (
        Edit(Range.of(18, 8, 18, len(line)), "torch.randn(3, dtype=torch.float64)"),)))  # GL002 now
    for counting in (False, True):
        assert not verified(SOURCE, swapped, findings, "t.py", LintOptions(), LintCache(), counting=counting)
        assert verified(SOURCE, finding, findings, "t.py", LintOptions(), LintCache(), counting=counting)
