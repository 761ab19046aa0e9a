"""One generic test runs every rule's VALID and INVALID examples: the teaching ones in its class
and the long tail in tests/fixtures/rules/<CODE>/ (see gradlint.rules.examples)."""

from __future__ import annotations

import textwrap

import pytest

from gradlint.engine.fixes import apply_fixes
from gradlint.engine.linter import LintOptions, lint_source
from gradlint.rules import ALL_RULES
from gradlint.rules.examples import all_examples


def _code(example: str) -> str:
    return textwrap.dedent(example).lstrip("\n")


def _cases(kind: str):
    for rule in ALL_RULES:
        for example in all_examples(rule, kind):
            yield pytest.param(rule, example.case, id=example.id)


def _lint(rule, code: str):
    # unused-suppression judges the other rules' findings: it needs them all enabled
    options = LintOptions() if rule.code == "GL009" else LintOptions(select=frozenset({rule.code}))
    return [f for f in lint_source(code, "example.py", options).findings if f.code == rule.code]


@pytest.mark.parametrize("rule, example", list(_cases("VALID")))
def test_valid_examples_have_no_findings(rule, example):
    findings = _lint(rule, _code(example.code))
    assert findings == [], "\n".join(f"{f.range.start.line}:{f.range.start.column + 1} {f.message}"
                                      for f in findings)


@pytest.mark.parametrize("rule, example", list(_cases("INVALID")))
def test_invalid_examples(rule, example):
    code = _code(example.code)
    findings = _lint(rule, code)
    assert len(findings) == example.count, [f.message for f in findings]
    first = findings[0]
    assert first.name == rule.name
    if example.message is not None:
        assert first.message == example.message
    if example.range is not None:
        start, end = first.range.start, first.range.end
        assert (start.line, start.column + 1, end.line, end.column + 1) == example.range
    if example.severity is not None:
        assert first.severity.value == example.severity
    else:
        assert first.severity == rule.severity
    if example.fixed is None:
        assert first.fix is None, f"unexpected fix: {first.fix}"
    else:
        assert first.fix is not None, "expected a fix"
        assert first.fix.applicability.value == example.applicability
        fixed, count = apply_fixes(code, [first.fix])
        assert count == 1
        assert fixed == _code(example.fixed)
        # the fix removes the finding it fixes
        after = [(f.range, f.message) for f in _lint(rule, fixed)]
        assert (first.range, first.message) not in after


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_metadata(rule):
    assert rule.code.startswith("GL") and len(rule.code) == 5
    assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
    assert rule.summary and "\n" not in rule.summary
    assert rule.VALID and rule.INVALID, "every rule documents examples of both kinds"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_docs_have_ruff_sections(rule):
    docs = rule.docs()
    sections = [line for line in docs.splitlines() if line.startswith("## ")]
    assert sections[:3] == ["## What it does", "## Why is this bad?", "## Example"], sections
    assert "## Fix safety" in sections
    assert "Use instead:" in docs


def test_codes_and_names_are_unique():
    assert len({r.code for r in ALL_RULES}) == len(ALL_RULES)
    assert len({r.name for r in ALL_RULES}) == len(ALL_RULES)


def test_rules_reference_page_is_up_to_date(update_snapshots):
    from pathlib import Path

    from gradlint.rules.docs import rules_markdown

    page = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
    if update_snapshots:
        page.write_text(rules_markdown())
    assert page.read_text() == rules_markdown(), "regenerate: python -m gradlint.rules.docs > docs/rules.md"


def test_fixture_folders_are_rule_codes():
    from gradlint.rules import RULES_BY_CODE
    from gradlint.rules.examples import FIXTURES

    folders = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert folders <= set(RULES_BY_CODE), folders - set(RULES_BY_CODE)


def test_fixture_examples_are_numbered_listed_and_exact(tmp_path):
    """A fixture's number is its index, every file is listed, and its code is read exactly."""
    import json

    from gradlint.rules import RULES_BY_CODE
    from gradlint.rules.examples import all_examples

    rule = RULES_BY_CODE["GL004"]
    folder = tmp_path / "GL004"
    folder.mkdir()
    first = len(rule.INVALID)
    (folder / f"invalid_{first:02d}.py").write_bytes(b"x = 1\r\n")
    (folder / f"invalid_{first:02d}.fixed.py").write_text("x = 2\n")
    (folder / "examples.json").write_text(json.dumps({f"invalid_{first:02d}.py": {
        "message": "m", "range": [1, 1, 1, 2], "fixed": f"invalid_{first:02d}.fixed.py",
        "applicability": "safe"}}))
    last = list(all_examples(rule, "INVALID", fixtures=tmp_path))[-1]
    assert (last.index, last.id, last.path) == (first, f"GL004-INVALID-{first}",
                                                 folder / f"invalid_{first:02d}.py")
    assert (last.case.code, last.case.fixed, last.case.range) == ("x = 1\r\n", "x = 2\n", (1, 1, 1, 2))

    (folder / f"invalid_{first:02d}.fixed.py").unlink()
    (folder / f"invalid_{first:02d}.py").rename(folder / f"invalid_{first + 1:02d}.py")
    (folder / "examples.json").write_text(json.dumps({f"invalid_{first + 1:02d}.py": {}}))
    with pytest.raises(ValueError, match="without gaps"):
        list(all_examples(rule, "INVALID", fixtures=tmp_path))
    (folder / "stray.py").write_text("")
    with pytest.raises(ValueError, match="not an example"):
        list(all_examples(rule, fixtures=tmp_path))
    with pytest.raises(FileNotFoundError):
        list(all_examples(rule, fixtures=tmp_path / "absent"))
