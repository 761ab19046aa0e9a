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
            more = chance.sample(nodes, min(len(nodes), 3))  # placed beside those already placed
            block.resolve_positions_of(more)
            recorded = [n for n in nodes if id(n) in (block._whitespace_positions or ())]
            assert {id(n) for n in wanted + more} <= {id(n) for n in recorded}
            for node in recorded:
                assert block.position(node) == syntactic[node], type(node).__name__
                assert block.whitespace_position(node) == inclusive[node], type(node).__name__


def _statements_with_nodes(module: cst.Module) -> list[tuple[cst.CSTNode, list[cst.CSTNode]]]:
    """Every statement (and elif clause) with the nodes under it."""
    found: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = []
    stack: list[list[cst.CSTNode]] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            for nodes in stack:
                nodes.append(node)
            if isinstance(node, (cst.BaseStatement, cst.If)):
                found.append((node, []))
                stack.append(found[-1][1])
            return True

        def on_leave(self, node: cst.CSTNode) -> None:
            if isinstance(node, (cst.BaseStatement, cst.If)):
                stack.pop()

    module.visit(Collect())
    return found


def _texts_with_long_blocks() -> list[str]:
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "benchmarks"))
    from shapes import SHAPES, generate

    texts = [generate(shape, 120) for shape in SHAPES if shape != "notebook"]
    texts += [path.read_text(encoding="utf-8") for path in sorted((root / "examples").glob("*.py"))]
    texts += [CODE, *[t for t in TRICKY if t],
              "class A:\n    # c\n\n    @d\n    # between\n    @e(1,\n      2)\n    async def f(self):\n"
              "        if x:  # t\n            pass\n        elif y: z = 1\n        else:\n"
              "            try:\n                a = '''\n  b'''\n            except E: \\\n"
              "                    pass\n            finally:\n                for i in j: k()\n"
              "    # footer\n  # odd\nx = [\n  1,\n# c\n]; y = 2\n"]
    return texts


def test_statement_by_statement_positions_equal_libcsts(monkeypatch):
    """``resolve_positions_in`` generates only the statements that hold the wanted nodes,
    each from the line ``statement_lines`` finds for it: every span it records equals
    libcst's (and when a node is not in the statement given with it, or a text cannot be
    paired, the whole block is generated instead: the same values)."""
    import random

    from gradlint.engine import blocks

    monkeypatch.setattr(blocks, "PLACE_BY_STATEMENT_CHARS", 0)
    chance = random.Random(8)
    placed_alone = 0
    for text in _texts_with_long_blocks():
        block = parse_block(text)
        if block.module is None:
            continue
        wrapper = MetadataWrapper(block.module, unsafe_skip_copy=True)
        syntactic = wrapper.resolve(PositionProvider)
        inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
        statements = _statements_with_nodes(block.module)
        if not statements:
            continue
        for _ in range(25):
            block.forget_positions()
            pairs = []
            for statement, nodes in chance.sample(statements, min(len(statements), chance.choice([1, 3, 9]))):
                pairs.append((statement, statement))
                pairs += [(node, statement) for node in chance.sample(nodes, min(len(nodes), 4))]
            if chance.random() < 0.1:  # a node given with a statement that does not hold it
                pairs.append((chance.choice(statements)[0], statements[0][0]))
            placed_alone += block._place_statements(pairs) if "\r" not in text else 0
            block.forget_positions()
            block.resolve_positions_in(pairs)
            statement, nodes = chance.choice(statements)  # then more, beside those placed
            more = [(statement, statement), *((node, statement) for node in nodes[:3])]
            block.resolve_positions_in(more)
            recorded = [n for n in _all_nodes(block.module) if id(n) in (block._whitespace_positions or ())]
            assert {id(node) for node, _ in pairs + more} <= {id(n) for n in recorded}
            for node in recorded:
                assert block.position(node) == syntactic[node], type(node).__name__
                assert block.whitespace_position(node) == inclusive[node], type(node).__name__
    assert placed_alone > 100  # (most sets are placed statement by statement)
