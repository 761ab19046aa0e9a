"""The pure core: source text in, findings out.

``lint_source`` knows nothing of files, terminals or editors. Give it a ``LintCache`` and
it becomes incremental: a block whose text and module context did not change is neither
re-parsed nor re-analysed.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import libcst as cst

from ..analysis import memos, traverse
from ..analysis.block import BlockAnalysis
from ..analysis.conftest_fixtures import FixtureSource
from ..analysis.custom_ops import MENTIONS_TORCH_LIBRARY, custom_ops, library_aliases, limit_search
from ..analysis.facts import Evaluator
from ..analysis.gradcheck_calls import gradcheck_names
from ..analysis.scopes import ModuleContext, Site, default_dtype_of
from ..analysis.source import NEWLINE, Block, NameSet, ScannedSource, rescan, scan
from ..findings import Applicability, Edit, Finding, Fix, Range, Severity
from ..rules import RULES_BY_CODE, SYNTAX_ERROR, UNUSED_SUPPRESSION
from ..rules.base import Report, Rule
from .required_text import may_match
from . import timings
from .blocks import BlockCache, ParsedBlock
from .options import AUTO, LintOptions, fingerprint
from .needed_blocks import BlockNames, block_names, needed_blocks
from .prefilter import Code, block_groups, may_fire, nothing_to_find
from .suppressions import is_suppressed, parse_suppressions, unused_codes, without_codes

MAX_SOURCE_CHARS = 8 * 2 ** 20  # larger files are generated code; parsing them would take minutes
# A block that fails to parse may come from a wrong lexical split (exotic strings): in files
# up to this size, a whole-file compile decides. Beyond it, that O(file) check on every
# keystroke of half-typed code costs more than the rare mis-split it recovers from.
WHOLE_FILE_RETRY_CHARS = 512 * 1024
# marks a findings-cache key whose findings also depend on other blocks' texts (kept beside)
READS = "reads other blocks"


@dataclass
class LintResult:
    findings: list[Finding]
    suppressed: int = 0
    syntax_errors: int = 0
    placed: bool = True  # False: some findings are unplaced (``lint_source(placed=False)``)


# the line of an unplaced finding's range (a placed one's lines count from 1)
UNPLACED_LINE = 0


def is_unplaced(finding: Finding) -> bool:
    """A finding of ``lint_source(placed=False)`` that has no place: see there."""
    return finding.range.start.line == UNPLACED_LINE


class LintCache:
    """Shared by successive lints of the same (or similar) documents; bounded by bytes."""

    def __init__(self, max_bytes: int = 96 * 2 ** 20, keep_findings: bool = True):
        """``keep_findings``: False for a cache no later lint reads (a check that fixes
        nothing and counts no fix): its blocks' findings are then neither looked up nor
        kept, and what only their keys need is not made (the module context's key, of
        every block's summary)."""
        self.keep_findings = keep_findings
        self.blocks = BlockCache(max_bytes * 2 // 3)
        # findings per (block text, context): an LRU bounded by estimated bytes
        self.findings: OrderedDict[tuple, list[Finding]] = OrderedDict()
        self._finding_bytes: dict[tuple, int] = {}
        self.findings_bytes = 0
        self.max_findings_bytes = max_bytes // 6
        self.texts_read: dict[tuple, frozenset[str]] = {}  # for findings that read other blocks
        self.analysed_blocks = 0  # blocks whose rules actually ran (for tests/benchmarks)
        # by block text, bounded by the texts' size (a block's words take about 3 bytes a
        # character: 4 MiB of blocks, a 100,000-line file, hold about 12 MB)
        self.names: OrderedDict[str, BlockNames | None] = OrderedDict()
        self.names_chars = 0
        self.max_names_chars = 4 * 2 ** 20
        self.seeds = _SeedsMemo(self.max_names_chars)  # (rules, block text) -> can a rule fire
        self.scans: OrderedDict[str, tuple[str, ScannedSource]] = OrderedDict()  # by path
        self.scan_capacity = 16
        self.capacity = 4000  # entries, for callers that keep their own per-block stores here

    def scan(self, text: str, path: str | None) -> ScannedSource:
        """The blocks of ``text``; the previous version of the same path is rescanned only
        where it changed (an editor's one-line edit to a big file costs one block)."""
        previous = self.scans.get(path) if path is not None else None
        scanned = scan(text) if previous is None else rescan(previous[0], previous[1], text)
        if path is not None:
            self.scans.pop(path, None)
            self.scans[path] = (text, scanned)
            while len(self.scans) > self.scan_capacity:
                self.scans.popitem(last=False)
        return scanned

    def block_names(self, text: str) -> BlockNames | None:
        """What a block binds and names (see needed_blocks), kept for the next lint."""
        if text in self.names:
            self.names.move_to_end(text)
            return self.names[text]
        found = self.names[text] = block_names(text)
        self.names_chars += len(text)
        while self.names_chars > self.max_names_chars and len(self.names) > 1:
            old, _ = self.names.popitem(last=False)
            self.names_chars -= len(old)
        return found

    def remember(self, key: tuple, findings: list[Finding], read: frozenset[str] = frozenset()) -> None:
        """Keep a block's ``findings`` under ``key``; ``read``: the texts of the other blocks
        they depend on (kept beside them: they hold only while those texts are unchanged)."""
        size = 200 + len(key[0]) + sum(400 + len(f.message) for f in findings) + sum(len(t) for t in read)
        if key in self.findings:
            self.findings_bytes -= self._finding_bytes[key]
        self.findings[key] = findings
        self._finding_bytes[key] = size
        if read:
            self.texts_read[key] = read
        self.findings_bytes += size
        while self.findings_bytes > self.max_findings_bytes and len(self.findings) > 1:
            old, _ = self.findings.popitem(last=False)
            self.findings_bytes -= self._finding_bytes.pop(old)
            self.texts_read.pop(old, None)


class _SeedsMemo(dict):
    """A dict keyed by (rules, block text), emptied when its texts exceed ``max_chars``."""

    def __init__(self, max_chars: int):
        super().__init__()
        self.max_chars = max_chars
        self.chars = 0

    def __setitem__(self, key: tuple, value: bool) -> None:
        if key not in self:
            self.chars += len(key[1])
            if self.chars > self.max_chars:
                self.clear()
                self.chars = len(key[1])
        super().__setitem__(key, value)


@dataclass
class ModuleView:
    """A module split into parsed blocks, with the context every block's analysis shares."""

    scanned: ScannedSource
    parsed: list[tuple[Block, ParsedBlock]]  # every block, parsed or not
    good: list[tuple[Block, ParsedBlock]]  # the blocks that parse
    indexes: list[range]  # for each good block, its statements' positions in the module
    context: ModuleContext
    evaluator: Evaluator
    gradcheck_aliases: NameSet
    top_to_block: dict[int, int]  # id(top-level statement) -> position in `good`
    _lazy: dict = field(default_factory=dict)

    @cached_property
    def context_key(self) -> str:
        """Changes when anything other blocks depend on changes."""
        return fingerprint((tuple(entry.summary for _, entry in self.good), self.context.default_dtype))

    def custom_op_blocks(self, text: str) -> frozenset[int]:
        """Positions of the blocks holding a piece of a torch.library custom op."""
        if "custom_op_blocks" not in self._lazy:
            found: set[int] = set()
            if may_match(MENTIONS_TORCH_LIBRARY, text):
                for op in custom_ops(self.context):
                    for site in op.sites():
                        position = self.top_to_block.get(id(site.top_statement))
                        if position is not None:
                            found.add(position)
            self._lazy["custom_op_blocks"] = frozenset(found)
        return self._lazy["custom_op_blocks"]

    def lines_of(self, node: cst.CSTNode, site: Site) -> tuple[int, int] | None:
        """(first, last) 1-based file lines of ``node``, which sits in the statement at
        ``site`` (any block): where a custom op's backward or fake is, for the runner."""
        position = self.top_to_block.get(id(site.top_statement))
        if position is None:
            return None
        block, entry = self.good[position]
        span = entry.position(node)
        return span.start.line + block.start_line - 1, span.end.line + block.start_line - 1

    def column_of(self, node: cst.CSTNode, site: Site) -> int | None:
        """0-based column where ``node`` starts (see ``lines_of``)."""
        position = self.top_to_block.get(id(site.top_statement))
        if position is None:
            return None
        return self.good[position][1].position(node).start.column

    def aliases_of(self, qualified: frozenset[str]) -> NameSet:
        """Module-level names bound to one of ``qualified`` (`from torch.func import grad`)."""
        key = ("aliases", qualified)
        if key not in self._lazy:
            self._lazy[key] = NameSet(name for name in self.context.scope.table.bindings
                                      if self.context.resolve_name(name, self.context.scope) in qualified)
        return self._lazy[key]

    def analysis(self, position: int) -> BlockAnalysis:
        block, entry = self.good[position]
        assert entry.module is not None
        return BlockAnalysis(entry.module, block.text, self.context, self.indexes[position],
                             self.evaluator, self.gradcheck_aliases)


def view_module(text: str, cache: LintCache, default_dtype: str | None = AUTO,
                conftests: Sequence[str] = (), path: str | None = None,
                cancelled: Callable[[], bool] | None = None,
                only: Callable[[Sequence[Block]], set[int] | None] | None = None,
                code_of: Callable[[str], Code] = Code) -> ModuleView:
    """``only``: given the blocks, the positions of those to parse (None: all); a chosen
    block libcst cannot parse makes the whole file parsed. ``code_of``: a block text's
    ``Code``, shared with the pre-checks."""
    with timings.phase(timings.PRE_CHECKS):
        scanned = cache.scan(text, path)
        chosen = only(scanned.blocks) if only is not None else None
    with timings.phase(timings.PARSING):
        if chosen is None:
            parsed = _parse_blocks(scanned.blocks, cache.blocks, text, cancelled)
        else:
            parsed = _parse_blocks([b for i, b in enumerate(scanned.blocks) if i in chosen],
                                   cache.blocks, text, cancelled, retry_whole=False)
            if any(entry.module is None for _, entry in parsed):
                parsed = _parse_blocks(scanned.blocks, cache.blocks, text, cancelled)
    with timings.phase(timings.CONTEXT):
        return _view(text, cache, default_dtype, conftests, scanned, parsed, code_of)


def _view(text: str, cache: LintCache, default_dtype: str | None, conftests: Sequence[str],
          scanned: ScannedSource, parsed: list[tuple[Block, ParsedBlock]],
          code_of: Callable[[str], Code] = Code) -> ModuleView:
    """The view of the parsed blocks: their statements as one module, and its context."""
    good = [(block, entry) for block, entry in parsed if entry.module is not None]
    statements: list[cst.BaseStatement] = []
    indexes: list[range] = []
    for _, entry in good:
        assert entry.module is not None
        indexes.append(range(len(statements), len(statements) + len(entry.module.body)))
        statements.extend(entry.module.body)
    context = ModuleContext(statements)
    # custom ops are defined and registered only where the code mentions torch.library
    limit_search(context, _library_statements(text, good, indexes, context, code_of))
    if default_dtype == AUTO:
        context.default_dtype = default_dtype_of([(e.module, b.text) for b, e in good], context)
    else:
        context.default_dtype = default_dtype
    top_to_block = {id(stmt): position for position, (_, entry) in enumerate(good)
                    for stmt in entry.module.body}  # type: ignore[union-attr]
    fixtures = None
    if conftests:
        modules = [entry.module for entry in map(cache.blocks.get, conftests)
                   if entry.module is not None]
        fixtures = FixtureSource(modules, context.default_dtype)
    return ModuleView(scanned, parsed, good, indexes, context,
                      Evaluator(context, fixtures), _gradcheck_aliases(context, text), top_to_block)


class LintCancelled(Exception):
    """The lint was given up (``cancelled()`` said so): a newer version is on its way."""


def lint_source(text: str, path: str = "<stdin>", options: LintOptions | None = None,
                cache: LintCache | None = None, *, exhaustive: bool = False,
                compiles: Callable[[], bool] | None = None,
                cancelled: Callable[[], bool] | None = None,
                progress: Callable[[list[Finding]], None] | None = None,
                progress_interval: float = 1.0, placed: bool = True) -> LintResult:
    """The findings in ``text``. ``exhaustive`` turns every shortcut off (text pre-checks,
    caches, the fast tree walk): the reference the fast path must agree with.

    For editors: ``cancelled`` is asked between blocks (LintCancelled when it says yes);
    ``progress`` receives the findings of the blocks analysed so far (suppressions applied,
    sorted) when a lint has run for ``progress_interval`` seconds, and then as often, so a
    big file shows its first diagnostics early and the rest follow. ``compiles``, when
    given, may say that CPython is known to accept ``text`` (a file's current ``.pyc``),
    which spares the syntax check of a file no rule can fire in.

    ``placed=False`` is for judging fixes, which reads findings by code and message only:
    the findings of a block analysed afresh (one that holds no suppression comment) are left
    unplaced, which spares the code generation that places them. An unplaced finding's range
    is a stand-in on line ``UNPLACED_LINE`` (``is_unplaced``), its fix (if any) has no edits,
    and findings are not merged by place but by the node reported (so their (code, message)
    multiset holds the placed lint's, and maybe duplicates it merges). They are never cached,
    shown nor applied: a caller that needs more asks again with ``placed=True``."""
    options = options or LintOptions()
    try:
        if exhaustive:
            with traverse.libcst_traversal():
                return _lint(text, path, options, LintCache(), exhaustive=True)
        return _lint(text, path, options, cache, exhaustive=False, compiles=compiles, cancelled=cancelled,
                     progress=progress, progress_interval=progress_interval, placed=placed)
    finally:
        memos.forget()  # what the analysis memoized about this lint's trees


def _lint(text: str, path: str, options: LintOptions, cache: LintCache | None, *,
          exhaustive: bool, compiles: Callable[[], bool] | None = None, cancelled: Callable[[], bool] | None = None,
          progress: Callable[[list[Finding]], None] | None = None,
          progress_interval: float = 1.0, placed: bool = True) -> LintResult:
    started = time.monotonic()
    cache = LintCache(keep_findings=False) if cache is None else cache
    if len(text) > MAX_SOURCE_CHARS:
        return _too_large(text, path, options)
    if "torch" not in text:
        return LintResult([])  # gradlint's scope: code that uses torch
    with timings.phase(timings.PRE_CHECKS):
        file_code = Code(text)  # (its text without comments and strings is made once)
        if not exhaustive and nothing_to_find(text, options.select, compiles, file_code):
            return LintResult([])
        code_of = _CodeOf()
        rules = _enabled_rules(options)
        only = None
        if not exhaustive:
            rules = _possible_in_file(rules, file_code)
            only = _needed_blocks(text, rules, file_code, code_of, cache)
    view = _view_needed_blocks(text, cache, options, path, cancelled, only, code_of)
    findings, syntax_errors = _syntax_findings(view, options)
    suppressions = parse_suppressions(view.scanned.comments)
    report_progress = _ProgressReporter(progress, progress_interval, started, suppressions, path)
    blocks = _BlockLinter(text, options, cache, view, rules, code_of, exhaustive,
                          None if placed else sorted(suppressions[0]))
    for position, (block, entry) in enumerate(view.good):
        if cancelled is not None and cancelled():
            raise LintCancelled()
        report_progress(findings)
        findings.extend(blocks.findings(position, block, entry))
    for _, entry in view.good:
        entry.forget_positions()  # (those of blocks that fixes reached into)
    recorder = timings.current()
    if recorder is not None:
        recorder.parsed_files += 1
        recorder.parsed_lines += sum(block.text.count("\n") for block, _ in view.parsed)
    with timings.phase(timings.SUPPRESSIONS):
        result = _suppressed(findings, suppressions, syntax_errors, text, view, options, path)
    result.placed = blocks.unplaced == 0
    return result


def _too_large(text: str, path: str, options: LintOptions) -> LintResult:
    """One syntax-error finding says the file is too large to analyse (if GL000 is on)."""
    if SYNTAX_ERROR.code not in options.select:
        return LintResult([])
    rng = Range.of(1, 0, 1, 0)
    message = (f"file is too large to analyse ({len(text) // 2 ** 20} MiB; the limit is "
               f"{MAX_SOURCE_CHARS // 2 ** 20} MiB)")
    return LintResult([Finding(SYNTAX_ERROR.code, SYNTAX_ERROR.name,
                               _severity(SYNTAX_ERROR, None, options), message, rng, None, 1, path)])


class _CodeOf(dict):
    """A block text's ``Code`` (its text without comments and strings), made once per lint."""

    def __call__(self, block_text: str) -> Code:
        found = self.get(block_text)
        if found is None:
            found = self[block_text] = Code(block_text)
        return found


def _enabled_rules(options: LintOptions) -> list[Rule]:
    """The selected rules that check blocks (the engine reports the others itself)."""
    return [RULES_BY_CODE[code]() for code in sorted(options.select)
            if code in RULES_BY_CODE and not RULES_BY_CODE[code].engine_level]


def _possible_in_file(rules: list[Rule], file_code: Code) -> list[Rule]:
    """Rules whose file-level precondition fails cannot fire in any block."""
    return [rule for rule in rules if rule.requires_in_file is None
            or file_code.matches(rule.requires_in_file, True)]


def _needed_blocks(text: str, rules: list[Rule], file_code: Code, code_of: _CodeOf,
                   cache: LintCache) -> Callable:
    """Which blocks to parse: those some rule may fire in, and those they need."""
    possible = [rule for rule in rules if may_fire(type(rule), text, file_code)]
    return partial(needed_blocks, text, rules=possible, code_of=code_of,
                   names_of=cache.block_names, seeds_memo=cache.seeds, parsed=cache.blocks.holds)


def _view_needed_blocks(text: str, cache: LintCache, options: LintOptions, path: str,
                        cancelled: Callable[[], bool] | None, only: Callable | None,
                        code_of: Callable[[str], Code] = Code) -> ModuleView:
    """The module's view, parsing only what ``only`` says is needed (all blocks if None);
    parsed blocks this lint did not use leave the cache."""
    cache.blocks.mark()
    view = view_module(text, cache, options.default_dtype, options.conftests, path, cancelled, only,
                       code_of)
    cache.blocks.trim()
    return view


def _syntax_findings(view: ModuleView, options: LintOptions) -> tuple[list[Finding], int]:
    """A finding per block that does not parse (if GL000 is on), and how many there are."""
    findings: list[Finding] = []
    syntax_errors = 0
    for block, entry in view.parsed:
        if entry.error is not None:
            syntax_errors += 1
            if SYNTAX_ERROR.code in options.select:
                findings.append(_syntax_finding(block, entry, options))
    return findings, syntax_errors


class _ProgressReporter:
    """Calls ``progress`` with the findings so far (suppressions applied, sorted) once the
    lint has run for ``interval`` seconds, and then as often."""

    def __init__(self, progress: Callable[[list[Finding]], None] | None, interval: float,
                 started: float, suppressions, path: str):
        self.progress = progress
        self.interval = interval
        self.reported = started
        self.by_line, self.file_codes = suppressions
        self.path = path

    def __call__(self, findings: list[Finding]) -> None:
        if self.progress is None or time.monotonic() - self.reported < self.interval:
            return
        self.progress(_finish([f for f in findings
                               if not is_suppressed(f, self.by_line, self.file_codes, set())], self.path))
        self.reported = time.monotonic()


@dataclass
class _BlockLinter:
    """The findings of one parsed block: from the cache when its text and module context
    did not change, else from the rules that may fire in it."""

    text: str
    options: LintOptions
    cache: LintCache
    view: ModuleView
    rules: list[Rule]
    code_of: _CodeOf
    exhaustive: bool
    # None: place every finding; else the lines with suppression comments (the findings
    # of a block analysed afresh are placed only when one of them is in the block)
    suppression_lines: list[int] | None = None
    unplaced: int = 0  # unplaced findings made (each has its own stand-in range)

    @cached_property
    def context_key(self) -> str:
        return fingerprint((self.view.context_key, self.options.key()))

    def findings(self, position: int, block: Block, entry: ParsedBlock) -> list[Finding]:
        keep = self.cache.keep_findings
        key = (block.text, self.context_key) if keep else ()
        cached = self._cached(key) if keep else None
        if cached is not None:
            return [f.shifted(block.start_line - 1) for f in cached]
        recorder = timings.current()
        if recorder is not None:
            recorder.enter(timings.PRE_CHECKS)
        active = self._active_rules(position, block)
        if recorder is not None:
            recorder.leave()
        if not active:
            if keep:
                self.cache.remember(key, [])
            return []
        self.cache.analysed_blocks += 1
        analysis = self.view.analysis(position)
        if self.suppression_lines is not None and not self._holds_suppression(block):
            return self._unplaced(self._reports(active, analysis))
        local, cacheable = self._check(active, analysis, position, entry)
        if cacheable and keep:
            read = self._texts_read(analysis.statements_read)
            if read is not None:
                self.cache.remember(key if not read else key + (READS,), local, read)
        entry.forget_positions()  # ~200 bytes per character: never kept
        return [f.shifted(block.start_line - 1) for f in local]

    def _cached(self, key: tuple) -> list[Finding] | None:
        """The block's findings from an earlier lint: kept under the block's text and module
        context, and, for a block whose findings read other blocks (a custom op's pieces, a
        Function's class), only while those blocks' texts are all still in the module."""
        findings = self.cache.findings
        if key in findings:
            findings.move_to_end(key)
            return findings[key]
        reading = key + (READS,)
        if reading in findings and self.cache.texts_read[reading] <= self._block_texts:
            findings.move_to_end(reading)
            return findings[reading]
        return None

    @cached_property
    def _block_texts(self) -> frozenset[str]:
        return frozenset(block.text for block, _ in self.view.good)

    def _texts_read(self, statements: set[int]) -> frozenset[str] | None:
        """The texts of the blocks holding ``statements`` (ids of top-level statements),
        or None when one of them is in no block of the view."""
        texts = set()
        for statement in statements:
            position = self.view.top_to_block.get(statement)
            if position is None:
                return None
            texts.add(self.view.good[position][0].text)
        return frozenset(texts)

    def _active_rules(self, position: int, block: Block) -> list[Rule]:
        if self.exhaustive:
            return list(self.rules)
        code = self.code_of(block.text)
        view = self.view
        representatives, group_of = self._groups
        fires = [may_fire(rule, block.text, code, view.gradcheck_aliases)
                 or _may_fire_across_blocks(rule, position, block.text, view, self.text)
                 for rule in representatives]
        return [rule for rule, group in zip(self.rules, group_of) if fires[group]]

    @cached_property
    def _groups(self) -> tuple[list[Rule], list[int]]:
        return block_groups(self.rules)

    def _holds_suppression(self, block: Block) -> bool:
        lines = self.suppression_lines
        if not lines:
            return False
        first = bisect_left(lines, block.start_line)
        return first < len(lines) and lines[first] < block.start_line + block.text.count("\n") + 1

    def _reports(self, active: list[Rule], analysis: BlockAnalysis) -> list[tuple[Rule, Report]]:
        recorder = timings.current()
        if recorder is None:
            return [(rule, report) for rule in active for report in rule.check(analysis)]
        reports = []
        for rule in active:
            recorder.enter(timings.RULE + rule.code)
            reports.extend((rule, report) for report in rule.check(analysis))
            recorder.leave()
        return reports

    def _unplaced(self, reports: list[tuple[Rule, Report]]) -> list[Finding]:
        """The reports as unplaced findings (see ``lint_source``), one per rule, message and
        reported node: two reports alike in these have one place, so the placed lint merges
        them too (it merges by place, which may merge more)."""
        seen: set[tuple] = set()
        found = []
        for rule, report in reports:
            key = (rule.code, report.message, id(report.node), id(report.end_node or report.node))
            if key in seen:
                continue
            seen.add(key)
            self.unplaced += 1
            fix = None if report.fix is None else Fix(report.fix.title, report.fix.applicability, ())
            found.append(Finding(rule.code, rule.name, _severity(rule, report.severity, self.options),
                                 report.message, Range.of(UNPLACED_LINE, self.unplaced, UNPLACED_LINE,
                                                          self.unplaced), fix))
        return found

    def _check(self, active: list[Rule], analysis: BlockAnalysis, position: int,
               entry: ParsedBlock) -> tuple[list[Finding], bool]:
        """The rules' findings in the block (positions relative to it), and whether they may
        be cached (none of them lies in another block)."""
        view = self.view
        reports = self._reports(active, analysis)
        recorder = timings.current()
        if recorder is not None:
            recorder.enter(timings.POSITIONS)
        entry.resolve_positions_in(_placed_nodes((report for _, report in reports), position,
                                                 view.top_to_block))
        local: list[Finding] = []
        cacheable = True
        for rule, report in reports:
            finding, remote = _to_finding(rule, report, position, view.good, view.top_to_block,
                                          self.options)
            cacheable = cacheable and not remote
            local.append(finding)
        if recorder is not None:
            recorder.leave()
        return local, cacheable


def _suppressed(findings: list[Finding], suppressions, syntax_errors: int, text: str,
                view: ModuleView, options: LintOptions, path: str) -> LintResult:
    """The findings no `# noqa` suppresses, with GL009's unused suppressions, sorted."""
    by_line, file_codes = suppressions
    used: set = set()
    kept = [f for f in findings if not is_suppressed(f, by_line, file_codes, used)]
    if UNUSED_SUPPRESSION.code in options.select and not file_codes:
        kept.extend(_unused_suppressions(text, view.scanned.comments, by_line, used, options))
    kept = _finish(kept, path)
    return LintResult(kept, suppressed=len(findings) - len(kept), syntax_errors=syntax_errors)


def _finish(findings: list[Finding], path: str) -> list[Finding]:
    kept = [f.with_path(path) for f in _dedupe(findings)]
    kept.sort(key=Finding.sort_key)
    return kept


def _unused_suppressions(text: str, comments: Mapping[int, str], by_line, used: set,
                         options: LintOptions) -> list[Finding]:
    findings = []
    starts: list[int] = []  # where each line starts (found only if a suppression is unused)
    enabled = {code for code in options.select if not RULES_BY_CODE[code].engine_level}
    for suppression, codes in unused_codes(by_line, used, enabled):
        if not starts:
            starts = [0] + [m.end() for m in NEWLINE.finditer(text)]
        line = suppression.line
        end = starts[line] if line < len(starts) else len(text)
        line_text = text[starts[line - 1]:end].rstrip("\r\n")
        comment = comments[line]
        at = line_text.rindex(comment)
        new_comment = without_codes(comment, suppression, codes)
        if new_comment:
            edit = Edit(Range.of(line, at, line, at + len(comment)), new_comment)
        else:
            before = len(line_text[:at].rstrip())
            edit = Edit(Range.of(line, before, line, at + len(comment)), "")
        listed = ", ".join(codes)
        message = f"unused suppression: no {listed} finding on this line"
        title = f"Remove unused {'code' if len(codes) == 1 else 'codes'} {listed}"
        rng = Range.of(line, at + suppression.column, line, at + suppression.end_column)
        findings.append(Finding(UNUSED_SUPPRESSION.code, UNUSED_SUPPRESSION.name,
                                _severity(UNUSED_SUPPRESSION, None, options), message, rng,
                                Fix(title, Applicability.SAFE, (edit,)), line))
    return findings


def _parse_blocks(blocks: Sequence[Block], cache: BlockCache, text: str,
                  cancelled: Callable[[], bool] | None = None,
                  retry_whole: bool = True) -> list[tuple[Block, ParsedBlock]]:
    parsed = []
    for block in blocks:
        if cancelled is not None and cancelled():
            raise LintCancelled()
        parsed.append((block, cache.get(block.text)))
    if all(entry.module is not None for _, entry in parsed) or not retry_whole:
        return parsed
    # The lexical split can be wrong around exotic strings: merge a failing block with the
    # next failing one, and if CPython accepts the whole file, parse it in one piece.
    merged: list[tuple[Block, ParsedBlock]] = []
    index = 0
    while index < len(parsed):
        block, entry = parsed[index]
        if entry.module is None and index + 1 < len(parsed) and parsed[index + 1][1].module is None:
            joined = Block(block.text + parsed[index + 1][0].text, block.start_line)
            joined_entry = cache.get(joined.text)
            if joined_entry.module is not None:
                merged.append((joined, joined_entry))
                index += 2
                continue
        merged.append((block, entry))
        index += 1
    if any(entry.module is None for _, entry in merged) and len(text) <= WHOLE_FILE_RETRY_CHARS:
        try:
            compile(text, "<module>", "exec", dont_inherit=True, flags=0x400)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return merged
        whole = cache.get(text)
        if whole.module is not None:
            return [(Block(text, 1), whole)]
    return merged




def _library_statements(text: str, good: Sequence[tuple[Block, ParsedBlock]],
                        indexes: Sequence[range], context: ModuleContext,
                        code_of: Callable[[str], Code] = Code) -> list[int]:
    """Positions of the top-level statements whose code mentions torch.library (or a
    module-level alias of its API). (A block's ``Code`` answers what the pre-checks asked
    already: whether the pattern matches its text, and its code.)"""
    if not may_match(MENTIONS_TORCH_LIBRARY, text):
        return []
    aliases = library_aliases(context)
    alias = re.compile(r"\b(?:" + "|".join(map(re.escape, aliases)) + r")\b") if aliases else None
    found = []
    for (block, _), block_indexes in zip(good, indexes):
        code = code_of(block.text)
        in_text = code.matches(MENTIONS_TORCH_LIBRARY, False)
        if in_text or (alias and alias.search(block.text)):
            if (code.matches(MENTIONS_TORCH_LIBRARY, True) if in_text else
                    may_match(MENTIONS_TORCH_LIBRARY, code())) or (alias and alias.search(code())):
                found.extend(block_indexes)
    return found


def _may_fire_across_blocks(rule: Rule, position: int, block_text: str, view: ModuleView,
                            text: str) -> bool:
    """Rules about code spread over blocks: the block holds a piece of a custom op, or
    names a module-level alias of an API the rule is about."""
    if rule.requires_custom_op_parts and position in view.custom_op_blocks(text):
        return True
    if rule.requires_aliases_of:
        return view.aliases_of(rule.requires_aliases_of).in_text(block_text)
    return False


def _gradcheck_aliases(context: ModuleContext, text: str) -> NameSet:
    """Module-level names other than `gradcheck` that call it: aliases, partials, wrappers."""
    return NameSet(gradcheck_names(context) if "gradcheck" in text else ())


def _severity(rule: type[Rule] | Rule, report_severity: Severity | None,
              options: LintOptions) -> Severity:
    if rule.code in options.severity:
        return options.severity[rule.code]
    return report_severity or rule.severity


def _syntax_finding(block: Block, entry: ParsedBlock, options: LintOptions) -> Finding:
    error = entry.error
    assert error is not None
    offset = block.start_line - 1
    rng = Range.of(error.line + offset, error.column, error.end_line + offset, error.end_column)
    return Finding(SYNTAX_ERROR.code, SYNTAX_ERROR.name, _severity(SYNTAX_ERROR, None, options),
                   error.message, rng, None, rng.start.line)


def _to_finding(rule: Rule, report: Report, position: int,
                good: Sequence[tuple[Block, ParsedBlock]], top_to_block: Mapping[int, int],
                options: LintOptions) -> tuple[Finding, bool]:
    """A report becomes a finding with positions relative to its block.

    Returns whether the finding has an edit in another block (such findings are not
    cached, since their positions depend on that other block too).
    """
    _, entry = good[position]
    (start_line, start_column), _ = _span(entry, report.node)
    _, (end_line, end_column) = _span(entry, report.end_node or report.node)
    statement_line = entry.span(report.site.statement)[0][0]
    fix = None
    remote = False
    if report.fix is not None:
        edits = []
        for replacement in report.fix.replacements:
            target = top_to_block.get(id(replacement.site.top_statement), position)
            target_block, target_entry = good[target]
            if target != position:  # (another block's node: placed alone if nothing of it is)
                target_entry.resolve_positions_of((replacement.node,))
            (line, column), (last_line, last_column) = target_entry.whitespace_span(replacement.node)
            shift = target_block.start_line - good[position][0].start_line
            remote = remote or target != position
            edits.append(Edit(Range.of(line + shift, column, last_line + shift, last_column),
                              replacement.new_text))
        fix = Fix(report.fix.title, report.fix.applicability, tuple(sorted(set(edits), key=lambda e: e.range)))
    finding = Finding(rule.code, rule.name, _severity(rule, report.severity, options), report.message,
                      Range.of(start_line, start_column, end_line, end_column), fix, statement_line)
    return finding, remote


def _placed_nodes(reports: Iterable[Report], position: int, top_to_block: Mapping[int, int]
                  ) -> Iterator[tuple[cst.CSTNode, cst.BaseStatement]]:
    """The nodes whose positions `_to_finding` reads in block ``position``, the reports'
    own (a fix's edits in other blocks are placed there), each with its statement."""
    for report in reports:
        statement = report.site.statement
        yield report.node, statement
        if report.end_node is not None:
            yield report.end_node, statement
        yield statement, statement
        if report.fix is not None:
            for replacement in report.fix.replacements:
                if top_to_block.get(id(replacement.site.top_statement), position) == position:
                    yield replacement.node, replacement.site.statement


def _span(entry: ParsedBlock, node: cst.CSTNode) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where a node is, parentheses included for expressions."""
    if getattr(node, "lpar", None) and isinstance(node, cst.BaseExpression):
        return entry.whitespace_span(node)
    return entry.span(node)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set = set()
    unique = []
    for finding in findings:
        key = (finding.code, finding.range, finding.message)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique
