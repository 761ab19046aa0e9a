"""The checks a run adds when asked, where they come from, and how long such a run may take.

``compile`` (torch.compile and torch.func against eager), ``dtype`` and ``precision_factor``
(the precision-relative verdict) and ``reference`` are worker options
(docs/run-result-schema.md, 2.3). Every way to run takes them, weakest first, from:

1. the project: ``[tool.gradlint.run]`` in the ``pyproject.toml`` that configures the file;
2. the surface's own settings: the editor's ``gradlint.run.compile``/``run.dtype``/
   ``run.precisionFactor`` (and its ``runOptions``), pytest's ``gradlint_options`` lines and
   ``@pytest.mark.gradlint`` markers;
3. a flag: ``gradlint run --compile``, ``--dtype``, ``--precision-factor``, ``-o NAME=VALUE``.

A value that asks for nothing (``compile`` false, ``dtype`` none) is dropped after the
layers are merged: it switches off what a weaker layer asked for, and a run that adds no
check has the options, and so the cache key (plans.py), of a plain run.

A run that compiles takes longer than the 60 s a plain run may take: unless a timeout is
given, ``default_timeout`` adds an allowance per compile backend (``COMPILE_ALLOWANCE_S``)
and one for the precision probes.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..engine.config import COMPILE_BACKENDS
from .protocol import DEFAULT_LIMITS

__all__ = ["COMPILE_ALLOWANCE_S", "COMPILE_BACKENDS", "PRECISION_ALLOWANCE_S", "compile_backends",
           "default_timeout", "layered", "timeout_note"]

# Seconds added to a run's default timeout per compile backend: about three times the slowest
# target's comparisons on that backend, measured with `gradlint run --compile` on
# tests/runner/fixtures/compile_targets.py (two runs at a time, load 8-9 on 2 cores, a cold
# inductor cache; benchmarks/compile-precision.md): aot_eager's up to five comparisons took
# 11-19 s together (the first one imports Dynamo), inductor's two 17-45 s (C++ compilation).
# Such runs took 33-61 s from fork: the 60 s of a plain run would have killed the slowest.
COMPILE_ALLOWANCE_S = {"aot_eager": 60.0, "inductor": 120.0}
# the precision probes: three probes × four draws of forward and backward at two dtypes
# (measured: 0.1-0.3 s a target on the fixtures), with room for a slow kernel run eight more times
PRECISION_ALLOWANCE_S = 30.0


def layered(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options of ``layers`` merged, later ones winning; values that ask for nothing
    (``compile`` false, ``dtype`` None) dropped."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    if merged.get("compile") is False:
        del merged["compile"]
    if "dtype" in merged and merged["dtype"] is None:
        del merged["dtype"]
    return merged


def compile_backends(options: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The backends a run with ``options`` compiles on (none: no compile checks)."""
    value = (options or {}).get("compile")
    if value is True:
        return COMPILE_BACKENDS
    if isinstance(value, (list, tuple)):
        return tuple(b for b in COMPILE_BACKENDS if b in value)
    return ()


def default_timeout(options: Mapping[str, Any] | None) -> float:
    """Seconds a run with ``options`` may take when no timeout is given: a plain run's 60,
    plus each compile backend's allowance, plus the precision probes'."""
    seconds = float(DEFAULT_LIMITS["timeout_s"])
    seconds += sum(COMPILE_ALLOWANCE_S[backend] for backend in compile_backends(options))
    if (options or {}).get("dtype"):
        seconds += PRECISION_ALLOWANCE_S
    return seconds


def timeout_note() -> str:
    """How the default timeout is derived, in one line (for help texts)."""
    base = DEFAULT_LIMITS["timeout_s"]
    allowances = ", ".join(f"{seconds:g} for {backend}" for backend, seconds in COMPILE_ALLOWANCE_S.items())
    return (f"{base:g} s; a run with compile checks gets {allowances} more, with --dtype "
            f"{PRECISION_ALLOWANCE_S:g} more")
