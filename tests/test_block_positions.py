"""A block's positions equal libcst's own providers', also when code generation stopped
early at the nodes a block's findings needed (ParsedBlock.resolve_positions_of)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider

from gradlint.engine.blocks import parse_block

CODE = textwrap.dedent('''\
    # a comment above
    @torch.no_grad()
    @staticmethod
    def backward(ctx, grad_output):  # trailing
        x, = ctx.saved_tensors
        if (x > 0).all():
            return (grad_output * (x
                                   + 1)), None
        return [grad_output for _ in range(2)], None


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: "torch.Tensor" = None, *, k=2.0):
            ctx.save_for_backward(x)
            return x * k
    ''')


def _all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    module.visit(Collect())
    return found


@pytest.mark.parametrize("stop_at", [0, 3, 40, 120, -1])
def test_positions_after_an_early_stop_equal_libcsts(stop_at: int):
    block = parse_block(CODE)
    assert block.module is not None
    wrapper = MetadataWrapper(block.module, unsafe_skip_copy=True)
    syntactic = wrapper.resolve(PositionProvider)
    inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
    nodes = _all_nodes(block.module)
    block.resolve_positions_of([nodes[stop_at]])  # generation stops after this node
    # first what the early stop placed, in an order where a node placed with a span cut
    # short (its ancestors were still open) is asked before anything resolves the rest
    # (a block keeps its positions by node id)
    by_id = {id(node): node for node in nodes}
    placed = [by_id[key] for key in sorted(block._positions or (),
                                           key=lambda key: key in (block._whitespace_positions or ()))]
    assert nodes[stop_at] in placed
    for node in [*placed, *nodes]:
        assert block.position(node) == syntactic[node], type(node).__name__
        assert block.whitespace_position(node) == inclusive[node], type(node).__name__


def test_an_early_stop_generates_less_than_the_whole_block():
    block = parse_block(CODE)
    assert block.module is not None
    first_name = next(n for n in _all_nodes(block.module) if isinstance(n, cst.Name))
    block.resolve_positions_of([first_name])
    assert block._positions is not None and id(first_name) in block._positions
    assert len(block._whitespace_positions or ()) < len(_all_nodes(block.module)) / 4


TRICKY = [
    "x = 1\r\nif x:\r\n    y = (1 +\r\n  2)\r\n",  # CRLF, a bracket across lines
    "",
    "# only a comment\n",
    "größe = 'ünïcödé'  # 完成\nα = lambda β: β ** 2\n",
    "def f():\n\treturn 1\n",  # a tab
    "s = '''a\nb'''\nt = f'{s!r:>{10}}'\n",
]


@pytest.mark.parametrize("code", TRICKY + ["generated"])
def test_positions_of_every_node_equal_libcsts(code: str):
    if code == "generated":  # every shape of the scaling benchmark, a few units each
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
        from shapes import SHAPES, generate

        texts = [generate(shape, 200) for shape in SHAPES if shape != "notebook"]
    else:
        texts = [code]
    for text in texts:
        block = parse_block(text)
        assert block.module is not None
        wrapper = MetadataWrapper(block.module, unsafe_skip_copy=True)
        syntactic = wrapper.resolve(PositionProvider)
        inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
        for node in _all_nodes(block.module):
            assert block.position(node) == syntactic[node], type(node).__name__
            assert block.whitespace_position(node) == inclusive[node], type(node).__name__


@pytest.mark.parametrize("code", [CODE, *[t for t in TRICKY if t], "generated"])
def test_the_wanted_nodes_alone_get_libcsts_positions(code: str):
    """``resolve_positions_of`` records only the wanted nodes (and those their syntactic
    spans come from): each recorded span equals libcst's, before anything resolves the
    rest. (A text with a carriage return takes the full state, which records every node.)"""
    import random

    if code == "generated":
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
        from shapes import SHAPES, generate

        texts = [generate(shape, 150) for shape in SHAPES if shape != "notebook"]
    else:
        texts = [code]
    chance = random.Random(26)
    for text in texts:
        block = parse_block(text)
        assert block.module is not None
        wrapper = MetadataWrapper(block.module, unsafe_skip_copy=True)
        syntactic = wrapper.resolve(PositionProvider)
        inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
        nodes = _all_nodes(block.module)
        for _ in range(20):
            block.forget_positions()
            wanted = chance.sample(nodes, min(len(nodes), chance.choice([1, 2, 7, 30])))
            block.resolve_positions_of(wanted)
            recorded = [n for n in nodes if id(n) in (block._whitespace_positions or ())]
            assert {id(n) for n in wanted} <= {id(n) for n in recorded}
            if "\r" not in text:
                assert len(recorded) < len(nodes) or len(wanted) == len(nodes)
            for node in recorded:
                assert block.position(node) == syntactic[node], type(node).__name__
                assert block.whitespace_position(node) == inclusive[node], type(node).__name__
