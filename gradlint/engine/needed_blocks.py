"""Which blocks of a file must libcst parse: the ones a rule can fire in and what they read.

A file that holds one small autograd Function in two thousand lines of other code used to
be parsed whole, because the rules resolve names through the module context. Most rules
read other top-level statements only through names: a Function's base class, the helper
its backward calls, the constant it multiplies by, the import of ``torch``. So the blocks
that must be parsed are

* the *seeds*: blocks where an enabled rule's own text pre-check passes;
* everything the parsed blocks name, recursively: every top-level statement that binds
  the name (all of them: "assigned once" is a fact the analysis uses), and every
  statement other than a ``def``/``class`` that mentions it at module level (a
  ``x.requires_grad_()`` between an assignment and its use);
* star imports, ``__future__`` imports and module-level ``set_default_dtype`` calls, which
  act on every name.

Rules that search the whole module rather than follow names (custom-op pieces spread over
registrations, gradcheck aliases and wrappers, torch.func transforms of a Function applied
elsewhere) keep the whole-file parse, and so does any file ``ast`` cannot read. Names are
collected generously (every identifier-like word of a block, strings and comments
included): a spare block costs time, a missing one a finding. ``tests/test_scale.py`` and
``scripts/compare_speedups.py`` compare the findings with a whole-file parse.
"""

from __future__ import annotations

import ast
import re
import unicodedata
import warnings
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from ..analysis.source import Block
from ..rules.base import Rule
from .prefilter import Code, block_groups, may_fire

# Identifier-like words, generously: runs of ASCII word characters and any non-ASCII ones
# (Python identifiers may hold letters of any script, and combining marks that `\w` does
# not match; outside strings and comments no other non-ASCII character can sit next to one)
WORD = re.compile(r"[A-Za-z0-9_\u0080-\U0010FFFF]+")
_ACTS_ON_EVERY_NAME = re.compile(r"set_default_(?:dtype|tensor_type)|\bimport\s*\*|\b__future__\b")
MIN_BLOCKS = 8  # below this, sorting blocks out costs more than parsing them
MOST = 0.9  # when this share of the blocks is needed (or parsed already), parse them all


def reads_whole_module(rule: type[Rule]) -> bool:
    """Does ``rule`` look for code anywhere in the module, not only where names lead?"""
    return bool(rule.requires_gradcheck_aliases or rule.requires_aliases_of
                or rule.requires_custom_op_parts)


def needed_blocks(text: str, blocks: Sequence[Block], rules: Iterable[type[Rule]],
                  code_of: Callable[[str], Code] = Code,
                  names_of: Callable[[str], BlockNames | None] | None = None,
                  seeds_memo: dict | None = None,
                  parsed: Callable[[str], bool] | None = None) -> set[int] | None:
    """Positions (in ``blocks``) of the blocks to parse, or None: parse them all.

    ``rules``: the enabled rules that can fire in this file (their file-level pre-checks
    passed); ``code_of``: a block text's ``Code`` (shared with the engine, which asks the
    same pre-checks again of the blocks it analyses). For an editor's repeated lints:
    ``names_of``, a block text's ``BlockNames``, and ``seeds_memo``, which blocks are seeds,
    kept between lints (an edit then reads only the blocks it changed); ``parsed``, is a
    block text's tree at hand already (when nearly all are, choosing saves nothing)."""
    rules = list(rules)
    if len(blocks) < MIN_BLOCKS:
        return None
    if parsed is not None and sum(map(parsed, (b.text for b in blocks))) >= MOST * len(blocks):
        return None
    rules_key = tuple(rule.code for rule in rules)
    distinct, _ = block_groups(rules)  # (rules a block's pre-checks cannot tell apart: one each)
    seeds = set()
    for position, block in enumerate(blocks):
        key = (rules_key, block.text)
        seed = seeds_memo.get(key) if seeds_memo is not None else None
        if seed is None:
            code = code_of(block.text)
            seed = bool(_ACTS_ON_EVERY_NAME.search(block.text)) or \
                any(may_fire(rule, block.text, code, ()) for rule in distinct)
            if seeds_memo is not None:
                seeds_memo[key] = seed
        if seed:
            seeds.add(position)
    if _nearly_all(blocks, seeds):
        return None
    users_too = any(reads_whole_module(rule) for rule in rules)
    # Reading every block with `ast` costs a tenth of parsing them with libcst. The names a
    # block surely binds are a cheap part of what `ast` finds, so what they lead to is a part
    # of what is needed: when that part is already nearly all the code, parse it all (on the
    # generated shapes full of findings, the `ast` reading was spent only to find that).
    sure = _NameGraph([sure_names(block.text) for block in blocks]).closure(seeds, users_too)
    if sure is None or _nearly_all(blocks, sure):
        return None
    names = []
    for block in blocks:
        found = (names_of or block_names)(block.text)
        if found is None:
            return None  # libcst decides (and places the syntax error)
        names.append(found)
    needed = _NameGraph(names).closure(seeds, users_too)
    return None if needed is None or _nearly_all(blocks, needed) else needed


def _nearly_all(blocks: Sequence[Block], positions: set[int]) -> bool:
    """Do the blocks at ``positions`` make up nearly all of ``blocks``, by number or by size
    (a test of a thousand gradcheck calls and the imports beside it)? Then all are parsed:
    little is left to save."""
    if len(positions) >= MOST * len(blocks):
        return True
    total = sum(len(block.text) for block in blocks)
    return sum(len(blocks[position].text) for position in positions) >= MOST * total


