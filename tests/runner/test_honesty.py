"""Issue 23: a ✓ is a proof. One or more Functions of our own per mechanism (fixtures/honesty.py),
run for real in the worker with no declarations."""
import pytest

from _runner_util import assert_valid, check, fixture, fn_class

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "honesty.py"


async def run(client, qualname, file=FILE):
    return assert_valid(await client.run(fn_class(file, qualname), timeout=240))


def marker_class_line(name):
    return next(n for n, text in enumerate(open(fixture(FILE)), 1) if text.startswith("class %s(" % name))


def names(result, prefix="gradcheck"):
    return [c["name"] for c in result["checks"] if c["name"].startswith(prefix)]


# --- 1. ✓ only for a proof -----------------------------------------------------------------


async def test_a_dropped_gradient_is_checked_not_trusted(client):
    r = await run(client, "DropsWeight")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert r["summary"].startswith("✗ backward returns None for `w`, but the output depends on `w`"), r["summary"]
    assert check(r, "gradcheck")["details"]["pattern"]["kind"] == "dropped"
    w = next(i for i in r["inputs"] if i["name"] == "w")
    assert w["requires_grad"] is True  # synthesized: every floating tensor input is differentiated


async def test_a_none_the_code_declares_is_named_not_checked(client):
    r = await run(client, "RefusesData")  # forward raises when x1 or x2 require grad
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert r["proof"]["inputs"] == ["scale"]
    assert [u["input"] for u in r["proof"]["unchecked"]] == ["x1", "x2"]
    assert "not checked: x1 (forward refuses it with requires_grad" in r["summary"], r["summary"]


async def test_a_jacobian_checked_only_where_it_is_zero_is_not_a_proof(client):
    # near 0 nothing moves with x; the run tries other inputs (far ones) and finds the bug there
    r = await run(client, "FarThreshold")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert r["failed_check"].startswith("gradcheck (other inputs"), r["failed_check"]
    assert "analytical = 5 × numerical" in r["summary"]


async def test_an_input_nothing_depends_on_has_its_zero_gradient_checked(client):
    r = await run(client, "RootOf")  # the root does not depend on the start value y0
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert r["proof"]["inputs"] == ["a"] and r["proof"]["zero"] == ["y0"], r["proof"]
    assert "y0: no output depends on it" in r["summary"], r["summary"]


async def test_a_gradcheck_that_never_ran_is_inconclusive_never_a_tick(monkeypatch):
    """A gradcheck that raises inside torch (no frame of the user's code) is skipped by the worker
    with the reason; with nothing compared the run is inconclusive, never "✓ … no checks"."""
    import functools

    import torch

    import gradlint
    from gradlint.worker import torch_setup

    torch_setup.remember_real_gradcheck()
    # a C function called with arguments it rejects: raises with no Python frame at all
    broken = functools.partial(torch.matmul, torch.ones(2), torch.ones(3))
    monkeypatch.setitem(torch_setup.REAL, "gradcheck", broken)
    monkeypatch.setitem(torch_setup.REAL, "gradgradcheck", broken)

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    report = gradlint.check_gradients(Square.apply, x)
    result = report.result
    assert (result.status, result.verdict) == ("inconclusive", "not_checked"), result.summary
    assert result.summary.startswith("⚠ inconclusive: gradcheck did not run: gradlint could not run this check")


# --- 2. inputs that fit -----------------------------------------------------------------------


async def test_a_grid_that_searchsorted_reads_is_made_sorted(client):
    r = await run(client, "GridInterp")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert any("xp: sorted along its last dim (searchsorted" in c for c in r["synthesis"]["constraints"])
    assert set(r["proof"]["inputs"]) == {"x", "xp", "fp"}


async def test_pairs_in_the_last_dim_get_a_last_dim_of_two(client):
    r = await run(client, "ComplexPairs")  # assert x.shape[-1] == 2; x[..., 0], x[..., 1]
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert r["inputs"][0]["shape"][-1] == 2
    assert r["synthesis"]["attempts"] == 1  # the constrained shape is the first one tried


async def test_a_sparse_csr_input_is_made_and_checked_through_its_values(client):
    r = await run(client, "SparseRows")
    assert r["status"] in ("pass", "warning"), r["summary"]
    a = r["inputs"][0]
    assert a["layout"] == "sparse_csr" and len(a["shape"]) == 2 and a["checked"].endswith("stored values")
    assert any("checked through its stored (non-zero) values" in n for n in r["notes"])


