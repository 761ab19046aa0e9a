"""Functions whose forward raises in float64 and runs in float32 (fixtures/float32_proj/): their
inputs stay float32 (synthesized, or a test's own) and are checked at float32's resolution, with
a note that says why; a wrong backward still fails there."""
import pytest

from _runner_util import run_class

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "float32_proj/kernels.py"


def float32_note(result):
    return next(n for n in result["notes"] if n.startswith("forward raises in float64"))


async def test_a_forward_that_overflows_a_float32_buffer_in_float64_is_checked_in_float32(client):
    r = await run_class(client, FILE, "FloorScale")
    assert r["status"] == "pass", r["summary"]
    assert {i["dtype"] for i in r["inputs"] if i["kind"] == "tensor"} == {"float32"}, r["inputs"]
    assert "value cannot be converted to type float without overflow" in float32_note(r), r["notes"]
    step = r["coarser_step"]
    assert step["grain"] == "float32" and "overflow" in step["float64_error"], step
    assert step["to"]["rtol"] == 0.01 and step["to"]["eps"] >= 1e-3, step


async def test_a_wrong_gradient_still_fails_in_float32(client):
    r = await run_class(client, FILE, "FloorScaleWrong")
    assert r["status"] == "fail", r["summary"]
    assert "for w" in r["summary"] and "2 × numerical" in r["summary"], r["summary"]


async def test_a_tests_float32_inputs_stay_float32_when_forward_refuses_float64(client):
    r = await run_class(client, FILE, "Float32Kernel")
    assert r["status"] == "pass", r["summary"]
    x = r["inputs"][0]
    assert (x["dtype"], x.get("promoted_from")) == ("float32", None), x
    assert "the kernel is written for float32" in float32_note(r), r["notes"]