@dataclass(frozen=True)
class BlockNames:
    """What one block (one top-level statement) binds and names."""

    bound: frozenset[str]  # module-level names it binds
    plain_imports: frozenset[str]  # ...of which `import package` binds these
    words: frozenset[str]  # every identifier-like word in it
    runs_code: bool  # it is not a def or class statement: it runs at import


def block_names(text: str) -> BlockNames | None:
    """None when ``ast`` cannot read the block on its own (a syntax error, or a split of
    the file inside a statement)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return None
    if not module.body and _HAS_CODE.search(text):
        return None
    bound, plain_imports = _bound_names(module.body, text)
    return BlockNames(frozenset(bound), frozenset(plain_imports), _words(text),
                      any(not isinstance(stmt, _DEFINITIONS) for stmt in module.body))


# Lines that surely bind a module-level name, at the start of a line: `def f`, `class C`,
# `x = ...`, `x: int = ...` (a line inside a string may look like one: a spare block then)
_SURELY_BINDS = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)|^class[ \t]+(\w+)|^(\w+)[ \t]*(?::[^=\n]*)?=(?!=)",
                           re.MULTILINE)


def sure_names(text: str) -> BlockNames:
    """What a block binds, at least, read from its text without ``ast``: only names that
    ``block_names`` finds too (a statement at the start of a line), so that what they lead
    to is needed in any case."""
    bound: set[str] = set()
    runs_code = False
    for match in _SURELY_BINDS.finditer(text):
        bound.add(match.group(1) or match.group(2) or match.group(3))
        runs_code = runs_code or match.group(3) is not None
    return BlockNames(frozenset(bound), frozenset(), _words(text), runs_code)


def _words(text: str) -> frozenset[str]:
    """The words of ``text``, non-ASCII ones also NFKC-normalized: the form ``ast`` (like
    the interpreter) gives the names a block binds (`ﬁx` binds `fix`)."""
    words = set(WORD.findall(text))
    if not text.isascii():
        words.update([unicodedata.normalize("NFKC", word) for word in words if not word.isascii()])
    return frozenset(words)


class _NameGraph:
    """Which blocks bind, mention at module level, or mention at all each name."""

    def __init__(self, names: Sequence[BlockNames]):
        self.words = [found.words for found in names]
        self.binders: dict[str, set[int]] = {}
        for position, found in enumerate(names):
            for name in found.bound:
                self.binders.setdefault(name, set()).add(position)
        self.bound = [found.bound - found.plain_imports for found in names]
        self.touchers: dict[str, set[int]] = {}
        for position, found in enumerate(names):
            if found.runs_code:
                for name in found.words & self.binders.keys():
                    self.touchers.setdefault(name, set()).add(position)
        self._users: dict[str, set[int]] | None = None

    def users(self, name: str) -> set[int]:
        if self._users is None:
            self._users = {}
            for position, words in enumerate(self.words):
                for word in words & self.binders.keys():
                    self._users.setdefault(word, set()).add(position)
        return self._users.get(name, set())

    def closure(self, seeds: set[int], users_too: bool) -> set[int] | None:
        """The seeds, what they name (recursively) and, with ``users_too``, the blocks
        that name what the seeds (and such users) bind: a gradcheck wrapper's callers, a
        custom op's registrations, a torch.func alias's uses."""
        needed = set(seeds)
        frontier = list(seeds)
        users_frontier = list(seeds) if users_too else []
        # a name's binders (or users) are added once: a name every block uses (`torch`,
        # imported again in every notebook cell) is not gone through again for each block
        named: set[str] = set()
        used: set[str] = set()
        while frontier or users_frontier:
            if users_frontier:
                position = users_frontier.pop()
                for name in self.bound[position] - used:
                    used.add(name)
                    for user in self.users(name):
                        if user not in needed:
                            needed.add(user)
                            frontier.append(user)
                            users_frontier.append(user)
                continue
            position = frontier.pop()
            for name in self.words[position] - named:
                named.add(name)
                for found in (*self.binders.get(name, ()), *self.touchers.get(name, ())):
                    if found not in needed:
                        needed.add(found)
                        frontier.append(found)
        # nearly all: parse all (little to save, and an editor's next lint, which finds them
        # all parsed, then sees the same module context and keeps its cached findings)
        return needed if len(needed) < MOST * len(self.words) else None


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_HAS_CODE = re.compile(r"^[ \t]*[^\s#]", re.MULTILINE)


def _bound_names(statements: list[ast.stmt], text: str) -> tuple[set[str], set[str]]:
    """Module-level names the statements bind (generously: also a comprehension's
    variables), and every name a nested ``global`` declares; and which of them only
    ``import package`` binds (a module object: what uses it is not about this code)."""
    names: set[str] = set()
    plain_imports: set[str] = set()
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            for decorator in node.decorator_list:  # `@pytest.fixture(name="x")` provides `x`
                names.update(value.value for value in ast.walk(decorator)
                             if isinstance(value, ast.Constant) and isinstance(value.value, str)
                             and value.value.isidentifier())
            continue  # names bound in its body are its own (its `global`s: below)
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.partition(".")[0])
                if alias.asname is None:
                    plain_imports.add(alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        pending.extend(ast.iter_child_nodes(node))
    if "global" in text:
        for stmt in statements:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Global):
                    names.update(node.names)
    return names, plain_imports
