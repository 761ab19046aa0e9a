"""Prove gradients: run gradcheck in a killable worker in the user's interpreter.

This package is the supervisor side. It uses the standard library only and never
imports torch; the worker (``gradlint/worker/``) runs torch in a separate process.

    from gradlint.runner import WorkerClient, make_request

    async with WorkerClient(python="/path/to/venv/bin/python", cwd=root) as client:
        result = await client.run(
            make_request("/ws/ops.py", {"kind": "function_class", "qualname": "MyReLU"},
                         workspace_root=root),
            timeout=30,
        )
        print(result.summary)  # a RunResult (gradlint/runner/result.py)

The request and result formats are documented in docs/run-result-schema.md. Planning runs
(targets.py, plans.py, execute.py) and proving them with a cache (prove.py) import the
static analysis (libcst): import those modules where used, not from here.
"""

from .client import WorkerClient, WorkerInfo, WorkerStartError, adopt_orphans, kill_orphans, run_sync
from .protocol import (
    DEFAULT_LIMITS,
    PROTOCOL_VERSION,
    VERDICTS,
    make_request,
    make_result,
    worker_path,
)
from .result import JUDGEMENTS, SCHEMA_ID, SCHEMA_VERSION, STATUSES, Judgement, RunResult, Status

__all__ = [
    "DEFAULT_LIMITS",
    "JUDGEMENTS",
    "Judgement",
    "PROTOCOL_VERSION",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "STATUSES",
    "RunResult",
    "Status",
    "VERDICTS",
    "WorkerClient",
    "WorkerInfo",
    "WorkerStartError",
    "adopt_orphans",
    "kill_orphans",
    "make_request",
    "make_result",
    "run_sync",
    "worker_path",
]
