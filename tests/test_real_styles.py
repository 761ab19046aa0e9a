"""Classic mistakes written in the styles real test suites use (tests/fixtures/real_styles):
every `# expect: GL00X` line has that finding, and no other line has any."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from gradlint.engine.linter import LintOptions, lint_source

STYLES = Path(__file__).resolve().parent / "fixtures" / "real_styles"
EXPECT = re.compile(r"#\s*expect:\s*((?:GL\d{3}[ ,]*)+)")


def expectations(text: str) -> Counter:
    found: Counter = Counter()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in re.findall(r"GL\d{3}", match.group(1)):
                found[(code, number)] += 1
    return found


def findings(path: Path) -> Counter:
    result = lint_source(path.read_text(), str(path), LintOptions())
    return Counter((f.code, f.range.start.line) for f in result.findings
                   if f.code not in ("GL000", "GL009") and f.severity.value != "hint")


@pytest.mark.parametrize("path", sorted(STYLES.glob("*.py")), ids=lambda p: p.stem)
def test_style(path):
    expected = expectations(path.read_text())
    found = findings(path)
    missed = expected - found
    extra = found - expected
    assert not extra, f"false alarms: {sorted(extra)}"
    assert not missed, f"missed: {sorted(missed)}"


def recall_by_rule() -> dict[str, tuple[int, int]]:
    caught: Counter = Counter()
    total: Counter = Counter()
    for path in sorted(STYLES.glob("*.py")):
        expected = expectations(path.read_text())
        found = findings(path)
        for (code, line), n in expected.items():
            total[code] += n
            caught[code] += min(n, found[(code, line)])
    return {code: (caught[code], total[code]) for code in sorted(total)}


def test_every_classic_mistake_has_styles():
    total = recall_by_rule()
    for code in ("GL001", "GL002", "GL003", "GL004", "GL005"):
        assert total.get(code, (0, 0))[1] >= 2, code
