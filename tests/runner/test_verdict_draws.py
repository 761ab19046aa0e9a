"""How the worker's verdict weighs extra draws and extra inputs (issue 23: tie draws and modes must
not fail a correct Function on small disagreements). Records as the worker's checks make them; the
Functions behind them run for real in test_honesty.py (SparseTriSolve) and the real-code sets."""
from gradlint.worker import explore
from gradlint.worker.outcome import Outcome
from gradlint.worker.verdict import conclude


def _record(name, status, **details):
    rec = {"name": name, "status": status, "verdict": None, "seconds": 0.0, "message": None,
           "details": dict(details, responses={"A": ["output 0"]} if status == "pass" else {})}
    if status == "fail":
        rec["verdict"] = "wrong_gradient"
        rec["message"] = "✗ Jacobian mismatch: input A, output 0 (worst |Δ| 1e-4)"
        rec["_outcome"] = Outcome("fail", "wrong_gradient", rec["message"], "")
    return rec


def _result():
    return {"status": None, "verdict": None, "summary": None, "message": None, "notes": [],
            "inputs": [{"name": "A", "kind": "tensor", "requires_grad": True, "dtype": "float64"}]}


def _run(*records):
    result = _result()
    conclude(result, list(records), {"strict": False})
    return result


def test_a_draw_that_fails_close_to_the_jacobians_scale_after_a_strict_pass_is_no_proof():
    # an iterative solver on the project's own inputs: the first draw passes strictly, two others
    # differ by at most 6% of the block's largest entry, with no pattern
    r = _run(_record("gradcheck", "pass"),
             _record("gradcheck (draw 2)", "fail", close_to_scale=True, worst_relative_error=5.7),
             _record("gradcheck (draw 3)", "fail", close_to_scale=True, worst_relative_error=1.3))
    assert r["status"] == "pass", r["summary"]
    assert any(n.startswith("gradcheck agrees only approximately on 2 of 3 input draws") for n in r["notes"])


def test_draws_that_fail_far_from_the_jacobians_scale_still_fail():
    r = _run(_record("gradcheck", "pass"),
             _record("gradcheck (draw 2)", "fail", close_to_scale=False, worst_relative_error=1.0),
             _record("gradcheck (draw 3)", "fail", close_to_scale=False, worst_relative_error=1.0))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]


def test_a_first_draw_that_fails_close_to_the_scale_still_fails():
    # a wrong formula touching only small entries looks the same: no strict pass, no excuse
    r = _run(_record("gradcheck", "fail", close_to_scale=True, worst_relative_error=0.2),
             _record("gradcheck (draw 2)", "fail", close_to_scale=True, worst_relative_error=0.2))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient"), r["summary"]


def test_what_makes_a_failure_on_extra_inputs_decisive():
    decisive = explore.decisive
    assert decisive(_record("gradcheck (ties)", "fail", worst_relative_error=1.5))
    assert not decisive(_record("gradcheck (ties)", "fail", worst_relative_error=1.5, close_to_scale=True))
    assert not decisive(_record("gradcheck (ties)", "fail", worst_relative_error=0.2))
    assert not decisive(_record("gradcheck (mode upper=True)", "fail", worst_relative_error=3e4,
                                ignored_entries_only=True))
    assert decisive(_record("gradcheck (ties)", "fail", worst_relative_error=0.2, pattern={"kind": "scale"}))


def _raised(phase, message, kind="RuntimeError"):
    return {"status": "error", "verdict": "exception", "summary": "✗ %s in %s: %s" % (kind, phase, message),
            "message": None, "notes": [], "exception": {"type": kind, "phase": phase, "message": message}}


def test_backwards_own_autograd_grad_on_a_graph_made_up_inputs_do_not_build_is_inconclusive():
    # zuko's GaussLegendre style: backward differentiates a callable's output w.r.t. tensors the
    # made-up inputs do not connect to it: the inputs do not fit, nothing says the code is wrong
    from gradlint.worker.verdict import inputs_unfit

    for message in ("One of the differentiated Tensors appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior.",
                    "element 0 of tensors does not require grad and does not have a grad_fn"):
        result = _raised("backward", message)
        inputs_unfit(result)
        assert (result["status"], result["verdict"]) == ("inconclusive", "inputs_unfit"), message
        assert "backward's own torch.autograd.grad raised" in result["summary"]


def test_any_other_error_in_backward_stays_the_codes_own():
    from gradlint.worker.verdict import inputs_unfit

    for phase, message, kind in (("backward", "The size of tensor a (3) must match the size of tensor b (4)",
                                  "RuntimeError"),
                                 ("backward", "name 'gard' is not defined", "NameError"),
                                 ("forward", "name 'scael' is not defined", "NameError")):
        result = _raised(phase, message, kind)
        inputs_unfit(result)
        assert result["verdict"] == "exception", (phase, message)