async def test_a_sparse_gradient_built_from_values_of_the_wrong_count_raises_where_it_is_built(client):
    # sparse tensors are checked where they are built (torch.sparse.check_sparse_tensor_invariants):
    # unchecked, a gradient like this one can crash torch's engine later with SIGSEGV and no line
    r = await run(client, "SparseRowsWrongDim")
    assert (r["status"], r["verdict"]) == ("error", "exception"), r["summary"]
    assert r["summary"].startswith("✗ RuntimeError in backward: "), r["summary"]
    line = next(n for n, text in enumerate(open(fixture("honesty.py")), 1)
                if "grad_A = torch.sparse_csr_tensor" in text and n > marker_class_line("SparseRowsWrongDim"))
    assert (r["location"]["function"], r["location"]["line"]) == ("backward", line), r["location"]


async def test_a_tests_fixtures_from_its_conftest_give_the_inputs(client):
    # `settings` is an object only the project's conftest.py fixtures build (parametrized `scale`);
    # the test is also parametrized by a decorator
    r = await run(client, "Rescale")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert "settings_proj/test_rescale.py" in r["synthesis"]["caller"]
    assert r["inputs"][0]["requires_grad"] is True


async def test_a_case_from_the_projects_own_parametrize_decorator_gives_the_inputs(client):
    # `opts` is a dict only the project's test builds, through a decorator of its own making that
    # returns pytest.mark.parametrize (read from the imported test's marks); forward pops from it,
    # so each of gradcheck's calls gets its own copy
    r = await run(client, "PopsOptions")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert "options_proj/test_options.py" in r["synthesis"]["caller"]
    assert r["proof"]["inputs"] == ["x"]


async def test_a_variadic_signature_takes_the_tests_values_and_keeps_what_one_argument_holds(client):
    # forward(ctx, fcn, x, *params): how many params only the project's test says; fcn holds the
    # very tensor passed as params[0], and backward differentiates fcn's output with respect to it
    r = await run(client, "ApplyHeld")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert "options_proj/test_held.py" in r["synthesis"]["caller"]
    assert r["proof"]["inputs"] == ["x", "params[0]"]
    assert [c["status"] for c in r["checks"] if c["name"] == "gradcheck"] == ["pass"]


async def test_a_closure_over_a_tensor_passed_beside_it_holds_the_copy_gradcheck_moves(client):
    # forward(ctx, f, a, b, *phi) with f a lambda closing over phi[0] (a float32 tensor the run
    # promotes): backward differentiates f's output with respect to phi, so the copy of the lambda
    # each call gets must close over the copy passed. Before: "✗ RuntimeError in backward: ... not
    # have been used in the graph" (deepcopy returns a function itself)
    r = await run(client, "QuadratureHeld")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert "options_proj/test_held.py" in r["synthesis"]["caller"]
    assert r["proof"]["inputs"] == ["a", "b", "phi[0]"]


async def test_a_none_for_what_the_projects_own_caller_passes_as_a_constant_is_by_design(client):
    # synthesized inputs differentiate h too, and backward's None for it fails; the module that
    # applies it passes h from a buffer: its inputs decide, and the ✓ says h was not checked
    r = await run(client, "FilterBank")
    assert r["status"] == "pass", r["summary"]
    assert r["proof"]["inputs"] == ["x"]
    assert "h (the code that calls it passes its module's buffer self.h, a constant" in r["summary"]
    assert any("backward returns None for `h`, which the project may pass as a constant" in n
               for n in r["notes"]), r["notes"]


async def test_the_structure_of_the_projects_own_matrix_is_kept_when_checked(client):
    # the project's test passes a symmetric A; backward is the symmetric-convention gradient
    r = await run(client, "SymmetricEigenvalues")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert "options_proj/test_held.py" in r["synthesis"]["caller"]
    assert any("passes with A kept symmetric, as the project's own values are" in n for n in r["notes"]), r["notes"]


async def test_an_input_the_output_only_jumps_with_is_proved_by_its_zero_gradient(client):
    # Newton's method from y0: the sign of y0 picks the root; far from the first inputs the output
    # jumps, and is flat again where it lands: backward's None for y0 is right, the ✓ says so
    r = await run(client, "NewtonRoot")
    assert r["status"] == "pass", r["summary"]
    assert (r["proof"]["inputs"], r["proof"]["zero"]) == (["a"], ["y0"])
    assert "y0: no output depends on it" in r["summary"], r["summary"]


