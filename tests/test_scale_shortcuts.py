"""The shortcuts added for speed decide exactly what the slow way decides: a pattern made of
alternatives searched only where its alternatives' literal text is, the file-level
preconditions of rules, and the order big files are handed to parallel workers."""

from __future__ import annotations

import random
import re
import textwrap

import pytest

from gradlint.analysis.custom_ops import CREATES_CUSTOM_OP
from gradlint.engine.batch import BYTES_IN_FLIGHT, next_task, release_memory, schedule
from gradlint.engine.linter import lint_source
from gradlint.engine.options import LintOptions
from gradlint.rules import ALL_RULES
from gradlint.engine.required_text import may_match, required_literals

PATTERNS = [
    # a back-reference in a later alternative: masking earlier ones keeps its group number
    re.compile(r"x(\w)\1|y(\w)\2|zz"),
    re.compile(r"(?i)ab(c)|de\1|(?:fg|hi)j"),
    re.compile(r"^[ \t]*\w+\s*=\s*\w+\.grad$|[|(]a\||\\|b", re.MULTILINE),
    re.compile(r"[]|]x|(?:a|b)\(c\)|d[^]|)]e"),
    *[rule.requires for rule in ALL_RULES if rule.requires is not None],
]
PIECES = ["x", "aa", "y", "bb", "zz", "AB", "c", "de", "DE", "fgj", "hij", "|", "]", "(", ")",
          "\\", " ", "\n", "=", ".grad", "a|", "(c)", "d]e", "equal(", ".equal(", "x.equal(x)",
          "assert_close(a, a)", "gradcheck", "custom_op", "Library", "vmap", "noqa: GL001",
          "Fn()(", "Fn.forward(", ".apply", "def backward", "inputs(", "gradlint: inputs"]


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:30])
def test_pattern_of_alternatives_is_searched_as_a_whole_would_be(pattern):
    random.seed(15)
    needles, _ = required_literals(pattern)
    for _ in range(3000):
        text = "".join(random.choice(PIECES) for _ in range(random.randint(1, 8)))
        assert may_match(pattern, text) == (pattern.search(text) is not None), text


def test_literal_needles_run_through_branches_of_plain_words():
    needles, folded = required_literals(re.compile(r"(\w+)\.(?:allclose|equal)\(\s*\1"))
    assert needles == frozenset({".allclose(", ".equal("}) and not folded


def test_custom_op_rules_need_code_that_creates_an_op():
    """A registration by name (torch's own `lib.impl`, `register_fake("aten::...")`) creates
    no op; the rules find nothing there even with every shortcut off."""
    registrations = textwrap.dedent('''
        import torch
        from torch.library import Library, register_fake

        lib = Library("aten", "IMPL")
        lib.impl("sin", lambda x: x, "CPU")

        @register_fake("aten::cos")
        def _(x):
            return x.new_empty(x.shape).item()
    ''')
    assert not CREATES_CUSTOM_OP.search(registrations)
    assert lint_source(registrations, exhaustive=True).findings == []
    assert CREATES_CUSTOM_OP.search("lib.define('f(Tensor x) -> Tensor')")
    assert CREATES_CUSTOM_OP.search("from torch.library import custom_op as op")
    assert not CREATES_CUSTOM_OP.search("from torch.sparse._triton_ops import bsr_dense_mm")


def test_rules_on_gradcheck_calls_need_gradcheck_in_the_code():
    """GL016/GL020: options in a comment or another API's keyword are no gradcheck call."""
    text = textwrap.dedent('''
        import torch
        # gradgradcheck with check_fwd_over_rev=True would fail here
        sample = dict(check_batched_forward_grad=True, gradcheck_wrapper=None)
    ''')
    options = LintOptions()
    assert lint_source(text, options=options).findings == \
        lint_source(text, options=options, exhaustive=True).findings == []


