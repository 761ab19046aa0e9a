"""The code table: every rule's code, name, family, default severity and fix, as literal data.

The engine reads it without importing the rules (which codes exist, `select`, the
configuration's checks); `gradlint rules` and the docs read a rule's fix from it. Each rule
class says the same (its ``code``, ``name``, ``severity``, its module
``gradlint/rules/<family>/gl<NNN>_<name>.py``, and its examples' fixes): a test checks every
column against them. A new rule is one row here and one class in its family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .findings import Severity

ERROR, WARNING, HINT = Severity.ERROR, Severity.WARNING, Severity.HINT

Fix = Literal["safe", "unsafe", "safe or unsafe"]


@dataclass(frozen=True)
class RuleCode:
    code: str
    name: str
    family: str  # the package under gradlint/rules/ that holds the rule
    severity: Severity  # the default (a rule may raise or lower it for one finding)
    fix: Fix | None  # what `--fix` offers ("safe or unsafe": depends on the case); None: no fix

    @property
    def module(self) -> str:
        """The rule's module: ``gradlint.rules.<family>.gl<NNN>_<name>``."""
        return f"gradlint.rules.{self.family}.gl{self.code[2:]}_{self.name.replace('-', '_')}"


CODES: tuple[RuleCode, ...] = (
    #        code     name                                               family             severity fix
    RuleCode("GL000", "syntax-error",                                    "file",            ERROR,   None),
    RuleCode("GL001", "low-precision-gradcheck-input",                   "gradcheck_calls", ERROR,   "safe or unsafe"),
    RuleCode("GL002", "gradcheck-without-requires-grad",                 "gradcheck_calls", ERROR,   "safe or unsafe"),
    RuleCode("GL003", "gradcheck-inputs-not-one-argument",               "gradcheck_calls", ERROR,   "safe or unsafe"),
    RuleCode("GL004", "backward-gradient-count",                         "functions",       ERROR,   "safe or unsafe"),
    RuleCode("GL005", "backward-uses-unsaved-tensor",                    "functions",       ERROR,   "safe"),
    RuleCode("GL006", "invalid-inputs-declaration",                      "file",            ERROR,   None),
    RuleCode("GL007", "gradcheck-is-not-a-module",                       "gradcheck_calls", ERROR,   "safe"),
    RuleCode("GL008", "backward-gradient-order",                         "functions",       WARNING, None),
    RuleCode("GL009", "unused-suppression",                              "file",            WARNING, "safe"),
    RuleCode("GL010", "tensor-stored-on-ctx",                            "functions",       WARNING, None),
    RuleCode("GL011", "save-for-backward-called-twice",                  "functions",       ERROR,   None),
    RuleCode("GL012", "non-tensor-saved-for-backward",                   "functions",       ERROR,   "safe"),
    RuleCode("GL013", "function-not-applied",                            "functions",       WARNING, "safe or unsafe"),
    RuleCode("GL014", "saved-tensor-modified-in-place",                  "functions",       WARNING, None),
    RuleCode("GL015", "input-modified-without-mark-dirty",               "functions",       WARNING, None),
    RuleCode("GL016", "gradgradcheck-on-once-differentiable",            "gradcheck_calls", ERROR,   None),
    RuleCode("GL017", "gradcheck-result-discarded",                      "gradcheck_calls", ERROR,   "unsafe"),
    RuleCode("GL018", "random-op-in-checked-function",                   "gradcheck_calls", ERROR,   None),
    RuleCode("GL019", "uninitialized-or-kink-input",                     "gradcheck_calls", WARNING, "unsafe"),
    RuleCode("GL020", "forward-ad-without-jvp",                          "functions",       ERROR,   None),
    RuleCode("GL021", "needs-input-grad-out-of-range",                   "functions",       ERROR,   None),
    RuleCode("GL022", "gradient-for-non-tensor-input",                   "functions",       ERROR,   None),
    RuleCode("GL023", "low-precision-in-checked-function",               "gradcheck_calls", WARNING, None),
    RuleCode("GL024", "same-tensor-twice-in-inputs",                     "gradcheck_calls", WARNING, "unsafe"),
    RuleCode("GL025", "deprecated-gradcheck-option",                     "gradcheck_calls", ERROR,   "safe"),
    RuleCode("GL026", "self-comparison-in-reference-test",               "gradcheck_calls", ERROR,   None),
    RuleCode("GL027", "nondeterministic-backward-without-nondet-tol",    "gradcheck_calls", HINT,    None),
    RuleCode("GL028", "dirty-input-not-returned",                        "functions",       ERROR,   None),
    RuleCode("GL029", "expanded-gradcheck-input",                        "gradcheck_calls", ERROR,   "safe"),
    RuleCode("GL030", "custom-op-parameter-annotation",                  "custom_ops",      ERROR,   "unsafe"),
    RuleCode("GL031", "mutates-args-unknown-parameter",                  "custom_ops",      ERROR,   "safe or unsafe"),
    RuleCode("GL032", "unlisted-mutation",                               "custom_ops",      ERROR,   "safe or unsafe"),
    RuleCode("GL033", "custom-op-returns-input-alias",                   "custom_ops",      ERROR,   "safe"),
    RuleCode("GL034", "register-autograd-gradient-count",                "custom_ops",      ERROR,   "safe"),
    RuleCode("GL035", "setup-context-signature",                         "custom_ops",      ERROR,   None),
    RuleCode("GL036", "custom-op-backward-uses-unsaved-tensor",          "custom_ops",      ERROR,   None),
    RuleCode("GL037", "fake-signature-mismatch",                         "custom_ops",      ERROR,   "safe"),
    RuleCode("GL038", "fake-impl-reads-data",                            "custom_ops",      ERROR,   None),
    RuleCode("GL039", "function-under-torch-func-without-setup-context", "transforms",      ERROR,   None),
    RuleCode("GL040", "function-under-vmap-without-vmap-rule",           "transforms",      ERROR,   "safe or unsafe"),
    RuleCode("GL041", "function-under-forward-ad-without-jvp",           "transforms",      ERROR,   None),
    RuleCode("GL042", "custom-op-return-annotation",                     "custom_ops",      ERROR,   None),
    RuleCode("GL043", "custom-op-keyword-only-tensor",                   "custom_ops",      ERROR,   None),
    RuleCode("GL044", "register-autograd-non-functional-op",             "custom_ops",      ERROR,   None),
    RuleCode("GL045", "same-tensor-twice-to-apply",                      "compile",         WARNING, "unsafe"),
    RuleCode("GL046", "mark-dirty-result-discarded",                     "compile",         WARNING, "safe"),
    RuleCode("GL047", "function-wraps-custom-op",                        "compile",         HINT,    None),
)

BY_CODE: dict[str, RuleCode] = {entry.code: entry for entry in CODES}
ALL_CODES: tuple[str, ...] = tuple(entry.code for entry in CODES)
