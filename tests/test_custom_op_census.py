"""scripts/custom_op_census.py counts what gradlint's custom-op and torch.func models see."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "custom_op_census.py"
_spec = importlib.util.spec_from_file_location("custom_op_census", SCRIPT)
census = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = census  # dataclasses look their module up
_spec.loader.exec_module(census)

MODULE = textwrap.dedent('''
    import torch

    @torch.library.custom_op("demo::scale", mutates_args=())
    def scale(x: torch.Tensor, k: float) -> torch.Tensor:
        return x * k

    def backward(ctx, grad):
        return grad * ctx.k, None

    def setup(ctx, inputs, output):
        ctx.k = inputs[1]

    scale.register_autograd(backward, setup_context=setup)
    torch.library.register_fake("demo::scale", fake_from_elsewhere)

    torch.library.define("demo::twice", "(Tensor x) -> Tensor")

    @torch.library.impl("demo::twice", "cpu")
    def twice(x):
        return 2 * x

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * grad

    ys = torch.func.vmap(Cube.apply)(torch.randn(4, 3))
''')


def test_counts_ops_registrations_and_transformed_applies():
    counted = census.census_of_text(MODULE)
    assert counted.files == 1 and counted.files_with_ops == 1
    assert counted.ops == {"custom_op": 1, "define": 1}
    assert counted.known_signature == 2  # from the annotations, from the schema
    assert counted.registrations == {"backward": 1, "setup_context": 1, "fake": 1,
                                     "kernel+impl": 1}
    # the fake names a function this module does not define
    assert counted.resolved == {"backward": 1, "setup_context": 1, "fake": 0, "kernel+impl": 1}
    assert counted.transformed_applies == 1


def test_files_that_mention_neither_api_are_not_read():
    assert census.census_of_text("import torch\nx = torch.ones(2)\n").files == 0
    assert census.census_of_text("custom_op = 1\n").files == 0  # no torch: never parsed


def test_prints_one_row_per_directory(tmp_path, capsys):
    (tmp_path / "ops.py").write_text(MODULE)
    (tmp_path / "plain.py").write_text("import torch\n")
    assert census.main(["--paths", str(tmp_path)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2] == f"| {tmp_path} | 1 | 1 | 2 (1 / 1 / 0) | 2 | 3 of 4 (1 / 1 / 0 / 1 / 0) | 1 |"
