"""What a file needs, decided from its text alone: nothing, a syntax check, or a parse.

Most files of a project cannot hold a finding: no enabled rule's pre-check (its
``requires`` regex, or a gradcheck alias) can match. Those cost a containment search for
the literal text the rules need (one alternation for all rules) and, when GL000 is on,
CPython's compiler as a syntax check, far cheaper than libcst.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from ..rules import RULES_BY_CODE, SYNTAX_ERROR
from ..analysis.source import NameSet, without_comments_and_strings
from ..rules.base import CODE_PATTERNS, MENTIONS_GRADCHECK, Rule
from . import required_text
from .required_text import required_literals


def compiles(text: str) -> bool:
    """Does CPython accept ``text``? (Its full compiler is faster than building an ``ast``:
    no Python objects are made. What it rejects and ``ast`` accepts, such as a ``return``
    outside a function, goes on to libcst, which decides.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning/DeprecationWarning are not our findings
        try:
            compile(text, "<module>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return False
    return True


class RuleFilter:
    """Can any of some rules fire in a text?"""

    def __init__(self, rules: Iterable[type[Rule]]):
        self.rules = [rule for rule in rules if rule is not SYNTAX_ERROR]
        self.always = any(rule.requires is None for rule in self.rules)
        plain: set[str] = set()
        folded: set[str] = set()
        self.unfiltered: list[type[Rule]] = []  # rules whose regex requires no literal text
        for rule in self.rules:
            if rule.requires is None:
                continue
            needles, lower = required_literals(rule.requires)
            if needles is None:
                self.unfiltered.append(rule)
            else:
                (folded if lower else plain).update(needles)
            if rule.requires_gradcheck_aliases:
                plain.add("gradcheck")  # `from ... import gradcheck as gc` names it
            plain.update(m.rpartition(".")[2] for m in _alias_modules(rule.requires_aliases_of))
        self._plain = _alternation(plain)
        self._folded = _alternation(folded)

    def may_fire(self, text: str, code: Code | None = None) -> bool:
        """``code``: ``Code(text)``, when the caller has one (its work is shared)."""
        if self.always:
            return True
        code = code or Code(text)
        if any(may_fire(rule, text, code) for rule in self.unfiltered):
            return True
        lowered = None
        hit = self._plain is not None and self._plain.search(text) is not None
        if not hit and self._folded is not None:
            lowered = text.lower()
            hit = self._folded.search(lowered) is not None
        if not hit:
            return False
        return any(may_fire(rule, text, code) for rule in self.rules)


class Code:
    """``text`` without comments and strings, made once and only if asked for; and which
    pre-check patterns match (many rules share one: each is searched once per text)."""

    def __init__(self, text: str):
        self.text = text
        self._code: str | None = None
        # by (id(pattern), in_code): a pattern's hash reads its compiled code, which costs
        # more than the answer when it is known (the patterns live as long as the process)
        self._matches: dict[tuple[int, bool], bool] = {}
        self._lowered: dict[bool, str] = {}

    def __call__(self) -> str:
        if self._code is None:
            self._code = without_comments_and_strings(self.text)
        return self._code

    def matches(self, pattern: re.Pattern, in_code: bool) -> bool:
        """Does ``pattern`` match the text (and, if ``in_code``, its code)?"""
        key = (id(pattern), in_code)
        known = self._matches.get(key)
        if known is None:
            known = self._may_match(pattern, False) and (not in_code or self._may_match(pattern, True))
            self._matches[key] = known
        return known

    def _may_match(self, pattern: re.Pattern, in_code: bool) -> bool:
        """``required_text.may_match`` of the text or its code, which fails first when no
        literal text the pattern needs is there (looked for here with one search)."""
        needles, folded = _needles(pattern)
        text = self() if in_code else self.text
        lowered = None
        if folded:
            lowered = self._lowered.get(in_code)
            if lowered is None:
                lowered = self._lowered[in_code] = text.lower()
        if needles is not None and needles.search(lowered if folded else text) is None:
            return False
        return required_text.may_match(pattern, text, lowered)


_NEEDLES: dict[int, tuple[re.Pattern, re.Pattern | None, bool]] = {}  # by id(pattern) (held)


def _needles(pattern: re.Pattern) -> tuple[re.Pattern | None, bool]:
    """An alternation of the literal texts one of which every match of ``pattern`` holds
    (``required_literals``), or None; and whether they are lower-cased."""
    found = _NEEDLES.get(id(pattern))
    if found is None or found[0] is not pattern:
        literals, folded = required_literals(pattern)
        needles = None if literals is None else \
            re.compile("|".join(re.escape(literal) for literal in sorted(literals)))
        found = _NEEDLES[id(pattern)] = (pattern, needles, folded)
    return found[1], found[2]


def may_fire(rule: type[Rule], text: str, code: Code,
             aliases: Iterable[str] | None = None) -> bool:
    """Can ``rule`` fire in ``text``? ``code``: the text without comments and strings;
    ``aliases``: for a block, the names its module binds to gradcheck (None for a file)."""
    if rule.requires is None:
        return True
    if aliases is None and rule.requires_in_file is not None and not code.matches(rule.requires_in_file, True):
        return False  # the file lacks what the rule needs somewhere in it
    in_code = rule.requires_in_code or id(rule.requires) in _CODE_PATTERN_IDS
    if code.matches(rule.requires, in_code):
        return True
    if aliases is None and rule.requires_aliases_of:
        # a file that binds a name to one of these (`from torch.func import grad`) names the
        # module in code; blocks that use the name are then found by the engine
        if code.matches(_binding_pattern(rule.requires_aliases_of), True):
            return True
    if not rule.requires_gradcheck_aliases:
        return False
    if aliases is not None:
        return aliases.in_text(text) if isinstance(aliases, NameSet) else any(alias in text for alias in aliases)
    # a file that binds an alias (`gc = torch.autograd.gradcheck`) names gradcheck in code
    return code.matches(MENTIONS_GRADCHECK, True)


_CODE_PATTERN_IDS = frozenset(map(id, CODE_PATTERNS))  # (module constants: a set of patterns hashes each)


def block_groups(rules: Sequence[Rule]) -> tuple[list[Rule], list[int]]:
    """The rules that a block's pre-checks cannot tell apart, grouped: a block's answer for
    one rule of a group is the group's. (``may_fire`` for a block reads only a rule's
    pattern, whether it must match code and whether gradcheck aliases count; the engine's
    tests across blocks read the custom-op and alias requirements.) Returns one rule per
    group, and the group of each of ``rules``: 46 rules make 17 groups, so each block asks
    17 questions instead of 46."""
    representatives: list[Rule] = []
    groups: dict[tuple, int] = {}
    group_of: list[int] = []
    for rule in rules:
        key = (rule.requires, rule.requires is not None and
               (rule.requires_in_code or rule.requires in CODE_PATTERNS),
               rule.requires_gradcheck_aliases, rule.requires_custom_op_parts, rule.requires_aliases_of)
        if key not in groups:
            groups[key] = len(representatives)
            representatives.append(rule)
        group_of.append(groups[key])
    return representatives, group_of


def _alias_modules(qualified: frozenset[str]) -> frozenset[str]:
    """The modules (other than `torch` itself) of qualified names such as ``torch.func.grad``."""
    return frozenset(name.rpartition(".")[0] for name in qualified
                     if name.rpartition(".")[0] not in ("", "torch"))


@lru_cache(maxsize=16)
def _binding_pattern(qualified: frozenset[str]) -> re.Pattern:
    """Code that binds a name to one of ``qualified`` names its module: dotted
    (`from torch.func import grad`, `torch.func.grad`, `functorch.grad`) or imported from
    its parent (`from torch import func`)."""
    alternatives = []
    for module in sorted(_alias_modules(qualified), key=lambda n: (-len(n), n)):
        alternatives.append(re.escape(module) + r"\b")
        parent, _, last = module.rpartition(".")
        if parent:
            alternatives.append(rf"from\s+{re.escape(parent)}\s+import\s*\(?[\w\s,]*\b{re.escape(last)}\b")
    return re.compile("|".join(alternatives)) if alternatives else re.compile(r"(?!)")


def _alternation(needles: set[str]) -> re.Pattern | None:
    if not needles:
        return None
    return re.compile("|".join(re.escape(n) for n in sorted(needles, key=lambda n: (-len(n), n))))


@lru_cache(maxsize=64)
def rule_filter(codes: frozenset[str]) -> RuleFilter:
    return RuleFilter(RULES_BY_CODE[code] for code in sorted(codes) if code in RULES_BY_CODE)


def nothing_to_find(text: str, codes: frozenset[str],
                    known_to_compile: Callable[[], bool] | None = None, code: Code | None = None) -> bool:
    """Skip the parse: no enabled rule can fire in ``text`` and CPython compiles it (so it
    has no syntax error either). ``known_to_compile``: asked first, may spare the compile;
    ``code``: ``Code(text)`` when the caller has one."""
    if rule_filter(codes).may_fire(text, code):
        return False
    if SYNTAX_ERROR.code not in codes:
        return True
    if known_to_compile is not None and known_to_compile():
        return True
    return compiles(text)  # else let libcst decide, and place the error
