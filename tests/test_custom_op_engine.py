"""Custom ops are spread over blocks (the op, its backward, its fake, the registration):
the engine runs the custom-op rules on every piece, and an edit in one piece updates the
findings of the others even with the editor's incremental cache."""

from __future__ import annotations

import textwrap

import libcst as cst

from gradlint.analysis.custom_ops import custom_ops
from gradlint.analysis.scopes import ModuleContext
from gradlint.engine.linter import LintCache, LintOptions, lint_source

OP = textwrap.dedent('''
    import torch

    @torch.library.custom_op("mylib::mysin", mutates_args=())
    def mysin(x: torch.Tensor) -> torch.Tensor:
        return x.sin()

    def setup_context(ctx, inputs, output):
        SAVE

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    mysin.register_autograd(backward, setup_context=setup_context)
''')


def _codes(text: str, cache: LintCache | None = None) -> list[tuple[str, int]]:
    result = lint_source(text, "ops.py", LintOptions(), cache)
    return [(f.code, f.range.start.line) for f in result.findings]


def test_editing_setup_context_updates_the_backward_finding():
    cache = LintCache()
    unsaved = OP.replace("SAVE", "pass")
    assert _codes(unsaved, cache) == [("GL036", 12)]
    saved = OP.replace("SAVE", "ctx.save_for_backward(inputs[0])")
    assert _codes(saved, cache) == []
    assert _codes(unsaved, cache) == [("GL036", 12)]


def test_a_backward_block_without_torch_library_words_is_checked():
    text = OP.replace("SAVE", "pass")
    backward_block = "def backward(ctx, grad):\n    x, = ctx.saved_tensors\n"
    assert "library" not in backward_block and backward_block in text
    assert ("GL036", 12) in _codes(text)


def test_unrelated_blocks_are_still_cached():
    cache = LintCache()
    text = OP.replace("SAVE", "pass") + "\n\ndef unrelated(y):\n    return y * 2\n"
    _codes(text, cache)
    analysed = cache.analysed_blocks
    _codes(text.replace("y * 2", "y * 3"), cache)
    assert cache.analysed_blocks - analysed <= 5  # the op's pieces and the edited block only


def test_model_api_for_the_runner():
    module = cst.parse_module(OP.replace("SAVE", "ctx.save_for_backward(inputs[0])") + textwrap.dedent('''
        @mysin.register_fake
        def _(x):
            return torch.empty_like(x)

        class Ops:
            @torch.library.custom_op("mylib::scale", mutates_args=("out",))
            def scale(x: torch.Tensor, out: torch.Tensor, *, alpha: float = 2.0) -> None:
                out.copy_(x * alpha)
    '''))
    ops = {op.name: op for op in custom_ops(ModuleContext(module.body))}
    sin = ops["mylib::mysin"]
    assert (sin.python_name, sin.qualname, sin.style) == ("mysin", "mysin", "custom_op")
    assert sin.backward.function.qualname == "backward"
    assert sin.setup_context.function.qualname == "setup_context"
    assert [r.function.name for r in sin.fakes] == ["_"]
    assert [(p.name, p.kind, p.annotation_text, p.schema_type) for p in sin.params] == [
        ("x", "positional", "torch.Tensor", "Tensor")]
    scale = ops["mylib::scale"]
    assert scale.qualname == "Ops.scale"
    assert [(p.name, p.kind, p.schema_type, p.default_text, p.mutable) for p in scale.params] == [
        ("x", "positional", "Tensor", None, False), ("out", "positional", "Tensor", None, True),
        ("alpha", "keyword_only", "float", "2.0", False)]
    assert scale.mutates_args.names == ("out",)


def test_readme_custom_op_example_is_current(cli):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    start = readme.index("$ gradlint check scale_op.py\n") + len("$ gradlint check scale_op.py\n")
    shown = readme[start: readme.index("```", start)]
    result = cli("check", "scale_op.py", "--no-color", cwd=root / "tests/fixtures/custom_ops/mistakes")
    assert result.stdout == shown


def test_lines_of_every_piece_for_the_runner():
    from gradlint.engine.linter import view_module

    text = OP.replace("SAVE", "ctx.save_for_backward(inputs[0])")
    view = view_module(text, LintCache())
    (op,) = custom_ops(view.context)
    assert view.lines_of(op.function.node, op.function.site) == (5, 6)  # the def, not the decorator
    assert view.lines_of(op.backward.function.node, op.backward.function.site) == (11, 13)
    assert view.lines_of(op.setup_context.function.node, op.setup_context.function.site) == (8, 9)
    assert view.lines_of(op.backward.node, op.backward.site) == (15, 15)  # the registration


def test_custom_op_under_another_name():
    text = textwrap.dedent('''
        import torch
        from torch.library import custom_op as op_def

        @op_def("mylib::f", mutates_args=())
        def f(x) -> torch.Tensor:
            return x.sin()
    ''')
    assert _codes(text) == [("GL030", 6)]


def _many_ops(saves: set[int], count: int = 30) -> str:
    """``count`` ops, each in four blocks (the op, setup_context, backward, the registration);
    op i saves its input only if i is in ``saves`` (else GL036 on its backward)."""
    parts = ["import torch\n"]
    for i in range(count):
        op = OP.replace("import torch\n", "").replace("mylib::mysin", "mylib::sin%d" % i)
        op = op.replace("mysin", "sin%d" % i).replace("def setup_context", "def setup%d" % i)
        op = op.replace("setup_context=setup_context", "setup_context=setup%d" % i)
        op = op.replace("def backward", "def backward%d" % i).replace("(backward,", "(backward%d," % i)
        parts.append(op.replace("SAVE", "ctx.save_for_backward(inputs[0])" if i in saves else "pass"))
    return "\n".join(parts)


def test_an_edit_reanalyses_only_the_blocks_that_read_it():
    """Findings of a block that reads other blocks (an op's pieces) are kept with those blocks'
    texts: an edit re-analyses the edited block and the pieces of its own op, not every op's
    (the generated custom_ops shape: 651 of 838 blocks per one-line edit before)."""
    cache = LintCache()
    before = _many_ops(saves=set())
    assert len(_codes(before, cache)) == 30
    analysed = cache.analysed_blocks
    after = _many_ops(saves={7})
    assert _codes(after, cache) == _codes(after)  # the same as a lint without the cache
    assert len(_codes(after)) == 29
    assert cache.analysed_blocks - analysed <= 5


def test_cached_findings_equal_a_fresh_lint_over_a_series_of_edits():
    cache = LintCache()
    for saves in ({1, 2}, {2}, set(), {0, 29}, {0, 5, 29}, {5}, {1, 2}):
        text = _many_ops(saves, count=8 if max(saves, default=0) < 8 else 30)
        assert _codes(text, cache) == _codes(text), saves
