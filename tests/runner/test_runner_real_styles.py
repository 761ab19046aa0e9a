"""Real-code styles, run with no declarations: one test per cause found on published packages.

The Functions live in fixtures/real_styles.py; each is correct unless its docstring says WRONG.
"""
import pytest

from _runner_util import assert_valid, check, fn_class
from gradlint.runner.plans import plan
from gradlint.runner.targets import find_targets

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "real_styles.py"


async def run(client, request):
    return assert_valid(await client.run(request, timeout=120))


def value(result, name):
    return next(i for i in result["inputs"] if i["name"] == name)


# --- 1. non-tensor parameters are not made tensors ------------------------------------


async def test_dim_without_default_is_an_int(client):
    r = await run(client, fn_class(FILE, "SoftmaxDim"))
    assert r["status"] == "pass", r["summary"]
    assert value(r, "dim")["kind"] == "value" and value(r, "dim")["repr"] == "-1"
    assert value(r, "x")["shape"] == [3, 4]  # 2-D with unequal sizes: dim=0 and dim=-1 differ


async def test_string_flag_count_and_eps_parameters(client):
    r = await run(client, fn_class(FILE, "Reduce"))
    assert r["status"] == "pass", r["summary"]
    assert [value(r, n)["repr"] for n in ("mode", "normalize", "n_iter", "eps")] == ["'sum'", "False", "50", "1e-06"]
    assert "mode: str (used as str in forward)" in r["synthesis"]["params"]


async def test_index_target_is_an_int64_index(client):
    r = await run(client, fn_class(FILE, "NllLoss"))
    assert r["status"] in ("pass", "warning"), r["summary"]
    target = value(r, "target")
    assert target["dtype"] == "int64" and target["requires_grad"] is False
    assert check(r, "gradcheck")["status"] == "pass"


async def test_a_callable_parameter_is_a_one_line_skip(client):
    r = await run(client, fn_class(FILE, "Project"))
    assert r["status"] == "no_inputs"
    assert r["summary"] == ("cannot make a value for `fn` (it is called in forward); declare inputs with "
                            "`# gradlint: inputs=...`")


# --- 2. values inside the function's domain; vacuous checks are inconclusive ------------


async def test_log_gets_positive_inputs_not_a_kink_verdict(client):
    r = await run(client, fn_class(FILE, "SafeLog"))
    assert r["status"] == "pass", r["summary"]
    # read from the code before synthesis: torch.log(x) takes positive values
    assert r["synthesis"]["domains"] == {"x": "positive"}, r["synthesis"]


async def test_one_hot_projection_is_checked_where_it_is_not_flat(client):
    r = await run(client, fn_class(FILE, "SharpSparsemax"))
    assert r["status"] == "pass", r["summary"]
    assert r["synthesis"]["domain"] == "small"
    assert check(r, "sensitivity")["details"]["responds_to"] == ["x"]


async def test_a_flat_function_is_inconclusive_never_a_pass(client):
    r = await run(client, fn_class(FILE, "Flat"))
    assert (r["status"], r["verdict"]) == ("inconclusive", "vacuous")
    assert r["summary"].startswith("⚠ inconclusive: no output moves when the inputs move")
    assert check(r, "gradcheck")["status"] == "pass"


async def test_two_draws_and_a_wrong_reduction_dim(client):
    ok = await run(client, fn_class(FILE, "SoftmaxDim"))
    assert [c["name"] for c in ok["checks"] if c["name"].startswith("gradcheck")] == [
        "gradcheck", "gradcheck (draw 2)", "gradcheck (ties)"]  # and a draw with ties (issue 23)
    assert ok["summary"].startswith("✓ gradients match: gradcheck ×2 draws")
    wrong = await run(client, fn_class(FILE, "WrongDimSoftmax"))
    assert (wrong["status"], wrong["verdict"]) == ("fail", "wrong_gradient")
    pattern = check(wrong, "gradcheck")["details"]["pattern"]
    assert pattern["kind"] == "wrong_dim" and pattern["dims"] == [-2, -1], pattern
    assert "a reduction over the wrong dim (backward couples elements along dim -2, forward along dim -1)" \
        in wrong["summary"]


# --- 5. second order is a separate warning ----------------------------------------------


async def test_second_order_is_a_warning_unless_strict(client):
    r = await run(client, fn_class(FILE, "NotTwice"))
    assert (r["status"], r["verdict"], r["failed_check"]) == ("warning", "not_twice_differentiable", "gradgradcheck")
    assert "mark backward @once_differentiable" in r["message"]
    strict = await run(client, fn_class(FILE, "NotTwice", options={"strict": True}))
    assert strict["status"] == "fail"


# --- 6. gradlint's own machinery failing is not the user's exception ----------------------


SPARSE = ("(torch.randn(3, 4, dtype=torch.float64).to_sparse().requires_grad_(), "
          "torch.randn(4, 2, dtype=torch.float64, requires_grad=True))")


