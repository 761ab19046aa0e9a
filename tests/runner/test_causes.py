"""When several checks fail, the run reports the failure that explains the others
(gradlint/worker/verdict.py, PRECEDENCE): one real run in the worker per pair, whose records
hold both failures, and the same records judged again in the other order (a plan that ran
the symptom's check first must reach the same verdict)."""
import pytest

from _runner_util import EXPR, assert_valid, check, fixture, fn_class, req
from gradlint.worker.verdict import PRECEDENCE, conclude

pytestmark = pytest.mark.asyncio(loop_scope="module")

TORCH_INPLACE = "one of the variables needed for gradient computation has been modified by an inplace operation"


async def run(client, request):
    return assert_valid(await client.run(request, timeout=300))


def op(qualname, **kw):
    return req("causes.py", {"kind": "custom_op", "qualname": qualname}, **kw)


def marked(text):
    """The line of causes.py holding ``text`` (a `# WRITE:`/`# RAISES:` marker)."""
    with open(fixture("causes.py")) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def failing(result):
    return [c["name"] for c in result["checks"] if c["status"] in ("fail", "error")]


def judged_again(result, order):
    """The verdict the worker's conclusion reaches on the run's check records, reordered so
    that the checks named in ``order`` come first, in that order."""
    records = sorted((dict(c) for c in result["checks"]),
                     key=lambda c: order.index(c["name"]) if c["name"] in order else len(order))
    again = dict(result, status=None, verdict=None, summary=None, message=None, location=None, notes=[])
    again.pop("failed_check", None)
    conclude(again, records, result["options"])
    return again["status"], again["verdict"], again["failed_check"]


# -- a broken contract, before the failures it causes ---------------------------------------------

async def test_an_undeclared_write_comes_before_the_gradcheck_exception_it_causes(client):
    # the op: clamps x in place, mutates_args=(), saves x for its backward
    assert [cause.row for cause in PRECEDENCE] == ["contract", "forward", "gradient_count"]
    r = await run(client, op("relu_inplace"))
    assert failing(r) == ["gradcheck", "opcheck"]
    assert check(r, "gradcheck")["status"] == "error" and TORCH_INPLACE in check(r, "gradcheck")["message"]
    assert (r["status"], r["verdict"], r["failed_check"]) == ("fail", "op_schema", "opcheck")
    # the line that writes, not the backward's ctx.saved_tensors where torch noticed
    assert r["location"]["line"] == marked("# WRITE: x, undeclared") == 15
    assert r["location"]["reason"] == "writes to x"
    assert r["summary"] == ("✗ opcheck schema: the op writes to its input `x` (`y = x.clamp_(min=0.0)`, line 15) "
                            "but mutates_args does not list it")
    assert "Argument x is not defined as mutable but was mutated" in r["message"]
    # torch's sentence once: in the line naming what the cause explains; no exception block
    assert r["message"].count(TORCH_INPLACE) == 1 and TORCH_INPLACE not in r["summary"]
    assert "Fix this first: it also explains gradcheck (line %d): RuntimeError in backward" % marked(
        "gradcheck raises here") in r["message"]
    assert r["exception"] is None
    assert r["explains"] == ["gradcheck"]
    assert check(r, "opcheck")["details"]["writes"][0]["line"] == 15
    assert judged_again(r, ["gradcheck", "opcheck"]) == ("fail", "op_schema", "opcheck")


async def test_an_undeclared_write_comes_before_the_jacobian_mismatch_it_causes(client):
    r = await run(client, op("drift"))
    assert check(r, "gradcheck")["status"] == "fail"  # x moves with every call: a "kink" everywhere
    assert (r["status"], r["verdict"]) == ("fail", "op_schema")
    assert r["location"]["line"] == marked("x.add_(1.0)")
    assert "`x.add_(1.0)`" in r["summary"]
    assert r["explains"] == ["gradcheck"]
    assert judged_again(r, ["gradcheck", "opcheck"]) == ("fail", "op_schema", "opcheck")


async def test_an_undeclared_write_comes_before_the_forward_exception_it_causes(client):
    # forward raises only on the inputs an earlier call moved: inside gradcheck, not in `forward`
    r = await run(client, op("bounded"))
    gradcheck = check(r, "gradcheck")
    assert gradcheck["status"] == "error" and gradcheck["details"]["exception"]["phase"] == "forward"
    assert gradcheck["message"] == "✗ ValueError in forward: x must not be below -100"  # the op's function is its forward
    assert (r["status"], r["verdict"]) == ("fail", "op_schema")
    assert r["location"]["line"] == marked("x.sub_(1000.0)")
    assert r["explains"] == ["gradcheck"]
    assert judged_again(r, ["gradcheck", "opcheck"]) == ("fail", "op_schema", "opcheck")


