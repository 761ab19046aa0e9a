"""The rules reference page (docs/rules.md), generated from the rules themselves."""

from __future__ import annotations

import textwrap

from . import ALL_RULES


def rules_markdown() -> str:
    parts = ["# gradlint rules", "",
             "Generated from the rules' own documentation and examples "
             "(`python -m gradlint.rules.docs > docs/rules.md`); `gradlint rule CODE` prints "
             "the same text.", "",
             "| code | name | severity | fix | summary |", "|---|---|---|---|---|"]
    for rule in ALL_RULES:
        fix = "yes" if rule.fixable() else ""
        parts.append(f"| [{rule.code}](#{rule.code.lower()}) | `{rule.name}` | {rule.severity.value} "
                     f"| {fix} | {rule.summary} |")
    for rule in ALL_RULES:
        parts += ["", f"## {rule.code}", "", f"`{rule.name}` · {rule.severity.value} · "
                  f"{rule.fix_availability()}", ""]
        parts.append(rule.docs().replace("## ", "### "))
        invalid = [e for e in rule.INVALID if e.message][:2]
        if invalid:
            parts += ["", "#### Reported as"]
            for example in invalid:
                parts += ["", "```python", textwrap.dedent(example.code).strip(), "```",
                          f"> {rule.code} {example.message}"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(rules_markdown(), end="")
