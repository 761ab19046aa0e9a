"""Functions defined inside a function that returns them (a factory): found as targets and run by
calling the factory with its defaults; other local Functions stay out of a "run everything"."""
import pytest

from _runner_util import assert_valid, fixture, fn_class, run_class
from gradlint.runner.targets import find_targets

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "factories.py"


def _targets():
    with open(fixture(FILE), encoding="utf-8") as fh:
        return {t.qualname: t for t in find_targets(fh.read()) if t.kind == "function_class"}


def test_a_function_a_factory_returns_is_a_target_and_a_local_one_is_not():
    targets = _targets()
    assert targets["ScaledSquare.<locals>.ScaledSquareFn"].importable
    assert targets["ScaledSquareWrong.<locals>.ScaledSquareWrongFn"].importable
    assert targets["Shifted.<locals>.ShiftedFn"].importable
    assert not targets["helper_uses_a_local_function.<locals>.Doubled"].importable


async def test_the_factory_is_called_with_its_defaults(client):
    r = assert_valid(await client.run(fn_class(FILE, "ScaledSquare.<locals>.ScaledSquareFn"), timeout=240))
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    assert "`ScaledSquareFn` is made by `ScaledSquare()`, called with its defaults" in r["notes"]


async def test_a_wrong_backward_of_a_factorys_function_fails(client):
    r = assert_valid(await client.run(fn_class(FILE, "ScaledSquareWrong.<locals>.ScaledSquareWrongFn"),
                                      timeout=240))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert "analytical = 0.5 × numerical" in r["summary"], r["summary"]


async def test_a_factory_that_needs_arguments_is_named_not_guessed(client):
    r = assert_valid(await client.run(fn_class(FILE, "Shifted.<locals>.ShiftedFn"), timeout=240))
    assert r["status"] == "no_inputs", r["summary"]
    assert "`Shifted`, needs `shift`" in r["summary"], r["summary"]


async def test_a_strings_values_named_only_by_forwards_error_are_tried_and_checked_as_modes(client):
    # the caller passes "auto"; forward refuses it with "Available: scale, square"
    r = await run_class(client, "string_choices.py", "DispatchWrongSquare")
    assert r["status"] == "fail", r["summary"]
    assert r["summary"].startswith("✗ in mode method='square': "), r["summary"]
    r = await run_class(client, "string_choices.py", "Dispatch")
    assert r["status"] == "pass", r["summary"]
    assert [m["mode"] for m in r["modes"]] == [{"method": "'scale'"}, {"method": "'square'"}], r["modes"]



async def test_a_value_forward_refuses_listing_known_values_moves_the_search_on(client):
    # "auto" comes first (the caller's), the literals after it: the refusal moves on at once
    r = await run_class(client, "string_choices.py", "Compared")
    assert r["status"] == "pass", r["summary"]
    assert r["synthesis"]["attempts"] <= 8, r["synthesis"]


async def test_modes_named_by_a_helper_through_a_module_alias_and_its_numpy_docstring(client):
    # F.scale(x, kind=kind, norm=norm) after `norm = norm or "backward"`; its docstring lists the values
    r = await run_class(client, "transforms_pkg/autograd.py", "Scale")
    assert r["status"] == "pass", r["summary"]
    checked = set((k, v) for m in r["modes"] for k, v in m["mode"].items())
    assert {("norm", "'ortho'"), ("norm", "'backward'"), ("kind", "1"), ("kind", "2")} <= checked, r["modes"]
    assert ("norm", "'scipy'") not in checked, r["modes"]  # `"scipy" in norm` tests a part of it
    assert not r.get("untaken_branches"), r["notes"]  # mode norm='ortho' took backward's other arm
    r = await run_class(client, "transforms_pkg/autograd.py", "ScaleWrongOrtho")
    assert r["status"] == "fail" and "4 × numerical" in r["summary"], r["summary"]
    norm = next(i for i in r["inputs"] if i["name"] == "norm")
    assert norm["repr"] == "'ortho'" or "in mode norm='ortho'" in r["summary"], (norm, r["summary"])
