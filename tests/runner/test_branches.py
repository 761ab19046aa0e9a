"""Branches of backward no checked input took (fixtures/rare_branch.py, run for real in the worker)."""
import pytest

from _runner_util import fixture, run_class
from gradlint.worker import branches

FILE = "rare_branch.py"


async def run(client, qualname):
    return await run_class(client, FILE, qualname)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_wrong_arm_only_far_inputs_take_is_found_there(client):
    # random draws near 0 never reach `x > 3`: the doubled gradient of that arm passed every check
    r = await run(client, "RareArmWrong")
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]
    assert r["summary"].startswith("✗ where backward takes its branch at line "), r["summary"]
    r = await run(client, "RareArm")
    assert r["status"] == "pass", r["summary"]
    assert any(c["name"].startswith("gradcheck (branch at line ") and c["status"] == "pass" for c in r["checks"])
    assert "untaken_branches" not in r


@pytest.mark.asyncio(loop_scope="module")
async def test_an_arm_no_input_takes_is_reported_with_the_pass(client):
    r = await run(client, "FarArm")
    assert r["status"] == "pass", r["summary"]
    line = next(n for n, text in enumerate(open(fixture(FILE)), 1) if "> 1e6" in text) + 1
    assert r["untaken_branches"] == [{"file": fixture(FILE), "line": line}], r.get("untaken_branches")
    assert "no input checked took backward's branch at line %d" % line in " ".join(r["notes"])


def test_arms_are_the_first_lines_of_both_sides_of_every_if_in_a_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("if True:\n    x = 1\n"
                    "def f(a):\n"
                    "    if a:\n"
                    "        return 1\n"
                    "    elif a is None:\n"
                    "        return 2\n"
                    "    else:\n"
                    "        return 3\n")
    assert branches.arms_of(str(path)) == [(4, 5), (4, 6), (6, 7), (6, 9)]
    path.write_text("def f(:\n")
    assert branches.arms_of(str(path)) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_an_arm_for_more_columns_is_reached_with_an_input_of_one_more_dimension(client):
    # the inputs are vectors; backward's `if grad.dim() == 2:` arm (several right-hand sides) is
    # reached with b given a second column: there the wrong arm returns a gradient of the wrong shape
    r = await run(client, "ScaleRowsColumnsWrong")
    assert (r["status"], r["verdict"]) == ("error", "exception"), r["summary"]
    assert r["summary"].startswith("✗ where backward takes its branch at line "), r["summary"]
    assert "(input 1 with a trailing dimension of 2): RuntimeError in backward: " in r["summary"], r["summary"]
    r = await run(client, "ScaleRows")  # (its synthesized b has columns already: that arm is checked)
    assert r["status"] == "pass", r["summary"]
    assert "untaken_branches" not in r