async def test_a_symmetric_input_keeps_its_structure_when_checked(client):
    # general square matrices fail (eigh reads one triangle); the structured retry checks A -> (A + Aᵀ)/2
    r = await run(client, "Eigenvalues")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert r["synthesis"]["domain"] in ("by_name", "symmetric", "spd")
    assert any("A symmetrized" in n for n in r["notes"]), r["notes"]
    assert [c["status"] for c in r["checks"] if c["name"] == "gradcheck (draw 2)"] == ["pass"]


# --- 3. every mode ----------------------------------------------------------------------------


async def test_each_mode_the_code_names_is_checked(client):
    r = await run(client, "Reduced")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert r["summary"].startswith("✗ in mode reduction='mean': "), r["summary"]
    assert [m["mode"] for m in r["modes"]][:2] == [{"reduction": "'sum'"}, {"reduction": "'mean'"}]


async def test_a_mode_the_inputs_do_not_fit_is_no_proof_of_a_wrong_gradient(client):
    # the project's test passes a lower-triangular sparse A (upper=False); in mode upper=True forward
    # reads the other triangle and ignores A's stored entries, where backward still gives a gradient:
    # the inputs do not fit the mode, which is named, not reported ✗
    r = await run(client, "SparseTriSolve")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert "trisolve_proj/test_trisolve.py" in r["synthesis"]["caller"]
    upper = check(r, "gradcheck (mode upper=True)")
    assert upper["status"] == "skipped" and upper["details"]["ignored_entries_only"] is True
    assert any("in mode upper=True at these inputs, only at entries of A no output moves with" in n
               for n in r["notes"]), r["notes"]


async def test_a_mode_gets_inputs_of_its_own_structure(client):
    # upper=False needs a lower-triangular A (the structured retry finds it), upper=True an upper one
    r = await run(client, "TriangularSolve")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert [m["mode"] for m in r["modes"]] == [{"upper": "False"}, {"upper": "True"}]
    assert check(r, "gradcheck (mode upper=True)")["details"]["structure"] == "triu"
    assert "modes upper=False, upper=True" in r["summary"], r["summary"]


# --- 4. draws that find bugs -------------------------------------------------------------------


async def test_ties_find_a_bug_random_values_miss(client):
    r = await run(client, "SortedSum")
    assert [c["status"] for c in r["checks"] if c["name"] in ("gradcheck", "gradcheck (draw 2)")] == ["pass", "pass"]
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert r["failed_check"] == "gradcheck (ties)" and r["summary"].startswith("✗ at inputs with ties: ")


async def test_a_finding_at_a_kink_is_named_not_a_failure(client):
    r = await run(client, "Larger")
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert check(r, "gradcheck (equal inputs)")["verdict"] == "non_differentiable_point"
    assert any(n.startswith("gradcheck (equal inputs): at equal inputs: not differentiable at the test point")
               for n in r["notes"]), r["notes"]


# --- 5. a verdict within the budget ------------------------------------------------------------


async def test_a_run_that_ends_while_localising_keeps_its_verdict(client):
    r = await run(client, "DiesWhileLocalised")
    assert (r["status"], r["verdict"]) == ("fail", "gradcheck_failed"), r["summary"]
    assert r["summary"].startswith("✗ gradcheck fails: Jacobian mismatch for output 0 with respect to input 0")
    assert r["exit"]["signal_name"] == "SIGKILL"
    assert "the run ended before this failure was analysed: torch's report only" in r["notes"]


async def test_no_early_verdict_when_an_argument_sets_a_solvers_tolerance(client):
    r = await run(client, "SolverDiesWhileLocalised")
    assert r["exit"]["signal_name"] == "SIGKILL", r["exit"]
    assert r["verdict"] != "gradcheck_failed", r["summary"]
    assert "the run ended before this failure was analysed: torch's report only" not in r["notes"]


# --- 6. surrogates and patterns ----------------------------------------------------------------


async def test_a_declared_straight_through_clamp_is_a_surrogate(client):
    r = await run(client, "ClampSte")
    assert (r["status"], r["verdict"]) == ("inconclusive", "surrogate_gradient"), r["summary"]
    assert check(r, "gradcheck")["details"]["surrogate"] == "straight_through"


async def test_a_straight_through_clamp_its_callers_declare_is_a_surrogate(client):
    # the Function's own docstrings are silent; the module using it says "with STE"
    r = await run(client, "ProgressiveClamp")
    assert (r["status"], r["verdict"]) == ("inconclusive", "surrogate_gradient"), r["summary"]
    assert check(r, "gradcheck")["details"]["surrogate"] == "straight_through"


