"""Every example of a rule: the teaching ones its class carries and the long tail in fixtures.

A rule class keeps the few ``VALID``/``INVALID`` examples that teach it (`gradlint rule`
and docs/rules.md show them). The long tail, the cases that pin its behaviour down, lives
in the repository, ruff-style, one folder per code::

    tests/fixtures/rules/GL004/valid_02.py          the code of VALID example 2
    tests/fixtures/rules/GL004/invalid_02.py        the code of INVALID example 2
    tests/fixtures/rules/GL004/invalid_02.fixed.py  ...and the code after its fix
    tests/fixtures/rules/GL004/examples.json        what is expected of each file

A file's number is its example's index: the class's examples come first (0, 1, ...), the
fixtures continue the count, so ``GL004-INVALID-2`` names the same example everywhere.
``examples.json`` maps each file name to the fields of ``Valid`` (``why``) or ``Invalid``
(``message``, ``range``, ``fixed``: the name of the fixed file, ``applicability``,
``severity``, ``count``), plus an optional ``note`` for readers. Fixture files hold the code
exactly as it is linted.

Everything that runs rule examples (the generic test, the scale and ground-truth tests)
takes them from ``all_examples``. The fixtures are not installed with the package: outside
a checkout of the repository, ``all_examples`` raises ``FileNotFoundError``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Literal

from .base import Invalid, Rule, Valid

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "rules"
EXPECTED = "examples.json"

Kind = Literal["VALID", "INVALID"]
KINDS: tuple[Kind, ...] = ("VALID", "INVALID")
_FILE = re.compile(r"(valid|invalid)_(\d+)\.py")
_INVALID_FIELDS = frozenset({"message", "range", "fixed", "applicability", "severity", "count"})
_NOTE = "note"  # where an example comes from, for its readers (either kind; not part of the case)


@dataclass(frozen=True)
class Example:
    rule: type[Rule]
    kind: Kind
    index: int  # among the rule's examples of this kind: the class's first, then the fixtures'
    case: Valid | Invalid
    path: Path | None = None  # the fixture file; None for a teaching example in the class

    @property
    def id(self) -> str:
        return f"{self.rule.code}-{self.kind}-{self.index}"

    @property
    def code(self) -> str:
        return self.case.code


def all_examples(rule: type[Rule], kind: Kind | None = None,
                 fixtures: Path = FIXTURES) -> Iterator[Example]:
    """The examples of ``rule`` (of one ``kind``, or VALID then INVALID), teaching ones first."""
    if not fixtures.is_dir():
        raise FileNotFoundError(f"{fixtures}: the rules' fixture examples live in a checkout of "
                                f"the gradlint repository (tests/fixtures/rules/)")
    loaded = _fixtures(rule, fixtures / rule.code)
    for wanted in KINDS if kind is None else (kind,):
        teaching = rule.VALID if wanted == "VALID" else rule.INVALID
        for index, case in enumerate(teaching):
            yield Example(rule, wanted, index, case)
        for offset, (path, case) in enumerate(loaded[wanted]):
            index = len(teaching) + offset
            if _number(path) != index:
                raise ValueError(f"{path}: expected {wanted.lower()}_{index:02d}.py here (the "
                                 f"class has {len(teaching)} {wanted} examples; fixtures continue "
                                 f"the count without gaps)")
            yield Example(rule, wanted, index, case, path)


def _fixtures(rule: type[Rule], folder: Path) -> dict[Kind, list[tuple[Path, Valid | Invalid]]]:
    found: dict[Kind, list[tuple[Path, Valid | Invalid]]] = {"VALID": [], "INVALID": []}
    if not folder.is_dir():
        return found
    expected_path = folder / EXPECTED
    expected = json.loads(expected_path.read_text(encoding="utf-8")) if expected_path.exists() else {}
    fixed_files = {str(fields.get("fixed")) for fields in expected.values() if "fixed" in fields}
    for path in sorted(folder.iterdir(), key=_order):
        if path.name == EXPECTED or path.name in fixed_files:
            continue
        match = _FILE.fullmatch(path.name)
        if match is None or path.name not in expected:
            raise ValueError(f"{path}: not an example of {rule.code} (expected valid_NN.py or "
                             f"invalid_NN.py, listed in {EXPECTED}, or a fixed file it names)")
        fields = dict(expected[path.name])
        fields.pop(_NOTE, None)
        code = _read(path)
        if match.group(1) == "valid":
            if set(fields) - {"why"}:
                raise ValueError(f"{expected_path}: {path.name}: a VALID example has only `why`")
            found["VALID"].append((path, Valid(code, **fields)))
        else:
            if set(fields) - _INVALID_FIELDS:
                raise ValueError(f"{expected_path}: {path.name}: unknown fields "
                                 f"{sorted(set(fields) - _INVALID_FIELDS)}")
            if "fixed" in fields:
                fields["fixed"] = _read(folder / fields["fixed"])
            if "range" in fields:
                fields["range"] = tuple(fields["range"])
            found["INVALID"].append((path, Invalid(code, **fields)))
    missing = set(expected) - {path.name for kind in found.values() for path, _ in kind}
    if missing:
        raise ValueError(f"{expected_path}: no such example files: {sorted(missing)}")
    return found


def _read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as file:  # the code exactly, line endings too
        return file.read()


def _number(path: Path) -> int:
    match = _FILE.fullmatch(path.name)
    return int(match.group(2)) if match else -1


def _order(path: Path) -> tuple[int, str]:
    return _number(path), path.name
