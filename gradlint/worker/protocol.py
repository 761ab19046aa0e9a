"""The wire protocol: constants, JSON encoding, and the result skeleton.

The constants are kept equal to gradlint/runner/protocol.py by a test (the worker cannot
import gradlint).
"""

import json
import os
import sys

PROTOCOL_VERSION = 1
SCHEMA_ID = "gradlint.run-result"
SCHEMA_VERSION = 1

STATUSES = (
    "pass", "fail", "error", "no_inputs", "crash", "timeout", "memory",
    "cancelled", "output_limit", "inconclusive", "warning",
)
VERDICTS = (
    "ok", "wrong_gradient", "non_differentiable_point", "input_mutated",
    "random_op", "nondeterministic_backward", "not_twice_differentiable",
    "low_precision_input", "undefined_grad", "batched_grad", "gradcheck_failed",
    "exception", "bad_inputs", "bad_request", "target_not_found",
    "worker_unavailable", "vacuous", "draw_dependent", "shape_dependent", "missing_dependency",
    "approximate_gradient", "op_schema", "op_autograd_registration", "op_fake_tensor", "op_compile",
    "vmap_mismatch", "jacrev_mismatch", "surrogate_gradient", "not_checked", "inputs_unfit",
    "grad_output_mutated", "compile_mismatch", "func_mismatch", "compile_unsupported", "precision_loss",
)

DEFAULT_LIMITS = {
    "timeout_s": 60.0,
    "memory_bytes": 4 * 2 ** 30,
    "output_bytes": 8 * 2 ** 20,
}
STDERR_TAIL_BYTES = 64 * 1024

DEFAULT_OPTIONS = {
    "eps": 1e-6,
    "atol": 1e-5,
    "rtol": 1e-3,
    "nondet_tol": 0.0,
    "check_undefined_grad": True,
    "check_grad_dtypes": False,
    "check_batched_grad": False,
    "fast_mode": "auto",
    "gradgradcheck": "auto",
    "check_forward_ad": "auto",
    "check_input_mutation": True,
    "check_random": True,
    "check_nondeterminism": True,
    "check_low_precision": True,
    "promote": True,
    "seed": 0,
    "worst_k": 5,
    "slow_confirm_max_elements": 4096,
    "max_recompute_evals": 20000,
    "num_threads": None,
    "strict": False,
    "draws": 2,
    "opcheck": True,
    "opcheck_tests": None,
    "opcheck_layouts": True,
    "compile": False,
    "dtype": None,
    "precision_factor": 2.0,
    "reference": None,
}
# gradcheck/gradgradcheck keywords a call site may carry that map onto options
CALL_SITE_OPTIONS = (
    "eps", "atol", "rtol", "nondet_tol", "check_undefined_grad",
    "check_grad_dtypes", "check_batched_grad", "fast_mode", "check_forward_ad",
)


def dumps(obj):
    return json.dumps(json_safe(obj), ensure_ascii=True, allow_nan=False, default=repr)


def json_safe(obj):
    """Non-finite floats become the strings "nan", "inf", "-inf"."""
    if isinstance(obj, float):
        if obj != obj:
            return "nan"
        if obj in (float("inf"), float("-inf")):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


def base_result(req):
    req = req or {}
    target = dict(req.get("target") or {})
    mod = req.get("module") or {}
    if mod.get("path"):
        target.setdefault("file", mod.get("path"))
    torch = sys.modules.get("torch")
    return {
        "schema": SCHEMA_ID,
        "version": SCHEMA_VERSION,
        "id": req.get("id"),
        "status": None,
        "verdict": None,
        "summary": "",
        "message": None,
        "target": target,
        "location": None,
        "inputs": [],
        "outputs": [],
        "options": {},
        "checks": [],
        "exception": None,
        "crash": None,
        "notes": [],
        "warnings": [],
        "stderr_tail": "",
        "output_bytes": 0,
        "timings": {},
        "environment": {
            "python": "%d.%d.%d" % sys.version_info[:3],
            "executable": sys.executable,
            "torch": getattr(torch, "__version__", None),
            "pid": os.getpid(),
        },
    }
