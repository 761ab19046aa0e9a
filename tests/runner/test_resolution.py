"""A forward that computes in float32 inside, an optional scale checked at a value of its own, and
what a run says while it is still looking (fixtures/float32_inside.py, run for real in the worker)."""
import ast
import textwrap

import pytest
import torch

from _runner_util import check, run_class
from gradlint.worker import directional, resolution
from gradlint.worker.inputs.param_usage import none_gradient_positions, optional_factors

FILE = "float32_inside.py"


async def run(client, qualname):
    return await run_class(client, FILE, qualname)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_float32_forward_is_checked_at_a_step_float32_resolves(client):
    # at gradcheck's eps=1e-6 its finite differences are float32 rounding: a right backward was ✗
    # "not differentiable at the test point ... at a kink" (srf-attention's Attention, held-out 4)
    r = await run(client, "Float32Attention")
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    assert r["proof"]["inputs"] == ["q", "k", "v"]
    assert r["notes"][0].startswith("forward computes in float32 inside"), r["notes"]
    options = check(r, "gradcheck")["details"]
    assert options["eps"] > 1e-4 and options["rtol"] == resolution.RTOL


@pytest.mark.asyncio(loop_scope="module")
async def test_a_wrong_backward_of_a_float32_forward_is_still_wrong(client):
    r = await run(client, "Float32AttentionHalved")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert "0.5 × numerical" in r["summary"], r["summary"]


@pytest.mark.asyncio(loop_scope="module")
async def test_an_optional_scale_is_checked_at_a_value_of_its_own(client):
    # `if sm_scale is None: sm_scale = d ** -0.5` and `... * sm_scale`: a backward that recomputes
    # the default is right only where no scale is passed
    r = await run(client, "ScaledAttentionDefaultInBackward")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert r["summary"].startswith("✗ in mode sm_scale=0.3"), r["summary"]
    r = await run(client, "ScaledAttention")
    assert r["status"] in ("pass", "warning") and r["proof"]["inputs"] == ["q", "k", "v"], r["summary"]
    assert {"mode": {"sm_scale": "0.3"}, "status": "pass"} in r["modes"], r["modes"]


def test_output_grain_reads_the_grid_forward_returns():
    class Subject:  # the part of worker.subject.Subject output_grain reads
        def __init__(self, fn, *inputs):
            self.fn, self.inputs = fn, inputs
            self.grad_pos = list(range(len(inputs)))
            self.diff_out = []

        def fresh(self):
            return tuple(t.detach().clone().requires_grad_() for t in self.inputs)

        def call(self, inputs):
            return self.fn(*inputs)

    x = torch.randn(6, 5, dtype=torch.float64)
    assert resolution.output_grain(Subject(lambda t: torch.tanh(t), x)) is None
    assert resolution.output_grain(Subject(lambda t: torch.tanh(t.float()).double(), x)) == "float32"
    assert resolution.output_grain(Subject(lambda t: torch.tanh(t.to(torch.bfloat16)).double(), x)) == "bfloat16"
    # inputs already on float32's grid (a caller's float32 tensors, promoted) are nudged off it first
    x32 = x.float().double()
    assert resolution.output_grain(Subject(lambda t: t * 3.0, x32)) is None
    # integers say nothing about a grid
    assert resolution.output_grain(Subject(lambda t: t.round(), x)) is None


def _tree(source):
    return ast.parse(textwrap.dedent(source))


def test_a_returned_call_plus_nones_has_unknown_positions():
    # `return grads + (None,)`: the call is a tuple of unknown length, not one gradient (it made
    # position 1 look like a None gradient, and synthesis failed on every draw)
    class Concatenated(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad):
            return ctx.helper(grad) + (None,)

    class Spelled(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad):
            return (grad,) + (None,) * 2

    assert none_gradient_positions(Concatenated.backward) == (set(), None)
    assert none_gradient_positions(Spelled.backward) == ({1, 2}, 3)


