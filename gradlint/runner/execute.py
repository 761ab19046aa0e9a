"""Executing a plan: its input sources in order until one gives inputs.

A plan (plans.py) lists where inputs may come from: gradcheck calls that use the target,
a declaration, synthesis. When a source cannot give inputs (the call is never reached, its
test module cannot be imported), the next one is tried, and the result says which were
tried. The same steps drive a worker (``execute``, async) and an in-process run
(``execute_sync``, for ``pytest --gradlint``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Awaitable, Callable

from .plans import RunPlan
from .result import RunResult

# phases in which a call-site route fails before it reaches the call: try the next source
ROUTE_PHASES = ("import", "setup", "enclosing", "inputs")


@dataclass(frozen=True)
class Executed:
    """What executing a plan gave: the result, where its inputs came from, and the request
    that gave it (the last one tried)."""

    result: RunResult
    inputs_source: str
    request: dict


def falls_through(result: RunResult) -> bool:
    """Did this input source fail to give inputs (so that the next one should be tried)?"""
    if result.status == "no_inputs":
        return True
    phase = (result.exception or {}).get("phase")
    return result.status == "error" and result.verdict in ("exception", "missing_dependency") \
        and phase in ROUTE_PHASES


async def execute(run_plan: RunPlan, run: Callable[[dict], Awaitable[RunResult]]) -> Executed:
    """Run a plan's input sources in order until one gives inputs.

    ``run(request)`` is an awaitable that returns the worker's result.
    """
    steps = _Steps(run_plan)
    while (request := steps.next_request()) is not None:
        steps.record(await run(request))
    return steps.executed()


def execute_sync(run_plan: RunPlan, run: Callable[[dict], RunResult]) -> Executed:
    """``execute`` with a function that runs a request in this process."""
    steps = _Steps(run_plan)
    while (request := steps.next_request()) is not None:
        steps.record(run(request))
    return steps.executed()


class _Steps:
    def __init__(self, run_plan: RunPlan):
        self.routes = [(run_plan.request, run_plan.inputs_source), *run_plan.fallbacks]
        self.index = 0
        self.tried: list[str] = []
        self.last: RunResult | None = None

    def next_request(self) -> dict | None:
        if self.last is not None:
            last_route = self.index + 1 == len(self.routes)
            if last_route or not falls_through(self.last) or self.last.cancelled:
                return None
            _, source = self.routes[self.index]
            self.tried.append(f"inputs {source}: {self.last.summary or self.last.status}; tried the next source")
            self.index += 1
        return self.routes[self.index][0]

    def record(self, result: RunResult) -> None:
        self.last = result

    def executed(self) -> Executed:
        assert self.last is not None
        request, source = self.routes[self.index]
        result = self.last
        if self.tried:
            result = replace(result, notes=(*result.notes, *self.tried))
        caller = (result.extra.get("synthesis") or {}).get("caller")
        if caller:  # the worker took them from the package's own code that calls the target
            source = f"captured from {caller}, which calls it"
        return Executed(result, source, request)
