"""The pre-check shortcuts answer exactly as ``pattern.search`` does."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from gradlint.engine.required_text import (_after_line_start, _plain_text, _starts, may_match,
                                          required_literals)

PATTERNS = [
    r"[aA]ll[cC]lose|isclose|assert_close|[eE]qual",  # plain text: no regex run at all
    r"(?:allclose|assert_\w+|equal)\s*\(\s*(\w+)\s*,\s*\1\s*[,)]|(\w+)\.equal\(\s*\2\s*\)"
    r"|^[ \t]*\w+\s*=\s*\w+\.grad$",  # back-references, groups, an anchored line
    r"(\w+(?:\[[^\]\n]*\])?)\.(?:allclose|equal)\(\s*\1\s*[,)]",  # a head on one line
    r"(?<!\w)(?:custom_op|define)(?!\w)",  # starts with text, after a lookbehind
    r"gradlint:\s*inputs|@\s*(?:[\w.]+\.)?inputs\s*\(",
    r"[A-Z](?<!\w[A-Z])\w*\(\s*\)\s*(?:\(|\.\s*apply\b)|[A-Z](?<!\w[A-Z])\w*\.forward\s*\(",
    r"(?i)noqa\s*:[^\n]*\bGL\d|gradlint:\s*ignore\[[^\]\n]*GL\d",
]
WORDS = ["allclose", "AllClose", "equal", "Equal", "assert_eq", "x", "y", "(", ")", ",", " ", "\n",
         "x.grad", "=", ".equal(", "custom_op", "_custom_op", "define", "redefine", "@", "inputs",
         "gradlint:", "Fn()", ".apply", "Fn.forward(", "# noqa: GL004", "isclose", "assert_close", "x[0]", "[", "]", ".allclose("]


def _texts() -> list[str]:
    chooser = random.Random(15)
    texts = ["".join(chooser.choice(WORDS) for _ in range(chooser.randint(1, 12))) for _ in range(3000)]
    texts += ["torch.allclose(x, x)", "torch.allclose(x, y)", "x.equal(x)", "xa.equal(a)",
              "g = x.grad", "  g = x.grad  # no", "lib.define('f')", "redefine(x)",
              "@torch.library.custom_op('a::b')", "y = Fn()(x)", "Fn().apply(x)", "#NOQA: gl004"]
    return texts


@pytest.mark.parametrize("source", PATTERNS)
def test_may_match_is_search(source):
    pattern = re.compile(source, re.MULTILINE)
    for text in _texts():
        assert may_match(pattern, text) == (pattern.search(text) is not None), (source, text)


def test_the_shortcuts_are_taken():
    names = re.compile(PATTERNS[0])
    assert required_literals(names)[0] >= {"allclose", "AllClose", "Equal", "equal"}
    assert _plain_text(names, 0) and _plain_text(names, 3)
    compares = re.compile(PATTERNS[1], re.MULTILINE)
    assert _starts(compares, 0) == {"allclose", "assert_", "equal"}
    assert _starts(compares, 1) is None  # starts with a word of any letters...
    assert _after_line_start(compares, 1) == {".equal("}  # ...on the line of `.equal(`
    assert _after_line_start(re.compile(r"(\s+)\.equal\("), 0) is None  # a head across lines
    assert _starts(re.compile(PATTERNS[3]), 0) == {"custom_op", "define"}
    assert not _plain_text(re.compile(PATTERNS[3]), 0)  # the lookarounds matter


def test_every_combination_of_a_few_words():
    pattern = re.compile(PATTERNS[3])
    for combination in itertools.product(["custom_op", "x", "_", " ", "define", "("], repeat=3):
        text = "".join(combination)
        assert may_match(pattern, text) == (pattern.search(text) is not None), text