def test_optional_factors_need_a_none_default_and_a_product():
    tree = _tree("""
        def forward(ctx, q, k, sm_scale=None, eps=None, bias=None):
            if sm_scale is None:
                sm_scale = q.shape[-1] ** -0.5
            if eps is None:
                eps = 1e-6
            if bias is None:
                return q
            return (q @ k) * sm_scale + eps + bias
    """)
    assert optional_factors(tree, ["ctx", "q", "k", "sm_scale", "eps", "bias"]) == {"sm_scale"}


def test_the_directional_probe_extrapolates_the_step_before_it_blames_backward():
    # forward curves so sharply that the probe's central difference is off by more than atol at its
    # step; the step halved and extrapolated agrees with the right backward, and not with a wrong one
    class Reporter:
        @staticmethod
        def location_for(where):
            return None

    class Opts:
        opts = {"atol": 1e-5, "rtol": 1e-3, "eps": 1e-3, "seed": 0}
        in_names = ["x"]
        reporter = Reporter

    def spec(fn):
        x = torch.zeros(64, dtype=torch.float64)
        return {"fn": fn, "fresh": lambda: (x.clone().requires_grad_(),), "in_positions": [0],
                "out_positions": [0], "in_names": ["x"], "out_names": ["output 0"]}

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.exp(100 * x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * 100 * torch.exp(100 * x) * grad

    assert directional.probe(Opts, spec(lambda x: torch.exp(100 * x))) is None
    failed = directional.probe(Opts, spec(Doubled.apply))
    assert failed is not None and "2 × numerical" in failed["message"], failed


@pytest.mark.asyncio(loop_scope="module")
async def test_a_forward_noisy_at_the_step_is_checked_at_a_step_for_its_noise(client):
    # a bisection to 1e-7 is piecewise constant at gradcheck's step of 1e-6: a right backward was ✗
    # (diffcb's root finder, exact-snn-nn's spike times: held-out 5's three false alarms)
    r = await run_class(client, "solver_noise.py", "CubicRoot")
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    assert r["notes"][0].startswith("forward's output is noisy at gradcheck's step"), r["notes"]
    assert r["coarser_step"]["grain"] == "noise" and r["coarser_step"]["to"]["rtol"] == resolution.NOISY_RTOL
    r = await run_class(client, "solver_noise.py", "CubicRootDoubled")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient") and "2 × numerical" in r["summary"], r["summary"]


def test_a_cast_at_the_call_site_says_the_kind(tmp_path, monkeypatch):
    # `_SpectralMap.apply(M, "pow", float(t))`: `arg` is a number, not a tensor; synthesized as a
    # tensor, the mode name='pow' found "backward returns None for `arg`" (egnlib, held-out 4)
    import importlib
    import sys

    from gradlint.worker.inputs.callers import values_from_callers

    (tmp_path / "spectral_mod.py").write_text(textwrap.dedent("""
        import torch

        class Spectral(torch.autograd.Function):
            @staticmethod
            def forward(ctx, m, name, arg):
                return m

            @staticmethod
            def backward(ctx, grad):
                return grad, None, None

        def powm(m, t):
            return Spectral.apply(m, "pow", float(t))

        def reeig(m, floor=1e-4):
            return Spectral.apply(m, "rect", float(floor))

        def counted(m, n=3):
            return Spectral.apply(m, "n", int(n))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("spectral_mod")
    try:
        found = values_from_callers(module.Spectral.apply, module.Spectral)
    finally:
        sys.modules.pop("spectral_mod", None)
    assert found["arg"] == [1e-4, 3] and isinstance(found["arg"][0], float), found
    assert found["name"] == ["pow", "rect", "n"]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_block_size_is_checked_small_where_blocks_meet(client):
    # the callers pass 1024: one block at any input a check can afford; a block size of 2 runs the carry
    r = await run_class(client, "block_sizes.py", "BlockedCumsumWithoutCarry")
    assert r["status"] == "fail", r["summary"]
    assert r["summary"].startswith("✗ in mode block_size=2: "), r["summary"]
    r = await run_class(client, "block_sizes.py", "BlockedCumsum")
    assert r["status"] == "pass", r["summary"]
    assert [m["mode"] for m in r["modes"][1:]] == [{"block_size": "2"}, {"block_size": "1"}], r["modes"]
