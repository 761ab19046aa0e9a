"""One run's result, typed: what the CLI, the editor and the pytest plugin read.

The worker answers in JSON (docs/run-result-schema.md, section 3). ``RunResult.from_json``
turns an answer into a ``RunResult`` once, where it arrives: at the pipe
(``gradlint/runner/client.py``) for worker runs, and where an in-process run returns
(``gradlint/testing/``) for ``pytest --gradlint`` and ``check_gradients``. Every later layer
reads attributes and derives new values with ``dataclasses.replace``; ``to_json`` gives the
schema's JSON back only at process boundaries (``gradlint run --format json``, the editor's
payloads, the result cache).

Which statuses pass, fail or decide nothing is said once, here (``JUDGEMENTS``), and read
through ``RunResult.passed``, ``failed``, ``undecided``, … by every front end.

A field the worker adds needs no edit here: a key ``RunResult`` has no attribute for is
kept in ``extra`` and written back by ``to_json`` unchanged, so it reaches JSON output as
is. To read one typed, promote it: add an attribute below with a default (its name is the
JSON key; a list becomes a tuple), add it to ``OMITTED_WHEN_NONE`` if the schema leaves it
out when unset, and document it in docs/run-result-schema.md. ``from_json`` and ``to_json``
follow the attributes, so nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, Mapping, get_args

SCHEMA_ID = "gradlint.run-result"
SCHEMA_VERSION = 1

Status = Literal[
    "pass", "fail", "error", "no_inputs", "crash", "timeout", "memory",
    "cancelled", "output_limit", "inconclusive", "warning",
]
STATUSES: tuple[Status, ...] = get_args(Status)

# What a status means for a proof, decided once:
#   passed     every check passed: a proof
#   warned     first-order gradients match, with a warning (⚠ not twice differentiable,
#              approximate gradient): not a failure unless strict
#   failed     a gradient problem, or the run could not check (user code raised, crashed,
#              ran out of time, memory or output)
#   undecided  no verdict on the gradients: no inputs to check with, or checks that prove
#              nothing (inconclusive)
#   cancelled  stopped by the user; says nothing about the code
Judgement = Literal["passed", "warned", "failed", "undecided", "cancelled"]
JUDGEMENTS: Mapping[Status, Judgement] = MappingProxyType({
    "pass": "passed",
    "warning": "warned",
    "fail": "failed", "error": "failed", "crash": "failed", "timeout": "failed",
    "memory": "failed", "output_limit": "failed",
    "no_inputs": "undecided", "inconclusive": "undecided",
    "cancelled": "cancelled",
})
# what `strict` (``gradlint run --strict``, the ``strict`` option) counts as failures too
STRICT_FAILURES: frozenset[Status] = frozenset({"warning", "inconclusive"})
# outcomes of the run's circumstances rather than of the code: never cached nor reused
TRANSIENT: frozenset[Status] = frozenset({"cancelled", "timeout", "crash"})

assert set(JUDGEMENTS) == set(STATUSES), "every status needs a judgement"

# schema keys left out of the JSON when unset (the rest are always written)
OMITTED_WHEN_NONE = frozenset({"failed_check"})


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """A run's result (docs/run-result-schema.md, section 3). Nested values (``target``,
    ``checks``' entries, …) are the schema's JSON objects, shared and read-only."""

    schema: str = SCHEMA_ID
    version: int = SCHEMA_VERSION
    id: str | None = None
    status: Status
    verdict: str | None = None  # 3.2; a string, not a Literal: the worker adds verdicts
    summary: str = ""
    message: str | None = None
    failed_check: str | None = None  # the check that decided the outcome, when one did
    target: Mapping[str, Any] = field(default_factory=dict)
    location: Mapping[str, Any] | None = None
    inputs: tuple[Mapping[str, Any], ...] = ()
    outputs: tuple[Mapping[str, Any], ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    checks: tuple[Mapping[str, Any], ...] = ()
    exception: Mapping[str, Any] | None = None
    crash: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[Mapping[str, Any], ...] = ()
    stderr_tail: str = ""
    output_bytes: int = 0
    timings: Mapping[str, float] = field(default_factory=dict)
    environment: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)  # every other key, as the worker sent it

    # -- from and to JSON (process boundaries only) ----------------------------------------
    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunResult":
        """The result for a schema JSON object (a worker's answer, a cache file)."""
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key in _FIELDS:
                if value is not None or key in _NULLABLE:
                    values[key] = tuple(value) if key in _SEQUENCES and value is not None else value
            else:
                extra[key] = value
        status = values.get("status")
        if status not in STATUSES:  # a worker newer or older than this runner: never a pass
            values.update(status="error", verdict=None,
                          summary=f"✗ the gradcheck worker answered with an unknown status {status!r}",
                          message="The worker and this gradlint disagree on the result format; "
                                  "reinstall gradlint in the interpreter that runs the checks.")
        return cls(**values, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The schema's JSON object (new top-level containers; nested values shared)."""
        data: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is None and name in OMITTED_WHEN_NONE:
                continue
            data[name] = list(value) if name in _SEQUENCES else value
        data.update(self.extra)
        return data

    # -- what the status means (see JUDGEMENTS) ------------------------------------------------
    @property
    def judgement(self) -> Judgement:
        return JUDGEMENTS[self.status]

    @property
    def passed(self) -> bool:
        return self.judgement == "passed"

    @property
    def warned(self) -> bool:
        return self.judgement == "warned"

    @property
    def gradients_match(self) -> bool:
        """Passed, or matched with a warning."""
        return self.judgement in ("passed", "warned")

    @property
    def failed(self) -> bool:
        return self.judgement == "failed"

    @property
    def undecided(self) -> bool:
        return self.judgement == "undecided"

    @property
    def cancelled(self) -> bool:
        return self.judgement == "cancelled"

    @property
    def transient(self) -> bool:
        """Cancelled, timed out or crashed: not kept in a cache, not reused for another target."""
        return self.status in TRANSIENT

    def fails(self, strict: bool = False) -> bool:
        """A failure, with ``strict`` also warnings and inconclusive runs."""
        return self.failed or (strict and self.status in STRICT_FAILURES)


_FIELDS = tuple(f.name for f in fields(RunResult) if f.name != "extra")
_SEQUENCES = frozenset({"inputs", "outputs", "checks", "notes", "warnings"})
_NULLABLE = frozenset({"id", "verdict", "message", "location", "exception", "crash", "failed_check"})