def test_files_checked_at_once_stay_within_the_byte_budget():
    budget, small = BYTES_IN_FLIGHT, 1000
    sizes = [small, budget * 2, small, budget // 2, small * 2, budget // 4]
    waiting = schedule(sizes)
    assert waiting == [1, 3, 5, 4, 0, 2]  # the biggest first
    assert next_task(waiting, sizes, in_flight=0) == 1  # nothing runs: even an oversized file
    assert next_task(waiting, sizes, in_flight=budget * 2) is None  # nothing fits beside it
    assert next_task(waiting, sizes, in_flight=budget // 2) == 3  # exactly fills the budget
    assert next_task(waiting, sizes, in_flight=budget - small * 2) == 4  # not 5: too big
    assert waiting == [5, 0, 2]


def test_release_memory_runs_anywhere():
    release_memory()


def test_every_comparison_gl026_knows_is_named_by_its_file_level_pre_check():
    from gradlint.rules.gradcheck_calls.gl026_self_comparison_in_reference_test import (
        _FUNCTIONS, _METHODS_OF_TWO, _TENSOR_METHODS, COMPARISON_NAMES)

    for name in [*_FUNCTIONS, *_METHODS_OF_TWO, *_TENSOR_METHODS]:
        assert COMPARISON_NAMES.search(name.rpartition(".")[2]), name


def test_names_in_comments_and_docstrings_do_not_make_a_file_worth_parsing():
    """Rules about calls, attributes and keywords look for their words in code only: torch's
    own sources name save_for_backward or gradgradcheck in comments of big files that hold
    no Function (parsing them cost a seventh of a whole-torch run)."""
    from gradlint.engine.prefilter import nothing_to_find

    words = ["save_for_backward", "mark_dirty", "needs_input_grad", "gradgradcheck",
             "raise_exception", "check_forward_ad", "check_sparse_nnz", "Fn().apply",
             "Fn.forward(", "allclose(a, a)"]
    text = "import torch\n\n\ndef f():\n    \"\"\"%s\"\"\"\n    # %s\n    return torch.ones(1)\n" % (
        " ".join(words), " ".join(words))
    select = LintOptions().select
    assert nothing_to_find(text, select)
    assert lint_source(text, options=LintOptions(), exhaustive=True).findings == []
    in_code = text.replace("    return torch", "    ctx.save_for_backward(x)\n    return torch")
    assert not nothing_to_find(in_code, select)


def test_rules_grouped_for_a_block_get_the_same_answer_as_each_rule_alone():
    from gradlint.analysis.source import NameSet
    from gradlint.engine.prefilter import Code, block_groups, may_fire

    rules = [rule() for rule in ALL_RULES if not rule.engine_level]
    representatives, group_of = block_groups(rules)
    assert len(representatives) < len(rules)
    random.seed(26)
    for _ in range(2000):
        text = "".join(random.choice(PIECES) for _ in range(random.randint(1, 8)))
        code = Code(text)
        for aliases in (NameSet(()), NameSet(("gc",)), ()):
            for rule, group in zip(rules, group_of):
                assert may_fire(rule, text, code, aliases) == \
                    may_fire(representatives[group], text, code, aliases), (rule.code, text)


def test_names_a_block_surely_binds_are_names_ast_finds_it_binds():
    from pathlib import Path

    from gradlint.analysis.source import scan
    from gradlint.engine.needed_blocks import block_names, sure_names

    root = Path(__file__).resolve().parent.parent
    texts = [path.read_text(encoding="utf-8") for path in sorted((root / "examples").glob("*.py"))]
    texts.append(textwrap.dedent("""\
        import torch
        x: int = 1
        y = z = torch.ones(3)
        async def f():
            return 1
        @decorator
        class C(torch.autograd.Function):
            w = 2
        if x == 1:
            v = 3
        """))
    checked = 0
    for text in texts:
        for block in scan(text).blocks:
            exact = block_names(block.text)
            if exact is not None:
                assert sure_names(block.text).bound <= exact.bound, block.text
                assert not sure_names(block.text).runs_code or exact.runs_code, block.text
                checked += 1
    assert checked > 20


def test_the_last_file_of_a_command_line_run_is_left_out_of_the_collector(tmp_path):
    import gc

    from gradlint.engine.batch import Job, check_files

    path = tmp_path / "check.py"
    path.write_text(textwrap.dedent("""\
        import torch
        from torch.autograd import gradcheck

        def test():
            x = torch.randn(3, requires_grad=True)
            assert gradcheck(torch.sin, (x,))
        """))
    jobs = [Job(path, "check.py", LintOptions())]
    kept = check_files(jobs, workers=1)
    frozen = gc.get_freeze_count()
    try:
        ending = check_files(jobs, workers=1, process_ends=True)
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
    assert [f.code for f in ending[0].findings] == ["GL001"]
    assert ending[0].findings == kept[0].findings
