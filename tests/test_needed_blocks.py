"""Only the blocks a rule can fire in, and what they name, are parsed; the findings are
those of a whole-file parse."""

from __future__ import annotations

import textwrap

from gradlint.analysis.source import scan
from gradlint.engine.linter import LintCache, lint_source
from gradlint.engine.needed_blocks import needed_blocks
from gradlint.engine.prefilter import Code, may_fire
from gradlint.rules import RULES_BY_CODE

FILLER = "".join(f"\n\ndef unrelated_{i}(a):\n    return a + {i}\n" for i in range(10))

FUNCTION_FILE = textwrap.dedent('''\
    import torch
    import math
    from torch.nn.functional import sigmoid as squash

    Base = torch.autograd.Function
    SCALE = 2.0
    SCALE = 3.0
    NOT_NAMED = 1

    def helper(t):
        return t * inner(t)

    def inner(t):
        return t

    class MyFn(Base):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x)
            sig = squash(x)
            ctx.sig = sig
            return helper(x) * y * SCALE

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * SCALE * ctx.sig
    ''') + FILLER + "\nSCALE.__class__\n"


def _rules(text: str) -> list:
    code = Code(text)
    return [rule for c, rule in RULES_BY_CODE.items()
            if c != "GL000" and not rule.engine_level and may_fire(rule, text, code)]


def _chosen(text: str) -> list[str] | None:
    blocks = scan(text).blocks
    needed = needed_blocks(text, blocks, _rules(text))
    if needed is None:
        return None
    return [blocks[i].text.strip().splitlines()[0] for i in sorted(needed)]


def test_a_function_needs_its_names_and_nothing_else():
    chosen = _chosen(FUNCTION_FILE)
    assert chosen is not None
    assert chosen == [
        "import torch",
        "from torch.nn.functional import sigmoid as squash",
        "Base = torch.autograd.Function",  # its base, through an alias
        "SCALE = 2.0", "SCALE = 3.0",  # every binding of a name it reads
        "def helper(t):", "def inner(t):",  # what it calls, and what that calls
        "class MyFn(Base):",
        "SCALE.__class__",  # module-level code that mentions a name it reads
    ]


def test_the_findings_are_those_of_a_whole_file_parse():
    cache = LintCache()
    fast = lint_source(FUNCTION_FILE, "f.py", cache=cache).findings
    assert sorted(f.code for f in fast) == ["GL004", "GL010"]
    assert fast == lint_source(FUNCTION_FILE, "f.py", exhaustive=True).findings
    assert len(cache.blocks) < len(scan(FUNCTION_FILE).blocks)


def test_the_blocks_a_rule_reads_through_names_matter(monkeypatch):
    """GL010 knows `squash(x)` is a tensor only through the import in another block: with
    the Function's block alone, the finding is lost (what the closure over names prevents)."""
    from gradlint.engine import linter

    monkeypatch.setattr(linter, "needed_blocks", lambda text, blocks, rules, code_of, names_of, seeds_memo, parsed: {
        i for i, block in enumerate(blocks) if "class MyFn" in block.text})
    codes = [f.code for f in lint_source(FUNCTION_FILE, "f.py", cache=LintCache()).findings]
    assert codes == ["GL004"]


def test_star_imports_and_default_dtype_are_always_parsed():
    text = FUNCTION_FILE.replace("import math", "from math import *\ntorch.set_default_dtype(torch.float64)")
    chosen = _chosen(text)
    assert chosen is not None
    assert "from math import *" in chosen and "torch.set_default_dtype(torch.float64)" in chosen


def test_global_declarations_bind_module_names():
    text = FUNCTION_FILE + "\ndef setter():\n    global SCALE\n    SCALE = 4.0\n"
    assert "def setter():" in (_chosen(text) or [])


def _same_findings_with_fewer_blocks(text: str, expected: set[str]) -> list[str]:
    cache = LintCache()
    fast = lint_source(text, "t.py", cache=cache).findings
    assert expected <= {f.code for f in fast}
    assert fast == lint_source(text, "t.py", exhaustive=True).findings
    chosen = _chosen(text)
    assert chosen is not None and not any(line.startswith("def unrelated_") for line in chosen)
    return chosen


