"""The engine: block splitting, incremental re-analysis, half-typed code, decoding."""

from __future__ import annotations

import textwrap

import pytest

from gradlint.analysis.source import SourceDecodeError, decode_source, scan
from gradlint.engine.fixes import apply_fixes, fix_source
from gradlint.engine.linter import LintCache, LintOptions, lint_source


def _blocks(text: str) -> list[tuple[int, str]]:
    return [(b.start_line, b.text.splitlines()[0] if b.text.strip() else "") for b in scan(text).blocks]


def test_blocks_follow_top_level_statements():
    text = textwrap.dedent('''\
        """doc"""
        import torch

        @decorator
        # a comment between
        def f(x):
            s = """
        not a statement start
        """
            return (x +
        1)

        if a:
            pass
        elif b:
            pass
        else:
            pass
        try:
            pass
        except E:
            pass
        finally:
            pass
        x = [
        1,
        ]
        y = 1 \\
        + 2
        class C: pass
        ''')
    assert [line for line, _ in _blocks(text)] == [1, 2, 4, 13, 19, 25, 28, 30]
    assert "".join(b.text for b in scan(text).blocks) == text


def test_comments_are_found_outside_strings_only():
    comments = scan('x = "# not a comment"  # real\ny = 1\n# own line\n').comments
    assert comments == {1: "# real", 3: "# own line"}


def test_unclosed_bracket_recovers_at_next_definition():
    text = "import torch\nx = f(\n\ndef g():\n    pass\n"
    assert [line for line, _ in _blocks(text)] == [1, 2, 4]


