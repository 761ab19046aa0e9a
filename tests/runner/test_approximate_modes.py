"""Failures that prove no bug. A mode whose forward only approximates the first mode's result (an iterative solve stopped at
its tolerance; fixtures/approximate_modes.py) fails gradcheck by its own finite differences, not
by a wrong backward: it is a note, not a ✗. A wrong backward still fails in the exact mode. A
backward its docstring says differs from the derivative (fixtures/documented.py) is inconclusive."""
import pytest

from _runner_util import run_class

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "approximate_modes.py"


async def test_an_approximate_mode_failing_by_its_finite_differences_is_not_a_wrong_gradient(client):
    r = await run_class(client, FILE, "DiagonalSolve")
    assert r["status"] == "pass", r["summary"]
    assert {"mode": {"method": "'iterative'"}, "status": "skipped"} in r["modes"], r["modes"]
    note = next(n for n in r["notes"] if "mode method='iterative'" in n)
    assert "differ from those in mode method='direct'" in note and "not counted as a wrong gradient" in note, note


async def test_a_wrong_backward_still_fails_in_the_exact_mode(client):
    r = await run_class(client, FILE, "DiagonalSolveWrong")
    assert r["status"] == "fail" and "wrong sign" in r["summary"], r["summary"]


async def test_a_backward_documented_to_differ_from_the_derivative_is_inconclusive_with_its_words(client):
    r = await run_class(client, "documented.py", "SmoothAbs")
    assert r["status"] == "inconclusive", r["summary"]
    assert "own docs say" in r["summary"] and "gradcheck will fail near zero" in r["summary"], r["summary"]
    r = await run_class(client, "documented.py", "UndocumentedSmoothAbs")
    assert r["status"] == "fail", r["summary"]


async def test_a_backward_within_one_percent_on_every_draw_is_named_so(client):
    # no draw passes strictly and each agrees within 1%: the approximation, not "gradcheck did not run"
    r = await run_class(client, "documented.py", "NearlySign")
    assert r["status"] == "warning" and r["verdict"] == "approximate_gradient", r["summary"]
    assert "gradients agree to" in r["summary"], r["summary"]
