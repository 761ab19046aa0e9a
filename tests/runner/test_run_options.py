"""Where a run's compile and precision options come from, how long such a run may take, and
that they are part of the results cache's key (runner/run_options.py, runner/plans.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradlint.engine.config import ConfigError, run_option
from gradlint.runner.plans import plan
from gradlint.runner.protocol import DEFAULT_LIMITS
from gradlint.runner.run_options import (COMPILE_ALLOWANCE_S, PRECISION_ALLOWANCE_S, compile_backends,
                                         default_timeout, layered)
from gradlint.runner.targets import find_targets

SOURCE = '''
import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


def test_later_layers_win_and_options_asking_for_nothing_are_dropped():
    project = {"compile": ["aot_eager"], "dtype": "bfloat16", "precision_factor": 3.0}
    assert layered(project, {"eps": 1e-4}) == {**project, "eps": 1e-4}
    assert layered(project, {"compile": True}) == {**project, "compile": True}
    # the editor's or the command line's "off" switches off what the project asks for
    assert layered(project, {"compile": False, "dtype": None}) == {"precision_factor": 3.0}
    # and a run that asks for nothing has the options of a plain run
    assert layered(None, {"compile": False}, {}) == {}


def test_the_default_timeout_grows_with_the_checks_asked_for():
    base = float(DEFAULT_LIMITS["timeout_s"])
    assert default_timeout(None) == default_timeout({"eps": 1e-3}) == base
    assert default_timeout({"compile": ["aot_eager"]}) == base + COMPILE_ALLOWANCE_S["aot_eager"]
    assert default_timeout({"compile": True}) == base + sum(COMPILE_ALLOWANCE_S.values())
    assert default_timeout({"compile": True, "dtype": "bfloat16"}) == \
        base + sum(COMPILE_ALLOWANCE_S.values()) + PRECISION_ALLOWANCE_S
    assert compile_backends({"compile": ["inductor", "aot_eager"]}) == ("aot_eager", "inductor")
    assert compile_backends({"compile": False}) == ()


@pytest.mark.parametrize("name, value, expected", [
    ("compile", "aot_eager", ["aot_eager"]),
    ("compile", "aot_eager, inductor", ["aot_eager", "inductor"]),
    ("compile", ["inductor", "inductor"], ["inductor"]),
    ("compile", True, True),
    ("dtype", "none", None),
    ("dtype", "float16", "float16"),
    ("precision-factor", 3, 3.0),
])
def test_every_surface_normalises_an_option_alike(name, value, expected):
    assert run_option(name, value, "here") == expected


@pytest.mark.parametrize("name, value", [("compile", "tvm"), ("compile", []), ("compile", 1),
                                         ("dtype", "int8"), ("precision_factor", 0.5),
                                         ("precision_factor", True), ("precision_factor", float("nan"))])
def test_a_bad_option_is_an_error_naming_where_it_came_from(name, value):
    with pytest.raises(ConfigError, match="^--somewhere: "):
        run_option(name, value, "--somewhere")


def test_the_options_are_part_of_the_results_cache_key(tmp_path: Path):
    path = tmp_path / "ops.py"
    path.write_text(SOURCE)
    [target] = [t for t in find_targets(SOURCE) if t.qualname == "Double"]

    def key(**options) -> str:
        return plan(target, path, SOURCE, tmp_path, options=layered(options) or None).key

    plain = key()
    assert key(compile=False, dtype=None) == plain  # asks for nothing: a plain run's result serves
    keys = {plain, key(compile=["aot_eager"]), key(compile=["inductor"]), key(dtype="bfloat16"),
            key(dtype="float16"), key(dtype="bfloat16", precision_factor=3.0)}
    assert len(keys) == 6
