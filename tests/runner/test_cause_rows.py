"""Which failures a broken contract explains (gradlint/worker/verdict.py, ``_after_a_write``),
judged on check records as the runner returns them (no worker: the records of a real run are in
test_causes.py)."""
from gradlint.worker.verdict import conclude

WRITE = "RuntimeError: Argument x is not defined as mutable but was mutated"
ALIAS = "RuntimeError: the output of this custom operator may not alias any inputs"


def opcheck(tests_said, **details):
    return {"name": "opcheck", "status": "fail", "verdict": "op_schema",
            "message": "✗ opcheck schema: the op's schema does not match what it does",
            "details": dict(details, tests={"test_schema": tests_said}, failed=["test_schema"])}


GRADCHECK = {"name": "gradcheck", "status": "fail", "verdict": "wrong_gradient",
             "message": "✗ Jacobian mismatch: input x, output 0", "details": {}}


def judged(records):
    result = {"notes": [], "target": {}, "inputs": []}
    conclude(result, [dict(r) for r in records], {})
    return result


def test_a_write_torch_reported_explains_the_checks_that_ran_forward_again():
    # no line of Python wrote (a C++ kernel): only opcheck's own sentence says it was a write
    for order in ([GRADCHECK, opcheck(WRITE)], [opcheck(WRITE), GRADCHECK]):
        r = judged(order)
        assert (r["status"], r["verdict"], r["failed_check"]) == ("fail", "op_schema", "opcheck")
        assert r["explains"] == ["gradcheck"]
        assert "Fix this first: it also explains gradcheck: Jacobian mismatch" in r["message"]


def test_a_write_the_runner_found_explains_them_too():
    r = judged([GRADCHECK, opcheck("SUCCESS", writes=[{"input": "x", "line": 3}])])
    assert r["explains"] == ["gradcheck"]
    mutated = {"name": "input_mutation", "status": "fail", "verdict": "input_mutated",
               "message": "✗ forward writes to its input x", "details": {}}
    r = judged([GRADCHECK, mutated])
    assert (r["verdict"], r["failed_check"], r["explains"]) == ("input_mutated", "input_mutation", ["gradcheck"])


def test_a_schema_failure_that_is_not_a_write_still_decides_but_explains_nothing():
    for order in ([GRADCHECK, opcheck(ALIAS)], [opcheck(ALIAS), GRADCHECK]):
        r = judged(order)
        assert (r["verdict"], r["failed_check"]) == ("op_schema", "opcheck")
        assert "explains" not in r
        assert "Fix this first" not in r["message"]
        assert "Also failing: gradcheck: Jacobian mismatch" in r["message"]
