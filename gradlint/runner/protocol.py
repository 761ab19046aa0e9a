"""The request/result protocol shared with the worker (stdlib only, no torch).

See docs/run-result-schema.md for every field. The worker (``gradlint/worker/``) runs in
the user's interpreter and cannot import this module, so the constants (here and in
``result.py``) are duplicated in ``gradlint/worker/protocol.py``; a test keeps the two
copies equal.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from .result import SCHEMA_ID, SCHEMA_VERSION, STATUSES, RunResult, Status

__all__ = ["DEFAULT_LIMITS", "INPUT_KINDS", "PROTOCOL_VERSION", "SCHEMA_ID", "SCHEMA_VERSION", "STATUSES",
           "TARGET_KINDS", "VERDICTS", "make_request", "make_result", "worker_path"]

PROTOCOL_VERSION = 1
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

TARGET_KINDS = ("function_class", "callable", "call_site", "custom_op")
INPUT_KINDS = ("call_site", "expression", "synthesize")


def worker_path() -> str:
    """Absolute path of the worker's entry script (``gradlint/worker/__main__.py``)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "worker", "__main__.py")


def make_request(
    path: str,
    target: Mapping[str, Any],
    *,
    inputs: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    workspace_root: str | None = None,
    module_name: str | None = None,
    sys_path: Sequence[str] | None = None,
    limits: Mapping[str, Any] | None = None,
) -> dict:
    """Build a ``run`` request for a file.

    ``target`` is one of ``{"kind": "function_class", "qualname": ...}``,
    ``{"kind": "callable", "qualname": ...}``,
    ``{"kind": "custom_op", "qualname": ... and/or "op": "ns::name", "line": L, ...}`` or
    ``{"kind": "call_site", "line": L, "end_line": E, "enclosing": "TestX.test_y" | None}``.
    ``inputs`` is ``{"kind": "expression", "source": ...}``, ``{"kind": "synthesize", ...}``
    or ``{"kind": "call_site"}``; None picks the default for the target.
    ``sys_path`` defaults to the workspace root and the file's folder.
    """
    path = os.path.abspath(path)
    if target.get("kind") not in TARGET_KINDS:
        raise ValueError(f"unknown target kind {target.get('kind')!r}")
    if inputs is not None and inputs.get("kind") not in INPUT_KINDS:
        raise ValueError(f"unknown inputs kind {inputs.get('kind')!r}")
    if sys_path is None:
        entries = []
        if workspace_root:
            entries.append(os.path.abspath(workspace_root))
        folder = os.path.dirname(path)
        if folder not in entries:
            entries.append(folder)
        sys_path = entries
    req: dict[str, Any] = {
        "op": "run",
        "module": {"path": path},
        "sys_path": list(sys_path),
        "target": dict(target),
    }
    if module_name:
        req["module"]["name"] = module_name
    if workspace_root:
        req["cwd"] = os.path.abspath(workspace_root)
        req["user_roots"] = [os.path.abspath(workspace_root)]
    if inputs is not None:
        req["inputs"] = dict(inputs)
    if options:
        req["options"] = dict(options)
    if limits:
        req["limits"] = dict(limits)
    return req


def make_result(
    request: Mapping[str, Any] | None,
    status: Status,
    summary: str,
    *,
    verdict: str | None = None,
    message: str | None = None,
    rid: Any = None,
    **fields: Any,
) -> RunResult:
    """The result of an outcome the supervisor decides (the worker could not start, died,
    stopped answering, the run was cancelled): the worker's shape, for ``request``.
    ``fields`` are other schema keys (``crash``, ``stderr_tail``, …)."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    request = request or {}
    target = dict(request.get("target") or {})
    module = request.get("module") or {}
    if module.get("path"):
        target.setdefault("file", module["path"])
    return RunResult.from_json({
        "id": rid if rid is not None else request.get("id"),
        "status": status, "verdict": verdict, "summary": summary, "message": message,
        "target": target,
        "environment": {"python": None, "executable": None, "torch": None, "pid": None},
        **fields,
    })

