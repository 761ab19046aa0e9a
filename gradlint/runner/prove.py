"""Proving plans: cached results, and no gradcheck call run twice.

Used alike by ``gradlint run``, the editor and ``pytest --gradlint``. A ``Prover``
answers a plan

1. with the proof of an identical plan it already proved;
2. from the results cache (cache.py) when the plan's sources and requests are unchanged
   and the environment (interpreter + torch version) is the same;
3. for a gradcheck call found as a target of its own, with the run of a Function that
   already ran that very call (its inputs came from it);
4. else by executing the plan (execute.py).

Its memory of runs (1, 3) lasts as long as the prover: one ``gradlint run``, one editor
command, one pytest session, during which the texts it planned from do not change.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, Iterable

from .cache import ResultCache
from .execute import Executed, execute, execute_sync
from .plans import RunPlan
from .result import RunResult


@dataclass(frozen=True)
class Proof:
    """A plan's outcome: the result and where its inputs came from."""

    plan: RunPlan
    result: RunResult
    inputs_source: str
    cached: bool = False  # read from the results cache, not run now

    def to_json(self) -> dict[str, Any]:
        """As ``gradlint run --format json`` and the editor's commands return it."""
        return {"target": self.plan.display, "kind": self.plan.target.kind, "inputs_source": self.inputs_source,
                "cached": self.cached, "result": self.result.to_json()}


class Prover:
    """Proves plans with a results cache (None, or no ``environment``: none) and without
    running a gradcheck call twice."""

    def __init__(self, cache: ResultCache | None = None, environment: str | None = None):
        self.cache = cache if environment is not None else None
        self.environment = environment or ""
        self._by_identity: dict[str, Proof] = {}  # plans proved, by what they run
        self._by_call: dict[str, Proof] = {}  # a gradcheck call -> the Function run that ran it

    def recall(self, plan: RunPlan) -> Proof | None:
        """The plan's proof without running anything, when there is one."""
        proof = self._by_identity.get(identity(plan))
        if proof is not None:
            return replace(proof, plan=plan)
        if self.cache is not None:
            hit = self.cache.get(plan.key, self.environment)
            if hit is not None:
                result, source = hit
                return Proof(plan, result, source or plan.inputs_source, cached=True)
        if plan.target.kind == "call_site":
            proof = self._by_call.get(call_site_key(plan.request))
            if proof is not None:
                return replace(proof, plan=plan)
        return None

    def remember(self, plan: RunPlan, executed: Executed) -> Proof:
        proof = Proof(plan, executed.result, executed.inputs_source)
        if self.cache is not None:
            self.cache.put(plan.key, self.environment, executed.result, executed.inputs_source)
        if not executed.result.transient:
            self._by_identity[identity(plan)] = proof
            if executed.request["target"].get("kind") == "call_site" and plan.target.kind != "call_site":
                self._by_call[call_site_key(executed.request)] = proof
        return proof

    async def prove(self, plan: RunPlan, run: Callable[[dict], Awaitable[RunResult]]) -> Proof:
        """``run(request)`` runs one request in a worker."""
        return self.recall(plan) or self.remember(plan, await execute(plan, run))

    def prove_sync(self, plan: RunPlan, run: Callable[[dict], RunResult]) -> Proof:
        """``prove`` with a function that runs a request in this process."""
        return self.recall(plan) or self.remember(plan, execute_sync(plan, run))

    async def prove_all(self, plans: list[RunPlan], run: Callable[[RunPlan, dict], Awaitable[RunResult]],
                        on_proved: Callable[[Proof], None] | None = None) -> list[Proof]:
        """Every plan's proof, in order; runs in parallel as far as ``run`` allows.
        Functions first: a test's gradcheck call that a Function's run used is not run again."""
        proofs: list[Proof | None] = [None] * len(plans)

        async def one(index: int) -> Proof:
            item = plans[index]
            return await self.prove(item, lambda request: run(item, request))

        functions = [i for i, item in enumerate(plans) if item.target.kind != "call_site"]
        calls = [i for i, item in enumerate(plans) if item.target.kind == "call_site"]
        for group in (functions, calls):
            first: dict[str, int] = {}  # identical plans run once
            for index in group:
                first.setdefault(identity(plans[index]), index)
            leaders = list(first.values())
            for index, proof in zip(leaders, await asyncio.gather(*(one(i) for i in leaders))):
                proofs[index] = proof
                if on_proved is not None:
                    on_proved(proof)
            for index in group:
                if proofs[index] is None:
                    proofs[index] = replace(proofs[first[identity(plans[index])]], plan=plans[index])
                    if on_proved is not None:
                        on_proved(proofs[index])
        return [proof for proof in proofs if proof is not None]


def identity(plan: RunPlan) -> str:
    """What a plan runs: its file, target and inputs (not its name)."""
    request = plan.request
    return json.dumps([request["module"]["path"], request["target"], request.get("inputs")], sort_keys=True)


def call_site_key(request: dict) -> str:
    target = request.get("target") or {}
    return json.dumps([request["module"]["path"], target.get("line"), target.get("end_line"), target.get("enclosing")])


def dedupe(plans: Iterable[RunPlan]) -> list[RunPlan]:
    """One plan per identity (a target found twice: named and in its folder); a Function is
    named rather than a gradcheck call that runs the same."""
    seen: dict[str, RunPlan] = {}
    for item in plans:
        key = identity(item)
        if key not in seen:
            seen[key] = item
        elif item.target.kind != "call_site" and seen[key].target.kind == "call_site":
            seen[key] = item  # prefer naming the Function
    return list(seen.values())
