"""The code table (gradlint/codes.py) says what the rule classes say, and the engine reads it
without importing the rules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gradlint.codes import BY_CODE, CODES
from gradlint.rules import ALL_RULES, RULES_BY_CODE
from gradlint.rules.examples import all_examples


def test_one_row_per_rule_in_registry_order():
    assert [entry.code for entry in CODES] == [rule.code for rule in ALL_RULES]
    assert len(BY_CODE) == len(CODES)


@pytest.mark.parametrize("entry", CODES, ids=lambda e: e.code)
def test_row_agrees_with_the_rule_class(entry):
    rule = RULES_BY_CODE[entry.code]
    assert entry.name == rule.name
    assert entry.severity == rule.severity
    assert rule.__module__ == entry.module
    assert rule.__module__.split(".")[:3] == ["gradlint", "rules", entry.family]


@pytest.mark.parametrize("entry", CODES, ids=lambda e: e.code)
def test_fix_column_is_what_the_examples_fix(entry):
    """Every example counts, the class's and the fixtures': the column says which kinds of
    fixes the rule offers."""
    rule = RULES_BY_CODE[entry.code]
    kinds = {e.case.applicability for e in all_examples(rule, "INVALID") if e.case.fixed is not None}
    expected = {frozenset(): None, frozenset({"safe"}): "safe", frozenset({"unsafe"}): "unsafe",
                frozenset({"safe", "unsafe"}): "safe or unsafe"}[frozenset(kinds)]
    assert entry.fix == expected
    assert rule.fixable() == (expected is not None)


def test_the_engine_knows_the_codes_without_importing_the_rules():
    script = ("import sys; from gradlint.engine.options import ALL_CODES, LintOptions; "
              "assert len(ALL_CODES) == len(LintOptions().select); "
              "print(sorted(m for m in sys.modules if m.startswith('gradlint.rules')), "
              "'libcst' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[] False"
