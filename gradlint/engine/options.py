"""What a lint is asked to do (rules, severities, default dtype): plain data, cheap to import.

Nothing here imports libcst or the rules, so that work which never parses (a re-run
answered from the cache, a file no rule can fire in) does not pay for them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Mapping

from ..findings import Severity

AUTO = "auto"


def _rule_codes() -> tuple[str, ...]:
    """Every rule code, from the rule modules' names (``gradlint/rules/FAMILY/glNNN_name.py``),
    so that the codes are known without importing the rules (a test checks they match)."""
    directory = os.path.join(os.path.dirname(os.path.dirname(__file__)), "rules")
    codes = {f"GL{name[2:5]}" for family in os.listdir(directory)
             if os.path.isdir(os.path.join(directory, family))
             for name in os.listdir(os.path.join(directory, family))
             if name.startswith("gl") and name[2:5].isdigit() and name.endswith(".py")}
    return tuple(sorted(codes))


ALL_CODES: tuple[str, ...] = _rule_codes()


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
