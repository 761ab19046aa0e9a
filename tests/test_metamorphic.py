"""Meaning-preserving rewrites (scripts/metamorphic.py) of every rule example.

On a VALID example a rewrite must never create a finding: the rewritten code runs exactly
as the original, so a finding there is a false alarm. On an INVALID example the rewritten
code still has the bug; how often gradlint keeps finding it is measured per rewrite (and
must stay at or above the floors below, which are the recall the mechanisms reach)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from gradlint.engine.linter import LintOptions, lint_source
from gradlint.rules import ALL_RULES
from gradlint.rules.examples import all_examples

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "metamorphic.py"


def _load():
    spec = importlib.util.spec_from_file_location("metamorphic", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("metamorphic", module)
    spec.loader.exec_module(module)
    return module


metamorphic = _load()


def _code(example: str) -> str:
    return textwrap.dedent(example).lstrip("\n")


def _codes(code: str) -> Counter:
    findings = lint_source(code, "example.py", LintOptions()).findings
    return Counter(f.code for f in findings if f.code not in ("GL000", "GL009"))


def _examples(kind: str):
    for rule in ALL_RULES:
        for example in all_examples(rule, kind):
            yield rule, example.index, _code(example.case.code)


def _valid_cases():
    for rule, index, code in _examples("VALID"):
        for name, variant in metamorphic.variants(code):
            yield pytest.param(code, variant, id=f"{rule.code}-VALID-{index}-{name}")


@pytest.mark.parametrize("original, variant", list(_valid_cases()))
def test_a_rewrite_of_correct_code_creates_no_finding(original, variant):
    new = _codes(variant) - _codes(original)
    assert not new, f"new findings {dict(new)} in:\n{variant}"


def test_rewrites_apply_to_many_examples():
    """Each rewrite has examples to work on (the harness does not test nothing)."""
    applied = Counter(name for _rule, _index, code in _examples("INVALID")
                      for name, _variant in metamorphic.variants(code))
    for name in metamorphic.REWRITES:
        assert applied[name] >= 5, (name, applied[name])


def test_every_variant_compiles():
    for _rule, _index, code in _examples("INVALID"):
        for name, variant in metamorphic.variants(code):
            compile(variant, name, "exec", dont_inherit=True)


def recall_per_rewrite() -> dict[str, tuple[int, int]]:
    """rewrite -> (INVALID examples whose rewritten form still has the rule's finding, applied)."""
    kept: Counter = Counter()
    applied: Counter = Counter()
    for rule, _index, code in _examples("INVALID"):
        if rule.code in ("GL000", "GL009"):
            continue
        for name, variant in metamorphic.variants(code):
            applied[name] += 1
            kept[name] += _codes(variant)[rule.code] > 0
    return {name: (kept[name], applied[name]) for name in metamorphic.REWRITES}


# The recall each rewrite keeps on the INVALID examples (measured; a drop is a regression).
# Measured on this branch (kept/applied): extract_helper 32/40, kwargs_literal 91/95,
# kwargs_variable 14/59 (a `dict` variable is not read: silence), setup_method 16/40,
# fixture 32/40, dataclass_case 31/40, dict_loop 4/33 (a case taken out of a dict literal is
# not followed), decorated_helper 32/40, rename 76/77, reorder 82/82, annotate 53/60. The
# floors sit a little below, so that a new example the analysis cannot follow yet fits.
RECALL_FLOORS = {"extract_helper": 0.75, "kwargs_literal": 0.90, "kwargs_variable": 0.20,
                 "setup_method": 0.35, "fixture": 0.75, "dataclass_case": 0.70,
                 "dict_loop": 0.10, "decorated_helper": 0.75, "rename": 0.95, "reorder": 0.95,
                 "annotate": 0.85}


def test_recall_per_rewrite_on_invalid_examples():
    found = recall_per_rewrite()
    report = {name: f"{k}/{n}" for name, (k, n) in found.items()}
    for name, (kept, applied) in found.items():
        assert applied and kept / applied >= RECALL_FLOORS[name], report


def test_rewrites_keep_meaning_when_run(pytester):
    """The rewritten forms of a small runnable test module pass, as the original does
    (all run by one pytest in a subprocess: each variant is a module of its own)."""
    source = textwrap.dedent('''
        import torch
        from torch.autograd import gradcheck


        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2


        def test_sin():
            x = torch.randn(3, dtype=torch.float64, requires_grad=True)
            w = torch.rand(3, dtype=torch.float64)
            assert gradcheck(lambda a: Double.apply(a * w).sin(), (x,), eps=1e-6)
    ''').lstrip()
    made = {f"test_{name}": variant for name, variant in metamorphic.variants(source)}
    assert set(made) == {f"test_{name}" for name in metamorphic.REWRITES}
    pytester.makepyfile(**made)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=len(made))
