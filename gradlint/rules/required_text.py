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
    run: frozenset[str] = _EMPTY_RUN  # the literal texts the items so far end with
    for op, argument in items:
        if op is sre.LITERAL:
            run = frozenset(text + chr(argument) for text in run)
            continue
        if op is sre.AT:  # zero-width (\b, ^): the literals around it stay contiguous
            continue
        if op is sre.IN and len(argument) == 1 and argument[0][0] is sre.LITERAL:
            run = frozenset(text + chr(argument[0][1]) for text in run)
            continue
        if op is sre.BRANCH:
            words = _literal_words(argument[1])
            if words is not None and len(run) * len(words) <= _MAX_RUNS:
                # `\.(?:allclose|equal)\(`: a match holds `.allclose(` or `.equal(`
                run = frozenset(text + word for text in run for word in words)
                continue
        best = _flush(best, run)
        run = _EMPTY_RUN
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
    return _flush(best, run)


_EMPTY_RUN: frozenset[str] = frozenset({""})
_MAX_RUNS = 64


def _flush(best: frozenset[str] | None, run: frozenset[str]) -> frozenset[str] | None:
    if "" in run:
        return best  # some way through requires no literal text
    return _better(best, run)


def _literal_words(branches: list) -> list[str] | None:
    """The texts of a branch whose every alternative is plain literal text, else None."""
    words = []
    for branch in branches:
        chars = []
        for op, argument in branch:
            if op is sre.LITERAL:
                chars.append(chr(argument))
            elif op is sre.IN and len(argument) == 1 and argument[0][0] is sre.LITERAL:
                chars.append(chr(argument[0][1]))
            else:
                return None
        words.append("".join(chars))
    return words


def may_match(pattern: re.Pattern, text: str, lowered: str | None = None) -> bool:
    """Does ``pattern`` match ``text``? (``lowered``: ``text.lower()``, if already known.)

    A pattern made of alternatives (``A|B|C``) is searched only for the alternatives whose
    own literal text is in ``text``: Python's ``re`` tries every alternative at every
    position, and one slow alternative (``[\\w.]+\\.equal\\(``, which backtracks through
    every word) made the whole pre-check cost a third of a parse."""
    needles, folded = required_literals(pattern)
    haystack = None
    if needles is not None:
        haystack = (lowered if lowered is not None else text.lower()) if folded else text
        if not any(needle in haystack for needle in needles):
            return False
    alternatives = _alternatives(pattern)
    if alternatives is None:
        return pattern.search(text) is not None
    if haystack is None:
        haystack = (lowered if lowered is not None else text.lower()) if folded else text
    kept = tuple(words is None or any(word in haystack for word in words)
                 for words in alternatives)
    if not any(kept):
        return False
    if all(kept):
        return pattern.search(text) is not None
    return _without(pattern, kept).search(text) is not None


_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def _top_level_pieces(source: str) -> list[str]:
    """``source`` split at its top-level ``|`` (outside groups and character sets)."""
    pieces: list[str] = []
    depth, start, index, in_set = 0, 0, 0, False
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if in_set:
            in_set = char != "]"
        elif char == "[":
            in_set = True
            index += 1
            if source.startswith("^", index):
                index += 1
            if source.startswith("]", index):  # `[]...]`, `[^]...]`: a literal ]
                index += 1
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            pieces.append(source[start:index])
            start = index + 1
        index += 1
    pieces.append(source[start:])
    return pieces


@lru_cache(maxsize=None)
def _alternatives(pattern: re.Pattern) -> tuple[frozenset[str] | None, ...] | None:
    """For a pattern made of top-level alternatives, the literal texts each needs (None:
    that alternative needs none); None when the pattern is not such an alternation."""
    if pattern.flags & re.VERBOSE:
        return None
    source = pattern.pattern
    while _GLOBAL_FLAGS.match(source):  # (already in pattern.flags)
        source = source[_GLOBAL_FLAGS.match(source).end():]  # type: ignore[union-attr]
    pieces = _top_level_pieces(source)
    if len(pieces) < 2 or "|".join(pieces) != source:
        return None
    _, folded = required_literals(pattern)
    found: list[frozenset[str] | None] = []
    try:
        for index, piece in enumerate(pieces):
            # the groups of earlier alternatives, so that back-references keep their numbers
            before = re.compile("|".join(pieces[:index]), pattern.flags).groups if index else 0
            words = _sequence(list(sre_parse.parse("()" * before + piece, pattern.flags)))
            if words is not None and folded:
                words = frozenset(word.lower() for word in words)
            found.append(words)
        if re.compile("|".join(pieces), pattern.flags).groups != pattern.groups:
            return None
    except Exception:  # a feature this reading does not know (a named back-reference...)
        return None
    return tuple(found)


@lru_cache(maxsize=256)
def _without(pattern: re.Pattern, kept: tuple[bool, ...]) -> re.Pattern:
    """``pattern`` with the alternatives not ``kept`` made unable to match (``(?!)``:
    they keep their groups, so back-references keep their numbers)."""
    source = pattern.pattern
    prefix = ""
    while _GLOBAL_FLAGS.match(source):
        end = _GLOBAL_FLAGS.match(source).end()  # type: ignore[union-attr]
        prefix, source = prefix + source[:end], source[end:]
    pieces = _top_level_pieces(source)
    return re.compile(prefix + "|".join(piece if keep else "(?!)" + piece
                                        for piece, keep in zip(pieces, kept)),
                      pattern.flags)