HALF_TYPED = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck

    x = torch.randn(4, requires_grad=True

    def test_tanh():
        y = torch.randn(4, requires_grad=True)
        assert gradcheck(torch.tanh, (y,))
    """)


def test_half_typed_code_reports_the_syntax_error_and_keeps_analysing():
    findings = lint_source(HALF_TYPED).findings
    assert [(f.code, f.line) for f in findings] == [("GL000", 4), ("GL001", 8)]
    assert findings[0].message == "syntax error: '(' was never closed"


def test_fixes_are_never_applied_to_a_file_that_does_not_parse():
    outcome = fix_source(HALF_TYPED, "x.py", LintOptions())
    assert outcome.text == HALF_TYPED and outcome.fixed == 0


def test_whole_file_fallback_when_the_split_is_wrong():
    # a triple-quoted string spanning a line that looks like a statement start: the
    # lexical scan handles strings; this checks the safety net keeps correct code quiet
    text = 'import torch\nx = f"""\ndef g(:\n"""\n'
    assert lint_source(text).findings == []


FILE = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad

    def test_square():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(Square.apply, (x,))

    def test_other():
        y = torch.randn(3, dtype=torch.float64)
        assert gradcheck(torch.sin, (y,))
    """)


def test_incremental_reanalysis_touches_only_the_changed_block():
    cache = LintCache()
    first = lint_source(FILE, cache=cache).findings
    assert [f.code for f in first] == ["GL001", "GL002"]
    analysed = cache.analysed_blocks
    parsed = cache.blocks.misses
    edited = FILE.replace("y = torch.randn(3, dtype=torch.float64)",
                          "y = torch.randn(3, dtype=torch.float64, requires_grad=True)")
    second = lint_source(edited, cache=cache).findings
    assert [f.code for f in second] == ["GL001"]
    assert cache.blocks.misses == parsed + 1  # only the edited function was parsed again
    assert cache.analysed_blocks == analysed + 1  # and only it was analysed again


def test_lines_inserted_above_shift_cached_findings():
    cache = LintCache()
    lint_source(FILE, cache=cache)
    shifted = lint_source("# a new comment\n\n" + FILE, cache=cache).findings
    fresh = lint_source("# a new comment\n\n" + FILE).findings
    assert shifted == fresh
    assert [f.line for f in shifted] == [19, 23]


def test_changing_module_context_reanalyses_dependent_blocks():
    cache = LintCache()
    assert [f.code for f in lint_source(FILE, cache=cache).findings] == ["GL001", "GL002"]
    with_default = FILE.replace("from torch.autograd import gradcheck\n",
                                "from torch.autograd import gradcheck\ntorch.set_default_dtype(torch.float64)\n")
    assert [f.code for f in lint_source(with_default, cache=cache).findings] == ["GL002"]


def test_fix_edit_in_another_block():
    text = textwrap.dedent("""\
        import torch
        x = torch.randn(3, requires_grad=True)

        def test():
            torch.autograd.gradcheck(torch.sin, (x,))
        """)
    [finding] = lint_source(text).findings
    assert finding.fix is not None and finding.fix.applicability.value == "unsafe"
    fixed, _ = apply_fixes(text, [finding.fix])
    assert "x = torch.randn(3, dtype=torch.float64, requires_grad=True)" in fixed


def test_crlf_and_tabs_and_unicode_positions():
    text = "import torch\r\ndef test():\r\n\t# é 你好\r\n\tx = torch.randn(3, requires_grad=True)\r\n" \
           "\ttorch.autograd.gradcheck(torch.sin, (x,))  # 😀\r\n"
    [finding] = lint_source(text).findings
    assert (finding.range.start.line, finding.range.start.column) == (5, 37)
    fixed, count = apply_fixes(text, [finding.fix])
    assert count == 1 and "\r\n" in fixed and "\n\t" not in fixed.replace("\r\n\t", "")
    assert fixed.splitlines()[3] == "\tx = torch.randn(3, dtype=torch.float64, requires_grad=True)"


def test_decode_source():
    assert decode_source(b"\xef\xbb\xbfx = 1\n") == "x = 1\n"
    assert decode_source(b"# coding: latin-1\nx = '\xe9'\n") == "# coding: latin-1\nx = '\xe9'\n"
    with pytest.raises(SourceDecodeError) as error:
        decode_source(b"x = 1\ny = '\xff'\n")
    assert (error.value.line, error.value.column) == (2, 5)
    with pytest.raises(SourceDecodeError):
        decode_source(b"# coding: klingon\n")


def test_files_without_any_rule_token_are_not_parsed():
    cache = LintCache()
    assert lint_source("import torch\nprint(torch.ones(3))\n" * 100, cache=cache).findings == []
    assert cache.blocks.misses == 0
    broken = lint_source("import torch\ndef f(:\n", cache=cache).findings
    assert [f.code for f in broken] == ["GL000"]


def test_files_that_never_mention_torch_are_skipped():
    assert lint_source("def f(:\n").findings == []


def test_aliases_resolve_through_imports_and_assignments():
    text = textwrap.dedent("""\
        import torch as T
        import torch.autograd.gradcheck as gc_fn
        from torch.autograd.gradcheck import gradcheck as gc2
        check = T.autograd.gradcheck

        def test():
            x = T.ones(2, requires_grad=True)
            gc_fn(T.sin, (x,))
            gc2(T.sin, (x,))
            check(T.sin, (x,))
        """)
    assert [f.line for f in lint_source(text).findings] == [8, 9, 10]


def test_shadowed_names_are_not_torch():
    text = textwrap.dedent("""\
        import torch
        from torch.autograd import gradcheck

        def gradcheck(f, inputs):
            return True

        def test():
            x = torch.ones(2, requires_grad=True)
            gradcheck(torch.sin, (x,))
        """)
    assert lint_source(text).findings == []


def test_try_import_fallback_keeps_torch_resolution():
    text = textwrap.dedent("""\
        try:
            import torch
        except ImportError:
            torch = None

        def test():
            x = torch.ones(2, requires_grad=True)
            torch.autograd.gradcheck(torch.sin, (x,))
        """)
    assert [f.code for f in lint_source(text).findings] == ["GL001"]


def test_huge_sources_are_reported_not_parsed():
    from gradlint.engine.linter import MAX_SOURCE_CHARS

    text = "import torch\n" + "x = 1\n" * (MAX_SOURCE_CHARS // 6 + 1)
    [finding] = lint_source(text).findings
    assert finding.code == "GL000" and finding.message.startswith("file is too large to analyse")


def _apply_fixes_by_pairs(text, fixes):
    """apply_fixes as it was written first: every new span against every accepted one."""
    from gradlint.engine.fixes import LineIndex

    def _overlaps(a, b):
        if a[0] == a[1] or b[0] == b[1]:  # insertions: only conflict at the same point
            return a[0] == b[0] or (b[0] < a[0] < b[1]) or (a[0] < b[0] < a[1])
        return a[0] < b[1] and b[0] < a[1]

    index = LineIndex(text)
    accepted, count = [], 0
    for fix in sorted(fixes, key=lambda f: min(e.range.start for e in f.edits)):
        spans = [(index.offset(e.range.start), index.offset(e.range.end), e.new_text) for e in fix.edits]
        new = [span for span in spans if span not in accepted]
        if any(_overlaps(span, other) for span in new for other in accepted):
            continue
        accepted.extend(new)
        count += 1
    result = text
    for start, end, new_text in sorted(accepted, key=lambda s: (s[0], s[1]), reverse=True):
        result = result[:start] + new_text + result[end:]
    return result, count


def test_overlapping_fixes_are_chosen_as_by_comparing_every_pair():
    import random

    from gradlint.findings import Applicability, Edit, Fix, Range

    rng = random.Random(26)
    text = "".join(f"line {n} " + "x" * rng.randrange(0, 12) + "\n" for n in range(30))
    lines = text.splitlines()
    for _ in range(300):
        fixes = []
        for _ in range(rng.randrange(1, 25)):
            edits = []
            for _ in range(rng.randrange(1, 4)):
                line = rng.randrange(1, 31)
                start = rng.randrange(0, len(lines[line - 1]) + 1)
                end_line = min(30, line + rng.choice([0, 0, 0, 1, 2]))
                end = rng.randrange(0, len(lines[end_line - 1]) + 1)
                if (end_line, end) < (line, start) or rng.random() < 0.2:
                    end_line, end = line, start  # an insertion
                edits.append(Edit(Range.of(line, start, end_line, end), rng.choice(["", "a", "bc"])))
            fixes.append(Fix("t", Applicability.SAFE, tuple(edits)))
        assert apply_fixes(text, fixes) == _apply_fixes_by_pairs(text, fixes)


def test_the_fast_code_only_blanks_the_same_text():
    from gradlint.analysis.source import code_only, without_comments_and_strings

    texts = [
        'x = "a # not a comment" + f\'{y}\'  # a comment with "quotes"\n',
        "s = '''one\n  two ( \"\"\" ''' + rb\"\\\\\" \\\n    + u'\\''\n",
        'call(a, "unterminated\nb = (1,\n# c\n2)\n',
        'def f():\n    """doc (with brackets] """\n    return x[\'k\']  # end\n',
        "x = Rb'\\n' + BR\"x\" + 'é # ü'\n\\\n",
    ]
    texts.append("\n".join(texts))
    for text in texts:
        assert without_comments_and_strings(text) == code_only(text)
