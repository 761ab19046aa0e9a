"""Where a check's CPU time goes, by phase and by rule (`gradlint check --timings`).

A ``Timings`` is recorded into while it is the current one (``recording``): the engine marks
the phases it enters (``enter``/``leave``, nested: time spent in an inner phase is that
phase's alone, so every second is counted once). Nothing is measured when none is current.

What a rule's time includes: its ``check`` and the analysis it asks for. Models several
rules share (a block's gradcheck calls, its Functions, the facts of an input) are worked out
once per lint, by the first rule that asks: they count for that rule.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

IMPORTS = "importing libcst and the rules"
READING = "reading files"
PRE_CHECKS = "pre-checks and choosing blocks"
PARSING = "parsing (libcst)"
CONTEXT = "module context"
POSITIONS = "positions of findings"
SUPPRESSIONS = "suppressions and sorting"
COLLECTION = "garbage collection"
RULE = "rule "  # + a code


class Timings:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}  # by phase, or RULE + code
        self.files = 0
        self.parsed_files = 0
        self.parsed_lines = 0
        self.total = 0.0  # CPU seconds of the files' checks, phases or not
        self.workers = 1  # processes the files were checked in
        self.slowest: list[tuple[float, str]] = []  # (seconds, file), the slowest first
        self._stack: list[list] = []  # [phase, start] of the phases entered

    # recording -------------------------------------------------------------------------
    def enter(self, phase: str) -> None:
        now = time.process_time()
        if self._stack:
            outer = self._stack[-1]
            self._charge(outer[0], now - outer[1])
        self._stack.append([phase, now])

    def leave(self) -> None:
        now = time.process_time()
        phase, start = self._stack.pop()
        self._charge(phase, now - start)
        if self._stack:
            self._stack[-1][1] = now

    def _charge(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    def on_collection(self, phase: str, info: dict) -> None:
        """For ``gc.callbacks``: the cyclic collector's runs are a phase of their own."""
        if phase == "start":
            self.enter(COLLECTION)
        elif self._stack and self._stack[-1][0] == COLLECTION:
            self.leave()

    def file_done(self, display: str, seconds: float) -> None:
        self.files += 1
        self.total += seconds
        self.slowest.append((seconds, display))
        self.slowest = sorted(self.slowest, reverse=True)[:SLOWEST]

    # combining (workers send theirs back) ------------------------------------------------
    def as_dict(self) -> dict:
        return {"seconds": self.seconds, "files": self.files, "parsed_files": self.parsed_files,
                "parsed_lines": self.parsed_lines, "total": self.total, "slowest": self.slowest}

    def merge(self, data: dict) -> None:
        for phase, seconds in data["seconds"].items():
            self._charge(phase, seconds)
        self.files += data["files"]
        self.parsed_files += data["parsed_files"]
        self.parsed_lines += data["parsed_lines"]
        self.total += data["total"]
        self.slowest = sorted(self.slowest + [tuple(s) for s in data["slowest"]], reverse=True)[:SLOWEST]


SLOWEST = 5
_CURRENT: Timings | None = None


def current() -> Timings | None:
    """The Timings being recorded into, or None (then nothing is measured)."""
    return _CURRENT


@contextmanager
def recording(timings: Timings | None) -> Iterator[None]:
    global _CURRENT
    previous, _CURRENT = _CURRENT, timings
    try:
        yield
    finally:
        _CURRENT = previous


@contextmanager
def one_file(timings: Timings | None, display: str) -> Iterator[None]:
    """Record the check of one file into ``timings`` (nothing when None), the cyclic
    collector's runs included."""
    if timings is None:
        yield
        return
    import gc

    started = time.process_time()
    gc.callbacks.append(timings.on_collection)
    try:
        with recording(timings):
            yield
    finally:
        gc.callbacks.remove(timings.on_collection)
        timings.file_done(display, time.process_time() - started)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time what runs inside as ``name`` (when recording)."""
    timings = _CURRENT
    if timings is None:
        yield
        return
    timings.enter(name)
    try:
        yield
    finally:
        timings.leave()
