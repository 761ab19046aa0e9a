"""scripts/runner_accuracy.py's wrong-backward mutants: each changes the first returned gradient
(or swaps the first two), also when backward spells its returns `(dx,) + (None,) * k`."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from runner_accuracy import mutate  # noqa: E402

SOURCE = textwrap.dedent('''
    class F(Function):
        @staticmethod
        def backward(ctx, g):
            return g * 3, None, g


    class G(Function):
        @staticmethod
        def backward(ctx, g):
            return (g * 3,) + (None,) * 5
''')


def test_mutants_of_a_plain_tuple():
    assert "return 2.0 * (g * 3), None, g" in mutate(SOURCE, "F", "scale")
    assert "return -(g * 3), None, g" in mutate(SOURCE, "F", "negate")
    assert "return __import__('torch').zeros_like(g * 3), None, g" in mutate(SOURCE, "F", "zero")
    assert "return g, None, g * 3" in mutate(SOURCE, "F", "swap")


def test_mutants_of_a_concatenated_tuple():
    assert "return (2.0 * (g * 3),) + (None,) * 5" in mutate(SOURCE, "G", "scale")
    assert "return (__import__('torch').zeros_like(g * 3),) + (None,) * 5" in mutate(SOURCE, "G", "zero")
    assert mutate(SOURCE, "G", "swap") is None  # one gradient: nothing to swap