async def test_sparse_complex_integer_and_non_contiguous_inputs(client, tmp_path):
    module = tmp_path / "odd_inputs.py"
    module.write_text(
        "import torch\n\n"
        "def spmm(a, b):\n    return torch.sparse.mm(a, b)\n\n"
        "def pick(x, idx):\n    return x[idx] * 2\n\n"
        "def cexp(z):\n    return z.exp()\n\n"
        "def tsum(x):\n    return (x * x).sum(0)\n")
    cases = {
        "spmm": SPARSE,
        "pick": "(torch.randn(4, dtype=torch.float64, requires_grad=True), torch.tensor([0, 2]))",
        "cexp": "(torch.randn(3, dtype=torch.complex128, requires_grad=True),)",
        "tsum": "(torch.randn(4, 3, dtype=torch.float64).t().requires_grad_(),)",
    }
    for name, source in cases.items():
        request = {"module": {"path": str(module)}, "sys_path": [str(tmp_path)],
                   "target": {"kind": "callable", "qualname": name},
                   "inputs": {"kind": "expression", "source": source}}
        r = await run(client, request)
        assert r["status"] == "pass", (name, r["summary"], r["notes"])
        assert not any("Could not run" in (c["message"] or "") for c in r["checks"] if c["status"] == "error")


async def test_a_check_that_gradlint_cannot_run_is_skipped_and_the_others_run(client, tmp_path):
    # a forward that returns a sparse tensor: comparing outputs densely is gradlint's job,
    # and whatever fails inside gradlint's own checks is reported as gradlint's
    module = tmp_path / "sparse_out.py"
    module.write_text("import torch\n\ndef tosparse(x):\n    return (x * 2).to_sparse()\n")
    request = {"module": {"path": str(module)}, "sys_path": [str(tmp_path)],
               "target": {"kind": "callable", "qualname": "tosparse"},
               "inputs": {"kind": "expression",
                          "source": "(torch.randn(3, 4, dtype=torch.float64, requires_grad=True),)"}}
    r = await run(client, request)
    for c in r["checks"]:
        if c["status"] == "skipped" and (c["message"] or "").startswith("gradlint could not run this check"):
            assert "internal_error" in c["details"]
    assert r["exception"] is None or r["exception"]["traceback"], r["summary"]


# --- 7. abstract bases, and the mismatch patterns -----------------------------------------


async def test_subclass_of_an_abstract_base_runs(client):
    r = await run(client, fn_class(FILE, "Double"))
    assert r["status"] == "pass", r["summary"]


@pytest.mark.parametrize("qualname, kind, text", [
    ("Tripled", "scale", "analytical = 0.333 × numerical (a constant factor)"),
    ("Negated", "sign", "wrong sign (analytical = -numerical)"),
    ("Detached", "zero", "analytical gradient is zero (a detached or missing term)"),
])
async def test_mismatch_patterns(client, qualname, kind, text):
    r = await run(client, fn_class(FILE, qualname))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    assert check(r, "gradcheck")["details"]["pattern"]["kind"] == kind
    assert r["summary"].startswith("✗ Jacobian mismatch for x, output 0: " + text), r["summary"]


async def test_transposed_gradient_of_a_square_input(client):
    square = ("(torch.randn(3, 3, dtype=torch.float64, requires_grad=True), "
              "torch.randn(3, 2, dtype=torch.float64, requires_grad=True))")
    r = await run(client, fn_class(FILE, "Transposed", inputs={"kind": "expression", "source": square}))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    assert check(r, "gradcheck")["details"]["pattern"]["kind"] == "transposed"
    assert "the gradient is transposed" in r["summary"]


@pytest.mark.parametrize("qualname, kind, text", [
    ("GradReverse", "hook", "forward returns x unchanged and backward changes its gradient"),
    ("StraightThroughRound", "surrogate", "output 0 is piecewise constant here"),
])
async def test_gradient_hooks_and_surrogates_are_inconclusive_not_wrong(client, qualname, kind, text):
    r = await run(client, fn_class(FILE, qualname))
    assert (r["status"], r["verdict"]) == ("inconclusive", "surrogate_gradient"), r["summary"]
    assert check(r, "gradcheck")["details"]["surrogate"] == kind
    assert text in r["summary"], r["summary"]


@pytest.mark.parametrize("qualname", ["ClampTwice", "ReluNoMask"])
async def test_identity_here_or_flat_somewhere_is_still_a_wrong_gradient(client, qualname):
    r = await run(client, fn_class(FILE, qualname))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]


async def test_shapes_that_backward_rejects_are_not_the_inputs(client):
    # forward takes a vector `matrix` (matmul broadcasts); backward does not: the search goes on
    # to shapes the whole Function takes (then to a symmetric matrix, which backward assumes)
    r = await run(client, fn_class(FILE, "QuadFormDiagonal"))
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert len(value(r, "matrix")["shape"]) == 2


# --- 3. parametrized test calls ---------------------------------------------------------


