"""What text a rule's pre-check regex needs, found by reading the regex itself.

A rule declares ``requires``, a regular expression a block must match for the rule to
fire. Searching a whole file with a regex is slow when the regex has no literal prefix
(``\\bdef``, ``(?i)...``): Python's ``re`` then tries every position. The literal strings
any match must contain are found here from the parsed pattern; ``str`` containment (or one
alternation of all rules' literals) rejects most files before any regex runs.
"""

from __future__ import annotations

import keyword
import re
from functools import lru_cache
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

# literals so common in Python code that checking for them first rejects nothing
_COMMON = frozenset(keyword.kwlist) | {"self", "torch", "import", "print", "ctx"}

_REPEATS = tuple(op for op in (getattr(sre, "MAX_REPEAT", None), getattr(sre, "MIN_REPEAT", None),
                               getattr(sre, "POSSESSIVE_REPEAT", None)) if op is not None)


@lru_cache(maxsize=None)
def required_literals(pattern: re.Pattern) -> tuple[frozenset[str] | None, bool]:
    """Strings of which every match of ``pattern`` contains at least one (the most
    selective such set found), or None when nothing is required; and whether they are
    lower-cased, to be looked for in the lower-cased text (a case-insensitive pattern)."""
    try:
        parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # a pattern feature this reading does not know: no shortcut
        return None, False
    folded = bool(pattern.flags & re.IGNORECASE) or "(?" in pattern.pattern and \
        re.search(r"\(\?[a-zA-Z]*i", pattern.pattern) is not None
    needles = _sequence(list(parsed))
    if needles is not None and folded:
        needles = frozenset(needle.lower() for needle in needles)
    return needles, folded


def _score(needles: frozenset[str]) -> tuple:
    common = any(needle.strip() in _COMMON for needle in needles)
    return (not common, min(len(needle) for needle in needles), -len(needles))


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    if a is None or (b is not None and _score(b) > _score(a)):
        return b
    return a


def _sequence(items: list) -> frozenset[str] | None:
    best: frozenset[str] | None = None
    run: list[str] = []
    for op, argument in items:
        if op is sre.LITERAL:
            run.append(chr(argument))
            continue
        if op is sre.AT:  # zero-width (\b, ^): the literals around it stay contiguous
            continue
        if op is sre.IN and len(argument) == 1 and argument[0][0] is sre.LITERAL:
            run.append(chr(argument[0][1]))
            continue
        if run:
            best = _better(best, frozenset({"".join(run)}))
            run = []
        if op is sre.SUBPATTERN:
            best = _better(best, _sequence(list(argument[3])))
        elif op is sre.BRANCH:
            alternatives = [_sequence(list(branch)) for branch in argument[1]]
            if alternatives and all(a is not None for a in alternatives):
                best = _better(best, frozenset().union(*alternatives))  # type: ignore[arg-type]
        elif op in _REPEATS:
            minimum, _maximum, body = argument
            if minimum >= 1:
                best = _better(best, _sequence(list(body)))
        elif op is getattr(sre, "ATOMIC_GROUP", object()):
            best = _better(best, _sequence(list(argument)))
    if run:
        best = _better(best, frozenset({"".join(run)}))
    return best


def may_match(pattern: re.Pattern, text: str, lowered: str | None = None) -> bool:
    """Does ``pattern`` match ``text``? (``lowered``: ``text.lower()``, if already known.)"""
    needles, folded = required_literals(pattern)
    if needles is not None:
        haystack = (lowered if lowered is not None else text.lower()) if folded else text
        if not any(needle in haystack for needle in needles):
            return False
    return pattern.search(text) is not None
