"""`# noqa` and `# gradlint: ignore[...]` comments."""

from __future__ import annotations

import textwrap

import pytest

from gradlint.engine.linter import lint_source
from gradlint.engine.suppressions import add_noqa


def _codes(source: str) -> list[tuple[int, str]]:
    """Findings other than unused-suppression (GL009, tested on its own below)."""
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source)).findings if f.code != "GL009"]


BASE = """\
import torch
def test():
    x = torch.randn(3, requires_grad=True)
    torch.autograd.gradcheck(torch.sin, (x,)){comment}
"""


@pytest.mark.parametrize("comment, suppressed", [
    ("", False),
    ("  # noqa", True),
    ("  # noqa: GL001", True),
    ("  # NOQA:GL001,GL002", True),
    ("  # noqa: GL002", False),
    ("  # noqa: E501", False),
    ("  # gradlint: ignore[GL001]", True),
    ("  # gradlint: ignore", True),
    ("  # gradlint: ignore[GL003]", False),
    ("  # type: ignore  # noqa: GL001", True),
    ("  # some words noqa: GL001", False),
])
def test_line_comments(comment, suppressed):
    assert bool(_codes(BASE.format(comment=comment))) is not suppressed


def test_first_line_of_a_multiline_statement():
    source = """\
        import torch
        def test():
            x = torch.randn(3, requires_grad=True)
            torch.autograd.gradcheck(  # noqa: GL001
                torch.sin,
                (x,),
            )
        """
    assert _codes(source) == []


def test_comment_inside_a_string_is_not_a_suppression():
    source = """\
        import torch
        def test():
            x = torch.randn(3, requires_grad=True)
            torch.autograd.gradcheck(torch.sin, (x,), raise_exception="# noqa")
        """
    assert _codes(source) == [(4, "GL001")]


def test_file_level_exemption():
    assert _codes("# gradlint: noqa\n" + BASE.format(comment="")) == []
    assert _codes("# gradlint: noqa: GL001\n" + BASE.format(comment="")) == []
    assert _codes("# gradlint: noqa: GL002\n" + BASE.format(comment="")) == [(5, "GL001")]


@pytest.mark.parametrize("line, expected", [
    ("x = f(y)", "x = f(y)  # noqa: GL001"),
    ("x = f(y)  # noqa: GL002", "x = f(y)  # noqa: GL002, GL001"),
    ("x = f(y)  # noqa", "x = f(y)  # noqa"),
    ("x = f(y)  # noqa: GL001", "x = f(y)  # noqa: GL001"),
    ("x = f(y)  # explain", "x = f(y)  # noqa: GL001 # explain"),
    ("x = '#'  # type: ignore  # noqa:GL002", "x = '#'  # type: ignore  # noqa: GL002, GL001"),
])
def test_add_noqa(line, expected):
    assert add_noqa(line, "GL001") == expected


def test_unused_codes_are_reported_but_used_ones_and_other_tools_are_not():
    source = BASE.format(comment="  # NOQA:GL001,GL002,E501")
    [finding] = [f for f in lint_source(source).findings]
    assert (finding.code, finding.message) == ("GL009", "unused suppression: no GL002 finding on this line")
    assert finding.fix.edits[0].new_text == "# noqa: GL001, E501"