async def test_the_same_clamp_nothing_declares_is_a_wrong_gradient(client):
    r = await run(client, "ScaledClampNoMask")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]


@pytest.mark.parametrize("qualname, kind, text", [
    ("SoftmaxOverRows", "wrong_dim", "a reduction over the wrong dim (backward couples elements along dim -2, "
                                     "forward along dim -1)"),
    ("ScaledByRowSum", "missing_term", "a missing term: backward has no term through the other elements along "
                                       "dim -1"),
])
async def test_a_wrong_dim_and_a_missing_term_are_named(client, qualname, kind, text):
    r = await run(client, qualname)
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert check(r, "gradcheck")["details"]["pattern"]["kind"] == kind
    assert text in r["summary"], r["summary"]


# --- 7. one report per bug -----------------------------------------------------------------------


async def test_a_gradient_count_error_names_the_input_without_a_gradient(client):
    r = await run(client, "ShortReturn")
    assert (r["status"], r["verdict"]) == ("error", "exception"), r["summary"]
    assert r["summary"].startswith("✗ backward returns 1 gradient but forward takes 2 inputs: no gradient for `w`"), \
        r["summary"]
    assert r["location"]["reason"] in ("backward", "raised here")


async def test_a_backward_that_writes_into_its_gradient_is_named(client):
    r = await run(client, "OverwritesGrad")
    assert (r["status"], r["verdict"]) == ("fail", "grad_output_mutated"), r["summary"]
    assert r["summary"] == "✗ backward modifies its incoming gradient (grad_output of output 0) in place"


# --- 2. inputs that fit: made-up inputs forward rejects are not the code's failure ------------


async def test_forward_raising_on_made_up_inputs_is_inconclusive_not_a_failure(client):
    r = await run(client, "OnTheSimplex")
    assert (r["status"], r["verdict"]) == ("inconclusive", "inputs_unfit"), r["summary"]
    assert r["summary"] == ("⚠ inconclusive: forward raised on the inputs gradlint made up (ValueError in "
                            "forward: rows must sum to one); no gradient was checked")
    assert "# gradlint: inputs=" in r["message"]
    assert r["exception"]["type"] == "ValueError"  # where forward raised is still shown
    assert "proof" not in r or not r["proof"]["inputs"]


async def test_a_forward_that_raises_on_any_inputs_is_still_a_failure(client):
    r = await run(client, "MisspeltForward")
    assert (r["status"], r["verdict"]) == ("error", "exception"), r["summary"]
    assert r["summary"].startswith("✗ NameError in forward"), r["summary"]


async def test_an_error_in_code_backward_calls_is_named_for_backward(client):
    # the innermost frame is a Module's `forward`; the Function's own method on the stack is backward
    r = await run(client, "BackwardRunsAModule")
    assert (r["status"], r["verdict"]) == ("error", "exception"), r["summary"]
    assert r["summary"].startswith("✗ TypeError in backward: "), r["summary"]
    assert r["location"]["function"] == "forward", r["location"]  # where it was raised: the Module's


# --- approximations: iterative forwards and finite differences ------------------------------


async def test_an_iterative_approximation_is_checked_with_more_iterations(client):
    # at n=20 bisection steps the root is resolved to ~2^-20 of the bracket: gradcheck fails for y,
    # and w (which the root does not depend on) moves the iterate; at more steps both are right
    r = await run(client, "BisectedRoot")
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    assert r["refined"] == {"n": {"from": "20", "to": "56"}}
    assert (r["proof"]["inputs"], r["proof"]["zero"]) == (["y"], ["w"]), r["proof"]
    assert "at n=56, not 20: an iterative approximation" in r["summary"], r["summary"]
    assert any(n.startswith("forward is an iterative approximation: at n=20 gradcheck fails") for n in r["notes"])


async def test_a_wrong_backward_of_an_iterative_forward_fails_at_every_setting(client):
    r = await run(client, "BisectedRootWrong")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert any("gradcheck fails with n=56 too" in n for n in r["notes"]), r["notes"]
    assert "w:" not in r["summary"]  # reported at n=56, where w no longer moves the iterate


