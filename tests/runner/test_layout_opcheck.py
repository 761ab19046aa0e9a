"""opcheck on dense permuted layouts: a stride-copying fake impl is caught on CPU (torch 2.13)."""
import pytest

from _runner_util import assert_valid, check, def_line, req

pytestmark = pytest.mark.asyncio(loop_scope="module")

PERMUTED = "test_faketensor (permuted layout)"


async def run(client, qualname, **options):
    request = req("layout_ops.py", {"kind": "custom_op", "qualname": qualname}, options=dict(options, draws=1))
    return assert_valid(await client.run(request, timeout=300))


async def test_a_stride_copying_fake_passes_on_contiguous_inputs_and_fails_on_permuted_ones(client):
    r = await run(client, "scale_copying_fake")
    assert (r["status"], r["verdict"]) == ("fail", "op_fake_tensor"), r["summary"]
    tests = check(r, "opcheck")["details"]["tests"]
    assert tests["test_faketensor"] == "SUCCESS"  # torch's own opcheck, contiguous inputs
    assert "Stride mismatch" in tests[PERMUTED]
    assert "torch.empty_like" in r["summary"]
    assert r["location"]["line"] == def_line("layout_ops.py", "return torch.empty_like(x)  # WRONG") - 1


async def test_a_fake_that_matches_the_kernel_passes_on_both_layouts(client):
    r = await run(client, "scale_contiguous_fake")
    assert r["status"] == "pass", r["summary"]
    d = check(r, "opcheck")["details"]
    assert d["tests"][PERMUTED] == "SUCCESS"
    assert d["layouts"]["permuted"] == [{"input": "x", "shape": [3, 4], "stride": [1, 3]}]


async def test_a_kernel_that_needs_contiguous_inputs_is_noted_not_failed(client):
    r = await run(client, "rows_only")
    assert r["status"] == "pass", r["summary"]
    assert any("raises on dense permuted" in n for n in r["notes"])


async def test_the_permuted_layouts_can_be_turned_off(client):
    r = await run(client, "scale_copying_fake", opcheck_layouts=False)
    assert r["status"] == "pass"
    assert PERMUTED not in check(r, "opcheck")["details"]["tests"]
