"""RunResult (one typed result, built once from the worker's JSON) and proving plans with
the results cache and de-duplication (gradlint/runner/prove.py), without a worker: the
runs are functions that count their calls."""
from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import get_args

import pytest

from gradlint.runner import STATUSES, RunResult, make_result
from gradlint.runner.cache import ResultCache
from gradlint.runner.plans import plan
from gradlint.runner.prove import Prover, dedupe
from gradlint.runner.report import MARKS
from gradlint.runner.result import JUDGEMENTS, Judgement, Status
from gradlint.runner.targets import find_targets

WORKER_JSON = {
    "schema": "gradlint.run-result", "version": 1, "id": "r7", "status": "fail", "verdict": "wrong_gradient",
    "summary": "✗ Jacobian mismatch", "message": "3 of 9 entries differ", "failed_check": "gradcheck",
    "target": {"kind": "function_class", "qualname": "ScaleWrong", "file": "/ws/bad.py"},
    "location": {"file": "/ws/bad.py", "line": 16, "function": "ScaleWrong.backward", "reason": "backward"},
    "inputs": [{"index": 0, "name": "x", "kind": "tensor", "shape": [3]}],
    "outputs": [{"index": 0, "kind": "tensor", "shape": [3]}],
    "options": {"eps": 1e-06}, "checks": [{"name": "gradcheck", "status": "fail", "seconds": 0.04}],
    "exception": None, "crash": None, "exit": {"code": 0}, "notes": [], "warnings": [],
    "stderr_tail": "", "output_bytes": 0, "timings": {"total_s": 0.07},
    "environment": {"python": "3.11.7", "torch": "2.13.0"},
    "synthesis": {"seed": 0, "caller": None},
    "a_field_added_later": {"checked_inputs": ["x"]},  # a key RunResult has no attribute for
}


def test_the_json_round_trip_is_exact_and_keeps_fields_the_worker_adds():
    result = RunResult.from_json(WORKER_JSON)
    assert result.status == "fail" and result.failed and result.failed_check == "gradcheck"
    assert result.extra == {"exit": {"code": 0}, "synthesis": {"seed": 0, "caller": None},
                            "a_field_added_later": {"checked_inputs": ["x"]}}
    assert json.loads(json.dumps(result.to_json())) == WORKER_JSON
    assert list(result.to_json())[:len(WORKER_JSON) - 3] == [k for k in WORKER_JSON
                                                             if k not in ("exit", "synthesis", "a_field_added_later")]


def test_a_result_is_frozen_and_derived_with_replace():
    result = RunResult.from_json(WORKER_JSON)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = "pass"  # type: ignore[misc]
    noted = dataclasses.replace(result, notes=(*result.notes, "tried another source"))
    assert noted.to_json()["notes"] == ["tried another source"] and result.notes == ()


def test_failed_check_is_left_out_when_no_check_decided():
    data = {k: v for k, v in WORKER_JSON.items() if k != "failed_check"}
    assert "failed_check" not in RunResult.from_json(data).to_json()


def test_every_status_is_judged_and_marked_once():
    assert set(get_args(Status)) == set(STATUSES) == set(JUDGEMENTS) == set(MARKS)
    assert set(JUDGEMENTS.values()) == set(get_args(Judgement))
    by_judgement = {}
    for status in STATUSES:
        result = make_result(None, status, "x")
        flags = (result.passed, result.warned, result.failed, result.undecided, result.cancelled)
        assert sum(flags) == 1, status  # each status is exactly one of these
        by_judgement.setdefault(result.judgement, set()).add(status)
    assert by_judgement == {"passed": {"pass"}, "warned": {"warning"}, "cancelled": {"cancelled"},
                            "undecided": {"no_inputs", "inconclusive"},
                            "failed": {"fail", "error", "crash", "timeout", "memory", "output_limit"}}
    assert make_result(None, "warning", "x").gradients_match and not make_result(None, "warning", "x").fails()
    assert make_result(None, "warning", "x").fails(strict=True)
    assert make_result(None, "inconclusive", "x").fails(strict=True)
    assert not make_result(None, "no_inputs", "x").fails(strict=True)


def test_an_unknown_status_is_never_a_pass():
    result = RunResult.from_json({**WORKER_JSON, "status": "passed_somehow", "verdict": "ok"})
    assert result.status == "error" and result.failed and "passed_somehow" in result.summary


