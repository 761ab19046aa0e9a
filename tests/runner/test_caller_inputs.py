"""Inputs captured from the package's own code that calls a Function (fixtures/wrapped/).

Real Functions are reached through a Module or a wrapper that builds their arguments (a
4-D image and a filter made from a name, a distance callable, a constructor option that
picks the Function). When synthesis finds no inputs, the runner runs those callers and
takes the arguments they pass to ``apply``.
"""
import subprocess
import sys

import pytest

from _runner_util import assert_valid, check, fixture, fn_class, marker_line

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "wrapped/functions.py"
ROW = "wrapped/layers.py:%d (RowLayer.forward)" % marker_line("wrapped/layers.py", "row")


async def run(client, qualname):
    return assert_valid(await client.run(fn_class(FILE, qualname), timeout=120))


def captured_from(result):
    return next(n for n in result["notes"] if n.startswith("inputs captured from "))


async def test_a_filter_bank_gets_the_image_and_filter_its_module_builds(client):
    r = await run(client, "RowFilter")
    assert r["status"] == "pass", r["summary"]
    assert ROW + ", which calls RowFilter.apply" in captured_from(r)
    assert r["synthesis"]["caller"] == ROW
    x, h = r["inputs"][0], r["inputs"][1]
    assert len(x["shape"]) == 4 and x["requires_grad"] is True
    assert h["shape"] == [1, 1, 5, 1] and h["requires_grad"] is False  # backward returns (dx,) + (None,) * 2
    draws = [c for c in r["checks"] if c["name"] == "gradcheck" or c["name"].startswith("gradcheck (draw")]
    assert len(draws) == 2  # two draws of the caller's input


async def test_a_wrong_gradient_is_still_caught_on_captured_inputs(client):
    r = await run(client, "WrongRowFilter")  # reached only with RowLayer(wrong=True): a flag flipped
    assert r["status"] == "fail" and r["verdict"] == "wrong_gradient", r["summary"]
    assert "analytical = 2 × numerical" in r["summary"]
    r = await run(client, "WrongScaledDistance")  # from a module-level wrapper function
    # backward also returns None for x1 and x2, which it does not refuse (ScaledDistance does):
    # dropped gradients, reported first; the sign of lengthscale's gradient as well
    assert r["status"] == "fail" and "backward returns None for `x1`" in r["summary"], r["summary"]
    assert "lengthscale: wrong sign" in r["summary"], r["summary"]
    assert "(wrong_kernel)" in captured_from(r)


async def test_a_constructor_option_that_picks_the_function(client):
    r = await run(client, "BandFilter")  # RowLayer(kind="band"): a literal the class compares with
    assert r["status"] in ("pass", "warning"), r["summary"]
    assert check(r, "gradcheck")["status"] == "pass"
    assert "RowLayer.forward" in captured_from(r)


async def test_a_callable_parameter_comes_from_the_module_that_passes_it(client):
    r = await run(client, "ScaledDistance")  # Kernel.forward calls it only when no input requires grad
    assert r["status"] == "pass", r["summary"]
    assert "Kernel.forward" in captured_from(r)
    lengthscale = r["inputs"][2]
    assert lengthscale["requires_grad"] is True and lengthscale["shape"] == [1]
    assert r["inputs"][3]["kind"] == "value"  # the lambda


async def test_the_report_names_the_caller():
    out = subprocess.run([sys.executable, "-m", "gradlint", "run", fixture(FILE) + "::WrongRowFilter", "--no-cache"],
                         capture_output=True, text=True, cwd=fixture("."), timeout=300)
    assert "inputs: captured from %s, which calls it" % ROW in out.stdout, out.stdout


async def test_a_function_reached_only_through_nested_inputs_takes_them_from_the_tests(client):
    # Inverse.forward takes (low, [highs]): neither synthesis nor the Module gives inputs; the
    # project's own test builds them (a parametrize case, then a method of a test class)
    r = await run(client, "MergeBands")
    assert r["status"] == "pass", r["summary"]
    # the first test sleeps: it is stopped after the time a test gets, and the next one is used
    line = next(n for n, text in enumerate(open(fixture("test_wrapped_api.py")), 1)
                if text.startswith("def test_inverse_adds_every_level"))
    assert captured_from(r).startswith(
        "inputs captured from test_wrapped_api.py:%d (test_inverse_adds_every_level) [levels=2], which calls "
        "MergeBands.apply" % line)
    assert [i["shape"] for i in r["inputs"][:2]] == [[2, 3], [2, 3]]
    r = await run(client, "WrongMergeBands")
    assert r["status"] == "fail" and "wrong sign" in r["summary"], r["summary"]
    assert "(TestWrong.test_wrong_inverse)" in captured_from(r)


async def test_a_backward_that_raises_on_the_tests_own_inputs_is_reported_not_skipped(client):
    # no test gives inputs backward accepts; on the test's own inputs (the requires_grad it sets)
    # backward raises: the Function's error, reported with where it was raised
    r = await run(client, "BrokenMergeBands")
    assert (r["status"], r["verdict"]) == ("error", "exception"), r["summary"]
    assert r["summary"].startswith("✗ TypeError in backward: can't multiply sequence by non-int"), r["summary"]
    assert r["location"]["function"] == "_per_input", r["location"]
    assert "(TestBroken.test_broken_inverse_trains)" in captured_from(r)


async def test_a_test_case_whose_inputs_make_backward_raise_is_not_skipped_for_one_that_passes(client):
    # the first parametrize case (mode "scaled") makes backward raise, the second passes: taking
    # the second would prove only the branch that works
    r = await run(client, "ModeMerge")
    assert (r["status"], r["verdict"]) == ("error", "exception"), r["summary"]
    assert r["summary"].startswith("✗ TypeError in backward: "), r["summary"]
    assert "(test_every_mode_merges) [mode='scaled']" in captured_from(r)


async def test_a_caller_elsewhere_in_the_project_counts_too(client):
    r = await run(client, "Rescale")  # only wrapped_app.py, next to the package, calls it
    assert r["status"] == "pass", r["summary"]
    assert "wrapped_app.py:6 (normalise), which calls Rescale.apply" in captured_from(r)


async def test_star_args_take_their_count_from_a_caller(client):
    r = await run(client, "WeightedSum")  # forward(ctx, *xs): `blend(a, b)` passes two
    assert r["status"] == "pass", r["summary"]
    assert len(r["inputs"]) == 2 and "(blend), which calls WeightedSum.apply" in captured_from(r)


async def test_a_failure_only_outside_the_domain_the_callers_use_is_inconclusive(client):
    # backward assumes unit-norm inputs, which its only caller passes: gradcheck fails on
    # synthesized inputs with no clear pattern and passes on the caller's
    r = await run(client, "Renormalize")
    assert r["status"] == "inconclusive" and r["verdict"] == "shape_dependent", r["summary"]
    assert "and passes on the inputs wrapped/layers.py:" in r["summary"] and "(unit_features) passes" in r["summary"]
    assert check(r, "gradcheck (callers' inputs)")["status"] == "pass"
    assert r["inputs"][0]["shape"] == [3, 4]  # the report shows the inputs it failed on


async def test_a_caller_that_falls_back_on_any_exception_still_gives_its_inputs(client):
    r = await run(client, "Halve")  # guarded_halve: try: Halve.apply(...) except Exception: ...
    assert r["status"] == "pass", r["summary"]
    assert "(guarded_halve), which calls Halve.apply" in captured_from(r)
