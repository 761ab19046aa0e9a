"""Inputs read from what the code says of them: a forward whose errors name the sign each input must
have gets inputs of those signs (fixtures/signed_inputs.py). Run for real in the worker."""
import pytest

from _runner_util import run_class

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_inputs_get_the_signs_forwards_errors_name(client):
    r = await run_class(client, "signed_inputs.py", "Displacement")
    assert r["status"] == "pass", r["summary"]
    r = await run_class(client, "signed_inputs.py", "DisplacementWrongDepth")
    assert r["status"] == "fail" and "z_obs" in r["summary"], r["summary"]