async def test_a_step_too_coarse_for_the_curvature_is_retried_finer(client):
    r = await run(client, "HighFrequency")  # sin(1e5 x)/1e5: the 1e-6 step's truncation error is 0.17%
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    assert r["finer_step"] == {"from": 1e-6, "to": 1e-7}
    assert "eps=1e-07" in r["summary"], r["summary"]


async def test_a_wrong_gradient_near_one_fails_at_the_finer_step_too(client):
    r = await run(client, "HighFrequencyWrong")  # 5% too large: no step makes that agree
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert "analytical = 1.05 × numerical" in r["summary"], r["summary"]
    assert not r.get("finer_step")


async def test_a_clamp_guarding_a_singularity_draws_inputs_inside_it(client):
    # x.clamp(-1 + 1e-15, 1 - 1e-15): outside, forward is flat and backward is 1/(1 - (1-1e-15)²)
    # ≈ 5e14; the Function is not defined there, so only its domain is checked
    r = await run(client, "GuardedArtanh")
    assert r["summary"].startswith(("✓", "⚠ first-order gradients match")), r["summary"]
    x = next(i for i in r["inputs"] if i["name"] == "x")
    assert x["source"] == "synthesized"
    assert any("guarding a singularity" in c for c in r["synthesis"]["constraints"]), r["synthesis"]


async def test_a_wrong_backward_inside_a_guarded_domain_fails(client):
    r = await run(client, "GuardedArtanhWrong")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]


async def test_a_one_sided_guard_draws_above_it(client):
    r = await run(client, "GuardedArcosh")  # clamp(min=1.0 + 1e-15): arcosh is defined above 1
    assert r["summary"].startswith(("✓", "⚠ first-order gradients match")), r["summary"]


async def test_backward_rejecting_every_made_up_shape_is_inputs_unfit_not_a_failure(client):
    r = await run(client, "PassThroughPoses")  # poses[:, :, :3, :3]: no shape tried fits
    assert (r["status"], r["verdict"]) == ("inconclusive", "inputs_unfit"), r["summary"]
    assert "IndexError" in r["summary"] and "no gradient was checked" in r["summary"], r["summary"]
    assert r["synthesis"]["backward_rejected"], r["synthesis"]


async def test_a_flat_region_at_made_up_values_of_the_projects_shapes_too_stays_reported(client):
    # made-up x (|x| < 2) is where forward is flat and backward (no mask) is not zero; the project's
    # test passes x > 10, where backward is right. Made-up values at the test's shape are flat too: the
    # flat region is the Function's own, and a ✓ from the test's inputs alone would hide the bug
    r = assert_valid(await client.run(fn_class("flat_proj/hinge.py", "ShiftedHinge"), timeout=240))
    assert (r["status"], r["verdict"]) == ("inconclusive", "surrogate_gradient"), r["summary"]
    assert not r["summary"].startswith("✓"), r["summary"]


async def test_a_flat_region_made_by_made_up_shapes_is_decided_on_the_projects_inputs(client):
    # a cost made up as a vector is absorbed by the column normalisation (no output moves with C,
    # backward written for a matrix is not zero): the project's test passes a matrix, where made-up
    # values move the output too, so the test's inputs decide
    r = assert_valid(await client.run(fn_class("flat_proj/plan.py", "ColumnPlan"), timeout=240))
    assert r["summary"].startswith(("✓", "⚠ first-order gradients match")), r["summary"]
    assert "test_plan.py" in r["synthesis"]["caller"], r["synthesis"]
    assert any(n.startswith("synthesized inputs did not fit (no output moved with `C` on them)") for n in r["notes"])


# --- inputs from the examples in the project's docstrings ------------------------------------


async def test_inputs_come_from_a_docstring_example_when_nothing_else_gives_them(client):
    # *phi and a callable: nothing to synthesize; no test calls it; integrate()'s docstring shows
    # a use, run as a function's body so that its lambda closes over the tensor passed as phi
    r = assert_valid(await client.run(fn_class("documented_proj/quadrature.py", "Midpoint"), timeout=240))
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert r["summary"].startswith(("✓", "⚠ first-order gradients match")), r["summary"]
    assert r["synthesis"]["example"] == "quadrature.py:34 (the example in integrate's docstring)"
    assert r["proof"]["inputs"] == ["a", "b", "phi[0]"], r["proof"]


async def test_a_wrong_backward_is_caught_on_a_docstring_examples_inputs(client):
    r = assert_valid(await client.run(fn_class("documented_proj/quadrature.py", "MidpointWrong"), timeout=240))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert "wrong sign" in r["summary"], r["summary"]


