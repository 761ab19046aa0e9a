"""Applying fixes to source text."""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable

from ..analysis.source import NEWLINE
from ..findings import Applicability, Finding, Fix, Position

if TYPE_CHECKING:  # (the linter, and libcst with it, is imported only when something is fixed)
    from .linter import LintCache, LintOptions

MAX_PASSES = 10


class LineIndex:
    """Converts (line, column) positions to offsets in a text."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in NEWLINE.finditer(text)]

    def offset(self, position: Position) -> int:
        line = min(max(position.line, 1), len(self.starts))
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return min(start + position.column, end)


def allowed(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (unsafe or fix.applicability is Applicability.SAFE)


def fixes_apply(findings: Iterable[Finding]) -> bool:
    """Whether fixing edits a file with these findings at all: never one that does not parse."""
    return not any(f.code == "GL000" for f in findings)


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, int]:
    """Apply every fix whose edits do not overlap an earlier accepted one.

    Returns the new text and how many fixes were applied. Fixes are taken in source order;
    an edit identical to an accepted one (two findings fixed by the same change) is shared.
    """
    index = LineIndex(text)
    accepted: list[tuple[int, int, str]] = []
    placed = _Spans()
    count = 0
    for fix in sorted(fixes, key=lambda f: min(e.range.start for e in f.edits)):
        spans = [(index.offset(e.range.start), index.offset(e.range.end), e.new_text) for e in fix.edits]
        new = [span for span in spans if span not in placed]
        if any(placed.overlaps(span) for span in new):
            continue
        accepted.extend(new)
        for span in new:
            placed.add(span)
        count += 1
    result = text
    for start, end, new_text in sorted(accepted, key=lambda s: (s[0], s[1]), reverse=True):
        result = result[:start] + new_text + result[end:]
    return result, count


class _Spans:
    """The accepted edits' spans, sorted by start: whether a span overlaps one of them is
    asked of the few that start near it, not of all (a file with a fix in every block has
    hundreds; asking all of them for each fix was quadratic)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, str]] = []
        self.known: set[tuple[int, int, str]] = set()
        self.longest = 0

    def __contains__(self, span: tuple[int, int, str]) -> bool:
        return span in self.known

    def add(self, span: tuple[int, int, str]) -> None:
        at = bisect_right(self.starts, span[0])
        self.starts.insert(at, span[0])
        self.spans.insert(at, span)
        self.known.add(span)
        self.longest = max(self.longest, span[1] - span[0])

    def overlaps(self, span: tuple[int, int, str]) -> bool:
        # a span that overlaps `span` starts at most at its end, and (being at most `longest`
        # long) at least `longest` before its start
        low = bisect_left(self.starts, span[0] - self.longest)
        high = bisect_right(self.starts, span[1])
        return any(_overlaps(span, other) for other in self.spans[low:high])


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    if a[0] == a[1] or b[0] == b[1]:  # insertions: only conflict at the same point
        return a[0] == b[0] or (b[0] < a[0] < b[1]) or (a[0] < b[0] < a[1])
    return a[0] < b[1] and b[0] < a[1]


@dataclass
class FixOutcome:
    text: str
    fixed: int  # fixes applied over all passes
    remaining: list[Finding]  # findings in the final text


def fix_source(text: str, path: str, options: LintOptions, unsafe: bool = False,
               cache: LintCache | None = None, findings: list[Finding] | None = None,
               counting: bool = False) -> FixOutcome:
    """Apply fixes until none applies (fixes can unlock others), at most MAX_PASSES times.
    Only fixes that pass ``verified`` are applied. ``findings``: the lint of ``text`` with
    ``options``, when the caller has it (counting what ``--fix`` would apply after a check).
    ``counting``: only ``fixed`` is wanted (the same count): the fixed texts are judged by
    lints that leave findings unplaced where they can (see ``verdict``), and ``remaining``
    may hold unplaced findings."""
    from .linter import LintCache, lint_source

    cache = cache or LintCache()
    fixed = 0
    if findings is None:
        findings = lint_source(text, path, options, cache).findings
    for _ in range(MAX_PASSES):
        if not fixes_apply(findings):
            break  # never edit a file that does not parse
        candidates = [f for f in findings if f.fix is not None and allowed(f.fix, unsafe)]
        if candidates and not all_placed(findings):  # (a count's lint) judged against a placed one
            findings = lint_source(text, path, options, cache).findings
            candidates = [f for f in findings if f.fix is not None and allowed(f.fix, unsafe)]
        together = lint_of_fixed_together(text, candidates, findings, path, options, cache,
                                          unsafe=unsafe, counting=counting)
        if together is not None:
            fixes = [f.fix for f in candidates]
        else:  # one at a time: which of them is bad
            fixes = [f.fix for f in candidates
                     if verified(text, f, findings, path, options, cache, unsafe=unsafe, counting=counting)]
        if not fixes:
            break
        new_text, count = apply_fixes(text, fixes)  # type: ignore[arg-type]
        if count == 0 or new_text == text:
            break
        text = new_text
        fixed += count
        # the verification linted this very text already
        findings = together.findings if together is not None and together.text == text \
            else lint_source(text, path, options, cache, placed=not counting).findings
    return FixOutcome(text, fixed, findings)