def test_a_gradcheck_alias_brings_its_callers():
    text = textwrap.dedent('''\
        import functools
        import torch

        check = functools.partial(torch.autograd.gradcheck, eps=1e-6)

        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad
        ''') + FILLER + textwrap.dedent('''

        def test_square():
            x = torch.randn(3, requires_grad=True)
            assert check(Square.apply, (x,))
        ''')
    chosen = _same_findings_with_fewer_blocks(text, {"GL001"})  # float32 input, seen through `check`
    assert "def test_square():" in chosen


def test_a_custom_op_file_is_parsed_in_part():
    text = textwrap.dedent('''\
        import torch

        @torch.library.custom_op("demo::scale", mutates_args=())
        def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
            return x * factor
        ''') + FILLER + textwrap.dedent('''

        @scale.register_fake
        def _(x, factor, extra):
            return torch.empty_like(x)
        ''')
    chosen = _same_findings_with_fewer_blocks(text, {"GL037"})  # the fake's signature differs
    assert "@scale.register_fake" in chosen


def test_a_torch_func_alias_brings_its_uses():
    text = textwrap.dedent('''\
        import torch
        from torch.func import vmap as batched

        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        ''') + FILLER + textwrap.dedent('''

        def run(x):
            return batched(Double.apply)(x)
        ''')
    chosen = _same_findings_with_fewer_blocks(text, {"GL039"})
    assert "def run(x):" in chosen


def test_few_blocks_or_unreadable_code_parse_the_whole_file():
    short = "import torch\nimport math\n\n" + FUNCTION_FILE[FUNCTION_FILE.index("class MyFn"):].split("\n\n\ndef unrelated_0")[0]
    assert 2 < len(scan(short).blocks) < 8
    assert _chosen(short) is None
    broken = FUNCTION_FILE + "\ndef broken(:\n    pass\n"
    assert _chosen(broken) is None
    assert "GL000" in {f.code for f in lint_source(broken, "f.py").findings}


def test_a_statement_cut_in_two_by_the_lexical_split_means_a_whole_parse():
    from gradlint.engine.needed_blocks import block_names

    assert block_names("x = call(\n    1,\n)\n") is not None
    assert block_names("x = call(\n") is None  # a piece of a statement
    assert block_names("    1,\n)\n") is None
    assert block_names("# only a comment\n") is not None
    text = FUNCTION_FILE + "\ndef broken(:\n    pass\n"
    assert needed_blocks(text, scan(text).blocks, _rules(text)) is None


def test_a_fixture_named_by_its_decorator_is_found_by_that_name():
    text = textwrap.dedent('''\
        import pytest
        import torch

        @pytest.fixture(name="inputs")
        def make_inputs():
            return (torch.randn(3, requires_grad=True),)
        ''') + FILLER + textwrap.dedent('''

        def test_sin(inputs):
            assert torch.autograd.gradcheck(torch.sin, inputs)
        ''')
    chosen = _chosen(text)
    assert chosen is not None and "@pytest.fixture(name=\"inputs\")" in chosen
    fast = lint_source(text, "t.py").findings
    assert fast == lint_source(text, "t.py", exhaustive=True).findings
    assert "GL001" in {f.code for f in fast}  # float32 inputs, seen through the fixture


def test_what_an_editor_keeps_between_lints_stays_within_its_budget():
    cache = LintCache()
    cache.max_names_chars = cache.seeds.max_chars = 20_000
    lines = FUNCTION_FILE.split("\n")
    for edit in range(200):  # distinct versions, as an editor sees them
        lines[-3] = f"    return a + {edit}"
        lint_source("\n".join(lines), "f.py", cache=cache)
    assert len(cache.names) > 10
    assert cache.names_chars <= 20_000 and cache.seeds.chars <= 20_000
    assert sum(map(len, cache.names)) == cache.names_chars