async def test_the_runners_own_mutation_check_points_at_the_write_and_comes_first(client):
    r = await run(client, fn_class("causes.py", "SavesThenClamps"))
    assert (r["status"], r["verdict"], r["failed_check"]) == ("fail", "input_mutated", "input_mutation")
    assert r["location"]["line"] == marked("# WRITE: x, in a Function")
    assert r["location"]["function"] == "SavesThenClamps.forward"
    assert r["summary"] == "✗ forward modifies its input x in place: `x.clamp_(min=0.0)` (line %d)" % r["location"]["line"]
    assert check(r, "gradcheck")["status"] == "skipped"
    # a plan that ran gradcheck before the mutation check (it raised, as it would: the backward
    # reads the clamped x) still reports the mutation
    records = [{"name": "gradcheck", "status": "error", "verdict": "exception", "seconds": 0.0,
                "message": "✗ RuntimeError in backward: " + TORCH_INPLACE,
                "details": {"exception": {"type": "RuntimeError", "message": TORCH_INPLACE, "phase": "backward"}}}]
    again = dict(r, checks=records + [c for c in r["checks"] if c["name"] != "gradcheck"])
    assert judged_again(again, ["gradcheck"]) == ("fail", "input_mutated", "input_mutation")


async def test_a_write_to_an_input_that_requires_grad_is_a_mutation_not_a_search_for_inputs(client):
    # torch raises on every input set synthesis tries: the code writes to its input, no input helps
    r = await run(client, req("causes.py", {"kind": "callable", "qualname": "clamps_its_input"}))
    assert (r["status"], r["verdict"]) == ("fail", "input_mutated")
    assert r["location"]["line"] == marked("# WRITE: x, a leaf")
    assert r["summary"] == "✗ forward modifies an input that requires grad in place: `x.clamp_(min=0.0)` (line %d)" \
        % r["location"]["line"]


# -- forward raises, before anything downstream ------------------------------------------------------

async def test_a_forward_that_raises_comes_before_a_failure_downstream(client):
    # inputs on the simplex: forward works on them; the sensitivity check moves them off it
    simplex = {"kind": "expression", "source": "torch.softmax(torch.randn(3, 4, dtype=torch.float64), -1)"}
    r = await run(client, op("on_simplex", inputs=simplex))
    assert failing(r) == ["sensitivity", "opcheck"]
    assert check(r, "opcheck")["verdict"] == "op_fake_tensor"  # the fake impl drops a dimension
    assert (r["status"], r["verdict"], r["failed_check"]) == ("error", "exception", "sensitivity")
    assert r["summary"] == "✗ ValueError in forward: rows must sum to 1"
    assert r["location"]["line"] == marked("rows must sum to 1")
    # named, but not as explained: the fake impl is wrong whatever forward does
    assert "explains" not in r
    assert "Also failing: opcheck" in r["message"]
    assert judged_again(r, ["opcheck", "sensitivity"]) == ("error", "exception", "sensitivity")


# -- the wrong number of gradients, before a Jacobian mismatch -----------------------------------------

async def test_a_wrong_number_of_gradients_comes_before_a_jacobian_mismatch(client):
    # without the nondeterminism check (which would raise first), gradcheck raises and forward AD,
    # which does not need backward, finds the jvp three times too large
    r = await run(client, fn_class("causes.py", "ScaleBy", options={"check_nondeterminism": False}))
    assert failing(r) == ["gradcheck", "forward_ad"]
    assert check(r, "forward_ad")["verdict"] == "wrong_gradient"
    assert (r["status"], r["verdict"], r["failed_check"]) == ("error", "exception", "gradcheck")
    assert "returned an incorrect number of gradients (expected 2, got 1)" in r["summary"]
    assert "explains" not in r and "Also failing: forward_ad" in r["message"]
    assert judged_again(r, ["forward_ad", "gradcheck"]) == ("error", "exception", "gradcheck")


# -- one failure: nothing changes ------------------------------------------------------------------

async def test_a_single_failure_is_reported_as_before(client):
    r = await run(client, fn_class("bad_functions.py", "InPlaceDouble", inputs=EXPR))
    assert (r["status"], r["verdict"]) == ("fail", "input_mutated")
    assert "explains" not in r
    assert "Fix this first" not in (r["message"] or "") and "Also failing" not in (r["message"] or "")
