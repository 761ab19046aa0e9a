"""What a lint is asked to do (rules, severities, default dtype): plain data, cheap to import.

Nothing here imports libcst or the rules (the codes come from the code table,
``gradlint/codes.py``), so that work which never parses (a re-run answered from the cache,
a file no rule can fire in) does not pay for them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Mapping

from ..codes import ALL_CODES
from ..findings import Severity

AUTO = "auto"


def fingerprint(value: object) -> str:
    return hashlib.blake2b(repr(value).encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class LintOptions:
    select: frozenset[str] = frozenset(ALL_CODES)
    severity: Mapping[str, Severity] = field(default_factory=dict)
    # torch's default dtype: AUTO (read the module's own set_default_dtype), a dtype name
    # ("float64" when a conftest or the test runner sets it), or None for "unknown"
    default_dtype: str | None = AUTO
    # texts of the conftest.py files above the module (nearest first): their pytest
    # fixtures are the module's too
    conftests: tuple[str, ...] = ()

    def key(self) -> str:
        return fingerprint((sorted(self.select), sorted(self.severity.items()), self.default_dtype,
                            self.conftests))