def test_supervisor_results_have_every_schema_key():
    result = make_result({"module": {"path": "/ws/a.py"}, "target": {"kind": "callable", "qualname": "f"},
                          "id": "r1"}, "crash", "✗ crashed", crash={"worker_pid": 1}, stderr_tail="boom")
    data = result.to_json()
    assert data["target"] == {"kind": "callable", "qualname": "f", "file": "/ws/a.py"}
    assert (data["id"], data["crash"], data["stderr_tail"]) == ("r1", {"worker_pid": 1}, "boom")
    for key in ("schema", "version", "status", "verdict", "summary", "message", "location", "inputs", "outputs",
                "options", "checks", "exception", "notes", "warnings", "output_bytes", "timings", "environment"):
        assert key in data, key


# -- proving: the results cache and de-duplication -------------------------------------------

OPS = """\
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def test_square():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(Square.apply, (x,))
"""


def _plans(root: Path):
    path = root / "ops.py"
    path.write_text(OPS)
    return [plan(target, path, OPS, root, display=target.name) for target in find_targets(OPS)]


class _Runs:
    """Stands in for a worker: every request passes, with an id per run."""

    def __init__(self, status: str = "pass"):
        self.requests: list[dict] = []
        self.status = status

    def __call__(self, request: dict) -> RunResult:
        self.requests.append(request)
        return make_result(request, self.status, "✓" if self.status == "pass" else "x",
                           rid=f"r{len(self.requests)}")


def test_a_call_a_function_run_ran_is_not_run_again(tmp_path):
    plans = _plans(tmp_path)
    assert [p.target.kind for p in plans] == ["function_class", "call_site"]
    runs = _Runs()

    async def run(item, request):
        return runs(request)

    proofs = asyncio.run(Prover().prove_all(list(reversed(plans)), run))  # the call listed first
    assert len(runs.requests) == 1 and runs.requests[0]["target"]["kind"] == "call_site"
    call, function = proofs
    assert call.plan.target.kind == "call_site" and function.plan.target.kind == "function_class"
    assert call.result.id == function.result.id == "r1"
    assert call.inputs_source == function.inputs_source == "from the gradcheck call at line 18"


def test_identical_plans_run_once_and_dedupe_names_the_function(tmp_path):
    plans = _plans(tmp_path)
    function = plans[0]
    runs = _Runs()

    async def run(item, request):
        return runs(request)

    proofs = asyncio.run(Prover().prove_all([function, function], run))
    assert len(runs.requests) == 1 and proofs[0].result is proofs[1].result
    assert dedupe([function, function]) == [function]


def test_a_second_prover_reads_the_cache_and_transient_outcomes_are_not_kept(tmp_path):
    function = _plans(tmp_path)[0]
    cache = ResultCache(tmp_path / "cache")
    runs = _Runs()
    first = Prover(cache, "python:torch").prove_sync(function, runs)
    again = Prover(cache, "python:torch").prove_sync(function, runs)
    assert len(runs.requests) == 1 and not first.cached and again.cached
    assert again.result == first.result and again.inputs_source == first.inputs_source
    other = Prover(cache, "python:another torch").prove_sync(function, runs)  # another environment
    assert len(runs.requests) == 2 and not other.cached
    assert Prover(None, "python:torch").prove_sync(function, runs).cached is False  # no cache
    timeouts = _Runs("timeout")
    Prover(ResultCache(tmp_path / "cache2"), "e").prove_sync(function, timeouts)
    Prover(ResultCache(tmp_path / "cache2"), "e").prove_sync(function, timeouts)
    assert len(timeouts.requests) == 2


def test_a_result_cached_by_other_checker_code_is_not_reused(tmp_path, monkeypatch):
    # an upgraded gradlint (or an edited checkout) must not answer with an older gradlint's verdict
    import gradlint.runner.cache as cache_module

    function = _plans(tmp_path)[0]
    cache = ResultCache(tmp_path / "cache")
    runs = _Runs()
    Prover(cache, "python:torch").prove_sync(function, runs)
    assert Prover(cache, "python:torch").prove_sync(function, runs).cached
    assert len(cache_module.checker_fingerprint()) > 0
    monkeypatch.setattr(cache_module, "checker_fingerprint", lambda: "another worker")
    assert not Prover(cache, "python:torch").prove_sync(function, runs).cached
    assert len(runs.requests) == 2


def test_a_source_that_gives_no_inputs_falls_back_and_says_so(tmp_path):
    function = _plans(tmp_path)[0]
    requests = []

    def run(request):
        requests.append(request)
        status = "no_inputs" if len(requests) == 1 else "pass"
        return make_result(request, status, "the call was not reached" if status == "no_inputs" else "✓")

    proof = Prover().prove_sync(function, run)
    assert [r["target"]["kind"] for r in requests] == ["call_site", "function_class"]
    assert proof.result.passed and proof.inputs_source.startswith("synthesized")
    assert proof.result.notes == ("inputs from the gradcheck call at line 18: the call was not reached; "
                                  "tried the next source",)
