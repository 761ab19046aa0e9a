"""Where findings about one gradcheck input's value are shown: the rules that judge an input's
dtype (GL001), contents (GL019) or strides (GL029) underline the same thing for the same shape
of call (gradlint/rules/gradcheck_calls/input_range.py)."""

from __future__ import annotations

import textwrap

import pytest

from gradlint.engine.linter import LintOptions, lint_source

# how each rule's wrong input is made
MADE = {
    "GL001": "torch.randn(3, requires_grad=True)",
    "GL019": "torch.empty(3, dtype=torch.float64, requires_grad=True)",
    "GL029": "torch.randn(1, dtype=torch.float64, requires_grad=True).expand(3)",
}
OK = "torch.randn(3, dtype=torch.float64, requires_grad=True)"

# (the code before the call, the inputs argument, the text the finding must cover)
SHAPES = {
    "named in a 1-tuple": ("x = {made}", "(x,)", "(x,)"),
    "named in a list": ("x = {made}", "[x]", "[x]"),
    "named among others": ("a = {ok}\n    x = {made}", "(a, x)", "(a, x)"),
    "a tuple made elsewhere": ("x = {made}\n    inputs = (x,)", "inputs", "inputs"),
    "a bare tensor": ("x = {made}", "x", "x"),
    "made in the call": ("", "({made},)", "{made}"),
    "made in the call among others": ("a = {ok}", "(a, {made})", "{made}"),
}


# GL019 and GL029 follow the inputs written in the call only
NOT_FOLLOWED = {("GL019", "a tuple made elsewhere"), ("GL029", "a tuple made elsewhere")}


def _source(code: str, shape: str) -> tuple[str, str]:
    before, inputs, covered = (part.format(made=MADE[code], ok=OK) for part in SHAPES[shape])
    source = textwrap.dedent("""\
        import torch

        def f(*tensors):
            return sum(t.sum() for t in tensors)

        def test_it():
            {before}
            assert torch.autograd.gradcheck(f, {inputs})
        """).replace("{before}", before).replace("{inputs}", inputs)
    return source, covered


@pytest.mark.parametrize("code, shape", [(code, shape) for code in MADE for shape in SHAPES
                                         if (code, shape) not in NOT_FOLLOWED])
def test_a_finding_about_an_input_covers_what_the_call_passes(code, shape):
    source, covered = _source(code, shape)
    findings = [f for f in lint_source(source, "test_it.py", LintOptions(select=frozenset({code}))).findings]
    assert [f.code for f in findings] == [code], (source, findings)
    [finding] = findings
    start, end = finding.range.start, finding.range.end
    assert start.line == end.line, finding
    line = source.splitlines()[start.line - 1]
    assert line[start.column:end.column] == covered, (line, finding.message)
