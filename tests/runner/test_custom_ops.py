"""Custom ops (torch.library) and torch.func checks, run for real in a worker."""
import pytest

from _runner_util import assert_valid, check, def_line, fn_class, req

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def run(client, request):
    return assert_valid(await client.run(request, timeout=300))


def op(qualname, **kw):
    return req("custom_ops.py", {"kind": "custom_op", "qualname": qualname}, **kw)


async def test_a_correct_custom_op_passes_gradcheck_and_opcheck(client):
    r = await run(client, op("mysin"))
    assert r["status"] == "pass", r["summary"]
    assert r["target"]["op"] == "gltest::mysin"
    assert check(r, "gradcheck")["status"] == "pass"
    tests = check(r, "opcheck")["details"]["tests"]
    assert set(tests) == {"test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic",
                          "test_faketensor (permuted layout)"}
    assert set(tests.values()) == {"SUCCESS"}


async def test_a_wrong_registered_backward_is_caught_although_opcheck_passes(client):
    r = await run(client, op("wrongsin"))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    # the schema gives the kinds: `scale: float` is a number, not a tensor
    assert [i["kind"] for i in r["inputs"]] == ["tensor", "value"]
    assert r["location"]["line"] == def_line("custom_ops.py", "def _wrong_backward(")
    assert check(r, "opcheck")["status"] == "pass"  # opcheck does not run gradcheck


async def test_a_missing_fake_impl_points_at_the_op(client):
    r = await run(client, op("nofake"))
    assert (r["status"], r["verdict"]) == ("fail", "op_fake_tensor")
    assert "no fake implementation" in r["summary"]
    assert r["location"]["function"] == "nofake"


async def test_an_undeclared_mutation_is_a_schema_failure(client):
    r = await run(client, op("sneaky"))
    assert (r["status"], r["verdict"]) == ("fail", "op_schema")
    assert "Argument out is not defined as mutable but was mutated" in r["message"]
    assert check(r, "gradcheck")["message"].startswith("the op registers no gradient formula")


async def test_an_op_named_by_its_schema_name(client):
    r = await run(client, req("custom_ops.py", {"kind": "custom_op", "op": "gltest::mysin"}))
    assert r["status"] == "pass", r["summary"]


async def test_torch_func_ready_function_is_checked_under_vmap_and_jacrev(client):
    r = await run(client, fn_class("real_styles.py", "ExpFunc"))
    assert r["status"] == "pass", r["summary"]
    assert check(r, "vmap")["status"] == "pass" and check(r, "jacrev")["status"] == "pass"
    assert "vmap, jacrev" in r["summary"]


async def test_a_wrong_vmap_rule_fails(client):
    r = await run(client, fn_class("real_styles.py", "BadVmapRule"))
    assert (r["status"], r["verdict"]) == ("fail", "vmap_mismatch")
    assert r["summary"] == ("✗ vmap returns (3, 2, 4) where a loop of single calls gives (2, 3, 4): "
                            "the vmap rule is wrong")
