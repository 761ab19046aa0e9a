"""Inputs captured from the package's own code that calls a Function (fixtures/wrapped/).

Real Functions are reached through a Module or a wrapper that builds their arguments (a
4-D image and a filter made from a name, a distance callable, a constructor option that
picks the Function). When synthesis finds no inputs, the runner runs those callers and
takes the arguments they pass to ``apply``.
"""
import subprocess
import sys

import pytest

from _runner_util import assert_valid, check, fixture, fn_class

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "wrapped/functions.py"


async def run(client, qualname):
    return assert_valid(await client.run(fn_class(FILE, qualname), timeout=120))


def captured_from(result):
    return next(n for n in result["notes"] if n.startswith("inputs captured from "))


async def test_a_filter_bank_gets_the_image_and_filter_its_module_builds(client):
    r = await run(client, "RowFilter")
    assert r["status"] == "pass", r["summary"]
    assert "wrapped/layers.py:26 (RowLayer.forward), which calls RowFilter.apply" in captured_from(r)
    assert r["synthesis"]["caller"] == "wrapped/layers.py:26 (RowLayer.forward)"
    x, h = r["inputs"][0], r["inputs"][1]
    assert len(x["shape"]) == 4 and x["requires_grad"] is True
    assert h["shape"] == [1, 1, 5, 1] and h["requires_grad"] is False  # backward returns (dx,) + (None,) * 2
    assert len([c for c in r["checks"] if c["name"].startswith("gradcheck")]) == 2  # two draws of the caller's input


async def test_a_wrong_gradient_is_still_caught_on_captured_inputs(client):
    r = await run(client, "WrongRowFilter")  # reached only with RowLayer(wrong=True): a flag flipped
    assert r["status"] == "fail" and r["verdict"] == "wrong_gradient", r["summary"]
    assert "analytical = 2 × numerical" in r["summary"]
    r = await run(client, "WrongScaledDistance")  # from a module-level wrapper function
    assert r["status"] == "fail" and "wrong sign" in r["summary"], r["summary"]
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
    assert "inputs: captured from wrapped/layers.py:26 (RowLayer.forward), which calls it" in out.stdout, out.stdout