@dataclass(frozen=True)
class FixedLint:
    text: str  # the text with the fixes applied
    findings: list[Finding]  # its lint


def verified_together(text: str, chosen: list[Finding], findings: list[Finding], path: str,
                      options: LintOptions, cache: LintCache) -> bool:
    """Are ``chosen``'s fixes, applied together, good, by ``verified``'s tests (the text
    compiles, each fixed finding is gone and none appears, no keyword beside ``**mapping``)? One
    lint of the fixed text instead of one per fix: checking each fix alone costs a lint of the
    whole file per finding, the square of the file's size on a file with a finding per block.
    False (then each fix is checked alone) when two fixes overlap or the result is not good."""
    return lint_of_fixed_together(text, chosen, findings, path, options, cache) is not None


def lint_of_fixed_together(text: str, chosen: list[Finding], findings: list[Finding], path: str,
                           options: LintOptions, cache: LintCache, *, unsafe: bool = False,
                           counting: bool = False) -> FixedLint | None:
    """``verified_together``, with the lint of the fixed text when the fixes are good (the next
    pass of ``fix_source`` starts from it), else None. ``counting``: see ``verdict``."""
    if len(chosen) < 2:
        return None
    new_text, count = apply_fixes(text, [f.fix for f in chosen])  # type: ignore[misc]
    if count != len(chosen) or new_text == text:
        return None
    if not compiles_without_new_keywords(text, new_text, path):
        return None
    before = Counter((f.code, f.message) for f in findings)
    before.subtract(Counter((f.code, f.message) for f in chosen))
    fixed_findings, good = verdict(partial(_lint_findings, new_text, path, options, cache), before,
                                   unsafe, counting)
    return FixedLint(new_text, fixed_findings) if good else None


def _lint_findings(text: str, path: str, options: LintOptions, cache: LintCache, placed: bool) -> list[Finding]:
    from .linter import lint_source

    return lint_source(text, path, options, cache, placed=placed).findings


def verdict(lint: Callable[[bool], list[Finding]], before: Counter, unsafe: bool,
            counting: bool, read_on: bool = True) -> tuple[list[Finding], bool]:
    """The lint of a fixed text (``lint(placed)``), and whether its fixes are good: it has no
    finding beyond ``before`` (by code and message). ``counting`` (the count of what fixing
    would apply; nothing is applied): first judged by a lint that leaves findings unplaced.
    Its (code, message)s hold the placed lint's (it only merges fewer duplicates), so good
    there is good. When it is not good, or an unplaced finding has a fix the next pass could
    apply (whose edits it has not placed), the placed lint decides, as without ``counting``.
    ``read_on=False``: only the verdict is wanted (the findings' fixes do not matter)."""
    findings = lint(not counting)
    if counting and not all_placed(findings):
        if not (Counter((f.code, f.message) for f in findings) - before) and \
                not (read_on and any(allowed(f.fix, unsafe) for f in findings)):
            return findings, True
        findings = lint(True)
    return findings, not (Counter((f.code, f.message) for f in findings) - before)


def all_placed(findings: Iterable[Finding]) -> bool:
    from .linter import is_unplaced

    return not any(is_unplaced(f) for f in findings)


def compiles_without_new_keywords(text: str, new_text: str, path: str) -> bool:
    """CPython compiles ``new_text`` and no call in it has a keyword beside ``**mapping`` that
    ``text`` did not have. A text without ``**`` has no such call: then the keyword walk (two
    more parses of the file) is skipped."""
    try:
        tree = ast.parse(new_text, path) if "**" in new_text else None
        compile(new_text if tree is None else tree, path, "exec", dont_inherit=True)
        added = keywords_beside_double_star(tree) - keywords_beside_double_star(text) if tree else Counter()
    except (SyntaxError, ValueError):
        return False
    return not added


def verified(text: str, finding: Finding, findings: list[Finding], path: str,
             options: LintOptions, cache: LintCache, *, unsafe: bool = False, counting: bool = False) -> bool:
    """Is ``finding``'s fix, applied alone, good? The fixed text compiles; the finding is
    gone and no other appears (compared by code and message); and no call gained a keyword
    beside a ``**mapping`` (the mapping may hold the same keyword: TypeError at run time).
    ``counting``: see ``verdict``."""
    if finding.fix is None:
        return False
    new_text, count = apply_fixes(text, [finding.fix])
    if count != 1 or new_text == text:
        return False
    if not compiles_without_new_keywords(text, new_text, path):
        return False
    before = Counter((f.code, f.message) for f in findings)
    before[(finding.code, finding.message)] -= 1
    return verdict(partial(_lint_findings, new_text, path, options, cache), before, unsafe, counting,
                   read_on=False)[1]


def keywords_beside_double_star(source: str | ast.AST) -> Counter[tuple[str, str]]:
    """(callee, keyword) for every explicit keyword of a call that also passes ``**mapping``
    (``source``: a text, or its parsed tree)."""
    found: Counter[tuple[str, str]] = Counter()
    if isinstance(source, str):
        if "**" not in source:
            return found
        source = ast.parse(source)
    for node in ast.walk(source):
        if isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            callee = ast.dump(node.func)
            for keyword in node.keywords:
                if keyword.arg is not None:
                    found[(callee, keyword.arg)] += 1
    return found
