"""One report per bug: a test's gradcheck call that fails on a Function already reported.

``gradlint run`` proves a package's Functions and the gradcheck calls in its tests. When a
Function's run fails and a test's gradcheck call that checks that very Function fails too, both
results describe one bug; the call's report points to the Function's (``repeats``) instead of
repeating it. The Function is recognised by the class the call's run captured (the worker puts
its qualified name and source file in the call's ``target``).
"""

from __future__ import annotations

import os
from typing import Iterable, Protocol

from .result import RunResult


class _Proved(Protocol):  # a Proof (prove.py): what these functions read of it
    result: RunResult

    @property
    def plan(self): ...


def _function_key(path: str | None, qualname: str | None) -> tuple[str, str] | None:
    if not path or not qualname:
        return None
    return os.path.realpath(path), qualname


def repeats(proofs: Iterable[_Proved]) -> dict[int, int]:
    """{index of a gradcheck call's proof: index of the Function proof it repeats}, for calls that
    fail on a Function whose own run failed."""
    proofs = list(proofs)
    failed_functions: dict[tuple[str, str], int] = {}
    for i, proof in enumerate(proofs):
        plan = proof.plan
        if plan.target.kind == "function_class" and proof.result.failed:
            key = _function_key(str(plan.path), plan.target.qualname or plan.target.name)
            if key is not None:
                failed_functions.setdefault(key, i)
    out: dict[int, int] = {}
    for i, proof in enumerate(proofs):
        if proof.plan.target.kind != "call_site" or not proof.result.failed:
            continue
        target = proof.result.target
        key = _function_key(target.get("function_file"), target.get("function_class"))
        if key is not None and key in failed_functions:
            out[i] = failed_functions[key]
    return out