async def test_parametrized_call_site_is_called_with_its_cases(client, tmp_path):
    test = tmp_path / "test_param.py"
    test.write_text(
        "import pytest\nimport torch\nfrom torch.autograd import gradcheck\n\n"
        "SCALES = [0.0, 2.0]\n\n"
        "@pytest.fixture\ndef x():\n    return torch.randn(3, 4, dtype=torch.float64, requires_grad=True)\n\n"
        "@pytest.mark.parametrize('scale', SCALES)\n"
        "@pytest.mark.parametrize('dim, keep', [pytest.param(0, True, id='d0'), (1, False)])\n"
        "def test_sum(x, scale, dim, keep):\n"
        "    assert gradcheck(lambda t: (scale * t).sum(dim, keepdim=keep), (x,))\n")
    # the static side finds the cases (as source text), the worker evaluates them
    [target] = find_targets(test.read_text())
    assert target.parametrize == ((("scale",), "SCALES"),
                                  (("dim", "keep"), "[pytest.param(0, True, id='d0'), (1, False)]"))
    r = await run(client, plan(target, test, test.read_text(), tmp_path).request)
    assert r["status"] == "pass", (r["summary"], r["notes"])
    # scale=0.0 makes the check vacuous: the next case is checked instead
    assert r["target"]["case"] == {"scale": "2.0", "dim": "0", "keep": "True"}
    assert any("proves nothing" in note for note in r["notes"])


async def test_code_that_needs_a_gpu_cannot_run_here_in_one_line(client):
    r = await run(client, fn_class(FILE, "NeedsCuda"))
    assert r["status"] == "error" and r["verdict"] == "missing_dependency", r["summary"]
    assert r["summary"].startswith("✗ cannot run here: the code needs a CUDA device (AssertionError in forward")


async def test_straight_through_and_sparse_mixer_estimators_are_inconclusive(client):
    r = await run(client, fn_class(FILE, "TernaryQuant"))  # round() in forward, grad.clone() in backward
    assert r["status"] == "inconclusive" and r["verdict"] == "surrogate_gradient", r["summary"]
    assert "a straight-through estimator" in r["summary"]
    r = await run(client, fn_class(FILE, "SparseMixer"))  # forward never reads `scores`
    assert r["status"] == "inconclusive" and r["verdict"] == "surrogate_gradient", r["summary"]
    assert "scores" in r["summary"]  # "no output depends on scores" / "piecewise constant … for scores"
    experts = value(r, "selected_experts")  # saved for backward, an index there
    assert experts["dtype"] == "int64" and experts["requires_grad"] is False


async def test_what_backward_does_with_a_kept_parameter_says_what_it_is(client):
    r = await run(client, fn_class(FILE, "KeepsAHandle"))  # ctx.handle.record(grad): an object
    assert r["status"] == "no_inputs", r["summary"]
    assert r["summary"].startswith("cannot make a value for `handle` (forward uses attributes")


async def test_code_that_needs_a_process_group_is_checked_in_a_group_of_one(client):
    # it was "✗ cannot run here: the code needs torch.distributed initialised (a process group)"
    r = await run(client, fn_class(FILE, "NeedsProcessGroup"))
    assert r["status"] == "pass", r["summary"]
    assert r["notes"][0].startswith("checked in a torch.distributed process group of one"), r["notes"]


async def test_a_failure_only_at_broadcast_shapes_is_inconclusive_with_both_shapes(client):
    # synthesis finds all-(4, 4) inputs (a batch of vectors broadcast); backward handles one vector:
    # gradcheck fails there with no clear pattern and passes with `inducing_values` un-batched
    r = await run(client, fn_class(FILE, "PredictiveUpdates"))
    assert r["status"] == "inconclusive" and r["verdict"] == "shape_dependent", r["summary"]
    assert r["summary"].startswith("⚠ inconclusive: gradcheck fails for synthesized inputs shaped (4×4, 4×4, 4×4, 4×4) and "
                                   "passes for (4×4, 4×4, 4×4, 4)")
    other = check(r, "gradcheck (other shapes)")
    assert other["status"] == "pass" and other["details"]["shapes"][-1] == [4]


async def test_large_inputs_where_fast_gradcheck_cancels_are_still_caught(client):
    # 64×512: too large for a full Jacobian, so only fast gradcheck runs, and its non-negative
    # probes cancel on a difference filter (torch 2.13's fast gradcheck passes this ×2 backward)
    big = {"kind": "expression", "source": "torch.randn(64, 512, dtype=torch.float64, requires_grad=True)"}
    r = await run(client, fn_class(FILE, "WrongDifference", inputs=big))
    assert r["status"] == "fail" and r["verdict"] == "wrong_gradient", r["summary"]
    assert "along random directions: analytical = 2 × numerical (a constant factor)" in r["summary"]
    assert [m["mode"] for m in check(r, "gradcheck")["details"]["modes"]] == ["fast"]
