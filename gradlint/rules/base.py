"""What a rule is: a class with a code, a name, docs, examples, and a ``check`` method.

A rule is its own spec (the Fixit way): its docstring is the user documentation, in
ruff's sections, and its ``VALID``/``INVALID`` examples teach it (`gradlint rule` and the
docs show them). The long tail of examples lives in tests/fixtures/rules/<CODE>/ (ruff's
way); one generic test runs them all (``examples.all_examples``).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import ClassVar, Iterator

import libcst as cst

from ..analysis.block import BlockAnalysis
from ..analysis.custom_ops import MENTIONS_TORCH_LIBRARY  # noqa: F401  (for the rules)
from ..analysis.scopes import Site
from ..codes import BY_CODE
from ..findings import Applicability, Severity


# a name ending in gradcheck (gradgradcheck too), not gradcheck_wrapper= and the like
MENTIONS_GRADCHECK = re.compile(r"gradcheck(?!\w)")
# (no leading \b: a pattern that starts with a literal is searched for much faster)
DEFINES_BACKWARD = re.compile(r"def\s+(?:backward|vjp)\b")
# patterns about code: the engine does not count matches in comments and strings
# (a docstring that says "gradcheck" does not make a file worth parsing)
CODE_PATTERNS = frozenset({MENTIONS_GRADCHECK, DEFINES_BACKWARD})
# a file that applies an autograd Function (`MyFn.apply`, `apply = MyFn.apply`)
APPLIES_A_FUNCTION = re.compile(r"\.apply\b")
# a block that may call a torch.func transform
MENTIONS_FUNC_TRANSFORM = re.compile(
    r"\b(?:vmap|jacrev|jacfwd|hessian|jvp|vjp|grad_and_value|linearize|functionalize)\b"
    r"|torch\.func|functorch")


@dataclass(frozen=True)
class Replacement:
    """Replace ``node`` (including its parentheses) by ``new_text``."""

    node: cst.CSTNode
    new_text: str
    site: Site  # where the node lives; it may be outside the reporting block


@dataclass(frozen=True)
class FixProposal:
    title: str
    applicability: Applicability
    replacements: tuple[Replacement, ...]


@dataclass(frozen=True)
class Report:
    node: cst.CSTNode  # the range to underline starts here...
    message: str
    site: Site  # the statement holding the node (for `# noqa` on its first line)
    fix: FixProposal | None = None
    severity: Severity | None = None  # when the rule's default does not fit this case
    end_node: cst.CSTNode | None = None  # ...and ends here (default: the node itself)


@dataclass(frozen=True)
class Valid:
    code: str
    why: str = ""  # why this is correct; "real-world" examples say where they come from


@dataclass(frozen=True)
class Invalid:
    code: str
    message: str | None = None  # the exact message expected for the first finding
    # (line, column, end_line, end_column) of the first finding: 1-based, as printed
    range: tuple[int, int, int, int] | None = None
    fixed: str | None = None  # the code after applying the first finding's fix
    applicability: str | None = None  # "safe" | "unsafe" when ``fixed`` is given
    severity: str | None = None
    count: int = 1  # findings of this rule in the example


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]  # one line, for `gradlint rules`
    # the rule can only fire in a block whose text matches this regular expression (a
    # cheap pre-check that spares parsing and analysing most code); None: always run.
    # The engine first looks for the literal text any match must contain (see
    # engine/required_text.py), so prefer patterns with a distinctive literal, and avoid a leading \b.
    requires: ClassVar[re.Pattern | None] = None
    # the pre-check is about code: matches in comments and strings do not count (also true
    # of the shared patterns in CODE_PATTERNS), so docstrings that merely mention
    # torch.library or vmap cost nothing
    requires_in_code: ClassVar[bool] = False
    # ...or contains one of the module's aliases of gradcheck (`gc = torch.autograd.gradcheck`)
    requires_gradcheck_aliases: ClassVar[bool] = False
    # ...or holds a piece of a custom op defined with torch.library (its backward, its fake
    # implementation...), wherever the op itself is defined
    requires_custom_op_parts: ClassVar[bool] = False
    # ...or contains a module-level name bound to one of these (`from torch.func import grad`)
    requires_aliases_of: ClassVar[frozenset[str]] = frozenset()
    # and, whatever the block, the file's code must match this too (a file-level precondition:
    # a rule about Functions applied under transforms needs an `.apply` somewhere in the file)
    requires_in_file: ClassVar[re.Pattern | None] = None
    # the engine reports it (it needs the whole file, not one block): `check` is not called
    engine_level: ClassVar[bool] = False
    # the teaching examples (the first INVALID ones with a message are the docs' "Reported as")
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        raise NotImplementedError

    @classmethod
    def fixable(cls) -> bool:
        return BY_CODE[cls.code].fix is not None

    @classmethod
    def docs(cls) -> str:
        return textwrap.dedent(inspect.getdoc(cls) or "").strip()

    @classmethod
    def fix_availability(cls) -> str:
        return _FIX_AVAILABILITY[BY_CODE[cls.code].fix]


# what `gradlint rule` and the docs say of a rule's fix (the code table's `fix` column, which
# a test checks against the fixes of all the rule's examples)
_FIX_AVAILABILITY = {
    None: "No fix is available.",
    "safe": "A safe fix is available (`--fix`).",
    "unsafe": "An unsafe fix is available (`--fix --unsafe-fixes`).",
    "safe or unsafe": "A fix is available: safe in some cases, unsafe in others (see Fix safety).",
}
