"""Inputs read from what the code says of them: a forward whose errors name the sign each input must
have gets inputs of those signs (fixtures/signed_inputs.py); a caller whose NumPy-style docstring
gives its tensors' shapes is run at those shapes (fixtures/documented_caller.py). Run for real."""
import pytest

from _runner_util import run_class

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_inputs_get_the_signs_forwards_errors_name(client):
    r = await run_class(client, "signed_inputs.py", "Displacement")
    assert r["status"] == "pass", r["summary"]
    r = await run_class(client, "signed_inputs.py", "DisplacementWrongDepth")
    assert r["status"] == "fail" and "z_obs" in r["summary"], r["summary"]


async def test_a_callers_numpy_style_docstring_gives_the_shapes(client):
    r = await run_class(client, "documented_caller.py", "Sample")
    assert r["status"] == "pass", r["summary"]
    shapes = dict((i["name"], i.get("shape")) for i in r["inputs"])
    assert len(shapes["points"]) == 3 and shapes["points"][-1] == 2 and len(shapes["weights"]) == 1, shapes