async def test_a_buffer_of_the_calling_module_is_a_constant_even_when_nothing_requires_grad(client):
    # the only code that reaches Smooth is a test calling its module on a signal without
    # requires_grad: the taps it passes are `self.taps`, a registered buffer, so backward's None
    # for them is by design (it was a false ✗); a wrong gradient for the signal still fails
    r = assert_valid(await client.run(fn_class("buffer_proj/smoothing.py", "Smooth"), timeout=240))
    assert r["status"] == "pass", r["summary"]
    assert r["proof"]["inputs"] == ["x"]
    assert "taps (the code that calls it passes its module's buffer self.taps, a constant" in r["summary"]
    r = assert_valid(await client.run(fn_class("buffer_proj/smoothing.py", "SmoothDoubled"), timeout=240))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert "analytical = 2 × numerical" in r["summary"], r["summary"]


async def test_a_thin_wrappers_made_up_values_give_way_to_tests_and_edge_case_tests_to_a_later_one(client):
    # made-up inputs miss SteepPower's domain (nothing moves); its only caller hands its own made-up
    # tensors on unchanged (they miss it too: "vacuous" before), so the tests come first; the first
    # two are edge cases where the output is 0 whatever a is, passed over for the one inside
    r = assert_valid(await client.run(fn_class("edge_proj/powers.py", "SteepPower"), timeout=240))
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert r["proof"]["inputs"] == ["x", "a"] and r["proof"]["zero"] == [], r["proof"]
    assert "test_powers.py:14 (test_inside_the_interval)" in r["notes"][0], r["notes"]


async def test_a_callers_made_up_matrix_is_made_structured_when_the_backward_assumes_it(client):
    # the only inputs come from expm_sym, run on a made-up general square matrix: eigh reads one
    # triangle and backward follows the symmetric convention, so gradcheck failed (a false ✗);
    # the caller is run again on structured (symmetric) matrices, kept symmetric in the check
    r = assert_valid(await client.run(fn_class("spd_proj/spectral.py", "Spectral"), timeout=240))
    assert r["status"] in ("pass", "warning") and r["proof"]["inputs"] == ["a"], r["summary"]
    assert any(n.startswith("gradcheck fails for general square matrices given to spectral.py:")
               and " ones (a symmetrized): the backward assumes that structure" in n for n in r["notes"]), r["notes"]
    r = assert_valid(await client.run(fn_class("spd_proj/spectral.py", "SpectralDoubled"), timeout=240))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]


async def test_a_function_on_collectives_is_checked_in_a_process_group_of_one(client):
    # "Default process group has not been initialized" was the end of it ("cannot run here"); the
    # run child now starts a gloo group of itself alone (a file store in a temporary folder it
    # removes), checks again, and says that the world size was 1
    import glob
    import tempfile

    before = set(glob.glob(tempfile.gettempdir() + "/gradlint-group-*"))
    r = await run(client, "SummedOverRanks", file="collective.py")
    assert r["status"] == "pass" and r["proof"]["inputs"] == ["x"], r["summary"]
    assert r["notes"][0].startswith("checked in a torch.distributed process group of one"), r["notes"]
    r = await run(client, "SummedOverRanksWrong", file="collective.py")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient") and "1.5 × numerical" in r["summary"], r["summary"]
    # an all-gather is the identity in a world of one: not a gradient hook by its code, so a doubled
    # backward is a wrong gradient there (it was "⚠ inconclusive: … a gradient hook")
    r = await run(client, "GatheredDoubled", file="collective.py")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient") and "2 × numerical" in r["summary"], r["summary"]
    assert set(glob.glob(tempfile.gettempdir() + "/gradlint-group-*")) == before


async def test_a_plan_constant_is_learnt_from_the_test_that_differentiates(client):
    # the API takes a plan object (no made-up value for it), and its tests reach it through helpers
    # (`test_x` calls `check_x`): they were not found, and synthesized inputs made the plan's
    # kernel width differentiable: "✗ backward returns None for `width`". The first test
    # differentiates nothing; the autograd test shows width is a constant of the package
    r = assert_valid(await client.run(fn_class("setup_proj/spreading.py", "Spread"), timeout=240))
    assert r["status"] == "pass" and r["proof"]["inputs"] == ["x"], r["summary"]
    assert [u["input"] for u in r["proof"]["unchecked"]] == ["width"]
    assert "test_spreading.py:24 (test_gradients)" in r["notes"][0], r["notes"]
