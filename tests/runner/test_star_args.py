"""A Function whose forward takes ``*args`` gets as many tensors as its module's calls pass, or as
backward returns gradients for (fixtures/star_args.py); each run for real in the worker."""
import pytest

from _runner_util import run_class

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "star_args.py"


async def test_star_args_count_from_the_modules_calls(client):
    r = await run_class(client, FILE, "Stack")
    assert r["status"] == "pass", r["summary"]
    assert [i["name"] for i in r["inputs"]] == ["xs[0]", "xs[1]", "xs[2]"], r["inputs"]
    r = await run_class(client, FILE, "StackWrongLast")
    assert r["status"] == "fail" and "xs[2]" in r["summary"], r["summary"]


async def test_star_args_count_from_backwards_width(client):
    r = await run_class(client, FILE, "Pair")
    assert r["status"] == "pass", r["summary"]
    assert [i["name"] for i in r["inputs"]] == ["x", "rest[0]"], r["inputs"]
