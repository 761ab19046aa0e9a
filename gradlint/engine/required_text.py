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
        chars = _literal_chars(op, argument)
        if chars is not None and len(run) * len(chars) <= _MAX_RUNS:
            # `[aA]ll`: a match holds `all` or `All`
            run = frozenset(text + char for text in run for char in chars)
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


def _literal_chars(op, argument) -> list[str] | None:
    """The characters of a small set of plain characters (``[aA]``), else None."""
    if op is not sre.IN or not 1 <= len(argument) <= 4:
        return None
    if any(item_op is not sre.LITERAL for item_op, _ in argument):
        return None
    return [chr(code) for _, code in argument]


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
    every word) made the whole pre-check cost a third of a parse. An alternative that is
    plain text matches when its text is there; one that starts with plain text
    (``(?:allclose|equal)\\s*\\(``) is tried only where that text occurs."""
    plan = _plan(pattern)
    needles, folded = plan.needles, plan.folded
    haystack = None
    if needles is not None:
        haystack = (lowered if lowered is not None else text.lower()) if folded else text
        if not any(needle in haystack for needle in needles):
            return False
    alternatives = plan.alternatives
    if alternatives is None:
        return _search(pattern, text, None if folded else plan.starts[0])
    if haystack is None:
        haystack = (lowered if lowered is not None else text.lower()) if folded else text
    kept = tuple(words is None or any(word in haystack for word in words)
                 for words in alternatives)
    if not any(kept):
        return False
    if not folded and any(keep and plain for keep, plain in zip(kept, plan.plain)):
        return True
    # the alternatives that start with plain text are tried where it occurs; the others
    # are searched for on their own (together, one slow alternative slows them all)
    starts: set[str] = set()
    inner: set[str] = set()  # texts that follow, on the same line, where a match starts
    anchored = []
    for index, keep in enumerate(kept):
        found = None if folded or not keep else plan.starts[index]
        if found is not None:
            starts.update(found)
        elif keep and not folded and (found := plan.after_line_start(index)) is not None:
            inner.update(found)
        anchored.append(found is not None)
    free = [keep and not fixed for keep, fixed in zip(kept, anchored)]
    for index, keep in enumerate(free):
        alone = plan.alone(index) if keep else None
        if alone is not None:
            if alone.search(text) is not None:
                return True
            free[index] = False
    if any(free) and _search(pattern if all(free) else _without(pattern, tuple(free)), text, None):
        return True
    return any(anchored) and _search(_without(pattern, tuple(anchored)), text, starts, inner)


class _Plan:
    """What ``may_match`` reads of a pattern, read once: the functions that find it are
    memoized by the pattern, whose hash reads its whole compiled code (a pre-check of a
    small block asked them for each alternative, most of its cost)."""

    def __init__(self, pattern: re.Pattern):
        self.pattern = pattern
        self.needles, self.folded = required_literals(pattern)
        self.alternatives = _alternatives(pattern)
        count = 1 if self.alternatives is None else len(self.alternatives)
        self.starts = tuple(_starts(pattern, index) for index in range(count))
        self.plain = tuple(_plain_text(pattern, index) for index in range(count))
        self._after: dict[int, frozenset[str] | None] = {}
        self._alone: dict[int, re.Pattern | None] = {}

    def after_line_start(self, index: int) -> frozenset[str] | None:
        if index not in self._after:
            self._after[index] = _after_line_start(self.pattern, index)
        return self._after[index]

    def alone(self, index: int) -> re.Pattern | None:
        if index not in self._alone:
            self._alone[index] = _alone(self.pattern, index)
        return self._alone[index]


_PLANS: dict[int, _Plan] = {}  # by id(pattern) (each plan holds its pattern)


def _plan(pattern: re.Pattern) -> _Plan:
    found = _PLANS.get(id(pattern))
    if found is None or found.pattern is not pattern:
        found = _PLANS[id(pattern)] = _Plan(pattern)
    return found


_BACK_REFERENCE = re.compile(r"\\[1-9]|\(\?P=")


@lru_cache(maxsize=None)
def _alone(pattern: re.Pattern, index: int) -> re.Pattern | None:
    """Alternative ``index`` as a pattern of its own (its group numbers change, which
    matters only to a back-reference: None then)."""
    source = pattern.pattern
    while _GLOBAL_FLAGS.match(source):
        source = source[_GLOBAL_FLAGS.match(source).end():]  # type: ignore[union-attr]
    pieces = _top_level_pieces(source)
    if index >= len(pieces) or _BACK_REFERENCE.search(pieces[index]):
        return None
    try:
        return re.compile(pieces[index], pattern.flags)
    except re.error:
        return None


_MIN_START = 3  # shorter starting texts occur too often to be worth looking for one by one


def _search(pattern: re.Pattern, text: str, starts: set[str] | frozenset[str] | None,
            inner: set[str] | frozenset[str] = frozenset()) -> bool:
    """``pattern.search(text)``; when every match must start with one of ``starts``, or
    earlier on the line where one of ``inner`` occurs, tried only there (lookbehinds still
    see the text before)."""
    if starts is None:
        return pattern.search(text) is not None
    positions: set[int] = set()
    for start in starts:
        at = text.find(start)
        while at >= 0:
            positions.add(at)
            at = text.find(start, at + 1)
    for word in inner:
        at = text.find(word)
        while at >= 0:
            positions.update(range(text.rfind("\n", 0, at) + 1, at + 1))
            at = text.find(word, at + 1)
    return any(pattern.match(text, at) is not None for at in sorted(positions))


@lru_cache(maxsize=None)
def _after_line_start(pattern: re.Pattern, index: int) -> frozenset[str] | None:
    """For alternative ``index`` made of a head that cannot match a line break followed
    by plain text (``([\\w.]+)\\.equal\\(``): that text (each at least ``_MIN_START``
    long); a match then starts on the line where the text occurs, before it. Else None."""
    pieces = _pieces_parsed(pattern)
    if pieces is None or index >= len(pieces) or pattern.flags & re.DOTALL:
        return None
    items = pieces[index]
    for split in range(len(items)):
        if _literal_chars(*items[split]) is not None or items[split][0] is sre.LITERAL:
            break
        if not _single_line(items[split:split + 1]):
            return None
    else:
        return None
    run = _starts_of(items[split:])
    if run is None or not _single_line(items[:split]):
        return None
    return run


def _single_line(items: list) -> bool:
    """Can no match of ``items`` hold a line break?"""
    for op, argument in items:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # zero-width
        if op is sre.LITERAL:
            if argument == 10:
                return False
        elif op is sre.ANY:
            continue  # (no DOTALL: checked by the caller)
        elif op is sre.IN:
            if not _set_excludes_newline(argument):
                return False
        elif op in _REPEATS:
            if not _single_line(list(argument[2])):
                return False
        elif op is sre.SUBPATTERN:
            if not _single_line(list(argument[3])):
                return False
        elif op is sre.BRANCH:
            if not all(_single_line(list(branch)) for branch in argument[1]):
                return False
        else:
            return False
    return True


def _set_excludes_newline(items: list) -> bool:
    if items and items[0][0] is sre.NEGATE:
        return any(op is sre.LITERAL and value == 10 for op, value in items[1:])
    for op, value in items:
        if op is sre.LITERAL and value == 10:
            return False
        if op is sre.RANGE and value[0] <= 10 <= value[1]:
            return False
        if op is sre.CATEGORY and value not in (sre.CATEGORY_WORD, sre.CATEGORY_DIGIT):
            return False
        if op not in (sre.LITERAL, sre.RANGE, sre.CATEGORY):
            return False
    return True


@lru_cache(maxsize=None)
def _pieces_parsed(pattern: re.Pattern) -> tuple[list, ...] | None:
    """The parsed items of each top-level alternative (one, for a pattern that is not an
    alternation), with the groups of the earlier ones counted; None if unreadable."""
    if pattern.flags & re.VERBOSE:
        return None
    source = pattern.pattern
    while _GLOBAL_FLAGS.match(source):
        source = source[_GLOBAL_FLAGS.match(source).end():]  # type: ignore[union-attr]
    pieces = _top_level_pieces(source)
    if "|".join(pieces) != source:
        return None
    parsed = []
    try:
        for index, piece in enumerate(pieces):
            before = re.compile("|".join(pieces[:index]), pattern.flags).groups if index else 0
            items = list(sre_parse.parse("()" * before + piece, pattern.flags))
            parsed.append(items[before:])
    except Exception:
        return None
    return tuple(parsed)


@lru_cache(maxsize=None)
def _starts(pattern: re.Pattern, index: int) -> frozenset[str] | None:
    """The texts every match of alternative ``index`` starts with (after zero-width
    assertions), when they are all at least ``_MIN_START`` long; else None."""
    pieces = _pieces_parsed(pattern)
    if pieces is None or index >= len(pieces):
        return None
    return _starts_of(pieces[index])


def _starts_of(items: list) -> frozenset[str] | None:
    run: frozenset[str] = _EMPTY_RUN
    for op, argument in items:
        if op in (sre.AT, sre.ASSERT_NOT, sre.ASSERT) and run == _EMPTY_RUN:
            continue
        if op is sre.LITERAL:
            run = frozenset(text + chr(argument) for text in run)
            continue
        chars = _literal_chars(op, argument)
        if chars is not None and len(run) * len(chars) <= _MAX_RUNS:
            run = frozenset(text + char for text in run for char in chars)
            continue
        if op is sre.BRANCH:
            words = _literal_words(argument[1])
            if words is not None and len(run) * len(words) <= _MAX_RUNS:
                run = frozenset(text + word for text in run for word in words)
                continue
            # `(?:allclose|assert_\w+)`: each branch's own leading text, and no further
            prefixes = [_leading_text(branch) for branch in argument[1]]
            if all(prefixes) and len(run) * len(prefixes) <= _MAX_RUNS:
                run = frozenset(text + prefix for text in run for prefix in prefixes)
        break
    if min(map(len, run)) < _MIN_START:
        return None
    return run


def _leading_text(items: list) -> str:
    """The plain text a branch starts with (its first characters that are literal)."""
    chars = []
    for op, argument in items:
        if op is sre.LITERAL:
            chars.append(chr(argument))
        elif op is sre.IN and len(argument) == 1 and argument[0][0] is sre.LITERAL:
            chars.append(chr(argument[0][1]))
        else:
            break
    return "".join(chars)


@lru_cache(maxsize=None)
def _plain_text(pattern: re.Pattern, index: int) -> bool:
    """Is alternative ``index`` plain text (every match is one of its literal words)?"""
    pieces = _pieces_parsed(pattern)
    if pieces is None or index >= len(pieces):
        return False
    for op, argument in pieces[index]:
        if op is sre.LITERAL or _literal_chars(op, argument) is not None:
            continue
        if op is sre.BRANCH and _literal_words(argument[1]) is not None:
            continue
        return False
    return True


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
    """``pattern`` with the alternatives not ``kept`` left out, or, when they hold groups,
    made unable to match (``(?!)``: they keep their groups, so back-references keep their
    numbers). Left out is better: a ``(?!)`` branch hides the characters every match starts
    with, which ``re`` otherwise uses to skip ahead."""
    source = pattern.pattern
    prefix = ""
    while _GLOBAL_FLAGS.match(source):
        end = _GLOBAL_FLAGS.match(source).end()  # type: ignore[union-attr]
        prefix, source = prefix + source[:end], source[end:]
    pieces = _top_level_pieces(source)
    kept_pieces = []
    for index, (piece, keep) in enumerate(zip(pieces, kept)):
        if keep:
            kept_pieces.append(piece)
        elif _groups(pieces, index, pattern.flags):
            kept_pieces.append("(?!)" + piece)
    return re.compile(prefix + "|".join(kept_pieces), pattern.flags)


def _groups(pieces: list[str], index: int, flags: int) -> int:
    """How many groups alternative ``index`` holds."""
    before = re.compile("|".join(pieces[:index]), flags).groups if index else 0
    return re.compile("|".join(pieces[:index + 1]), flags).groups - before
