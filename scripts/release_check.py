#!/usr/bin/env python3
"""Does everything that names a release agree with the tag about to be released?

    python3 scripts/release_check.py v0.1.0

Checks (standard library only; run by .github/workflows/release.yml before it builds, and by
tests/test_install_paths.py with the tag of this checkout's version):

* the tag is ``vX.Y.Z`` and names the version of ``gradlint/__init__.py``, of the VS Code
  extension (``vscode-extension/package.json``) and of the distribution ``torch-gradlint``;
* every ``git+https://github.com/gradlint/gradlint@REV`` and every pre-commit ``rev:`` in the
  README, the docs, the hooks manifest and the extension's sources names this tag, and every
  ``torch-gradlint==X.Y.Z`` names this version;
* every ``pip install`` of torch in them pins ``torch==2.13.0`` (an unpinned torch pulls a
  multi-GB CUDA build, and another version than the one gradlint's rules were measured on).

Exit status 0 when all agree, 1 with one line per problem otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/gradlint/gradlint"
TORCH = "torch==2.13.0"

# the files a user copies commands from
DOCUMENTS = ("README.md", "docs/ci/github-actions.yml", ".pre-commit-hooks.yaml",
             "vscode-extension/README.md", "vscode-extension/src/install.ts")


def version() -> str:
    text = (ROOT / "gradlint" / "__init__.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def documents() -> dict[str, str]:
    return {name: (ROOT / name).read_text(encoding="utf-8") for name in DOCUMENTS if (ROOT / name).is_file()}


def git_revisions(text: str) -> list[str]:
    """The revisions named by `git+https://github.com/gradlint/gradlint@REV` (or ${...})."""
    return re.findall(re.escape(REPOSITORY) + r"@([\w.${}<>]+)", text)


def pre_commit_revisions(text: str) -> list[str]:
    """The `rev:` of each pre-commit entry for this repository."""
    return re.findall(re.escape(REPOSITORY) + r"\s*\n\s*#?\s*rev:\s*(\S+)", text)


def unpinned_torch(text: str) -> list[str]:
    """`pip install` commands that install torch without pinning 2.13.0 (the extra
    `torch-gradlint[torch]` pins it)."""
    problems = []
    for command in re.findall(r"pip install([^`\n]*)", text):
        for word in command.replace('"', " ").replace("'", " ").split():
            if re.fullmatch(r"torch(?:[=<>!~]=?.*)?", word) and word != TORCH:
                problems.append(f"pip install{command}".strip())
    return problems


def problems(tag: str) -> list[str]:
    found = []
    match = re.fullmatch(r"v(\d+\.\d+\.\d+)", tag)
    if not match:
        return [f"the tag `{tag}` is not vX.Y.Z"]
    release = match.group(1)
    if version() != release:
        found.append(f"gradlint/__init__.py: __version__ is {version()}, the tag says {release}")
    manifest = json.loads((ROOT / "vscode-extension" / "package.json").read_text(encoding="utf-8"))
    if manifest.get("version") != release:
        found.append(f"vscode-extension/package.json: version is {manifest.get('version')}, the tag says {release}")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if not re.search(r'^name = "torch-gradlint"$', pyproject, re.M):
        found.append("pyproject.toml: the distribution is not named torch-gradlint")
    for name, text in documents().items():
        for revision in git_revisions(text):
            if revision != tag and "${" not in revision and "<" not in revision:  # (templates)
                found.append(f"{name}: names {REPOSITORY}@{revision}, not @{tag}")
        for revision in pre_commit_revisions(text):
            if revision != tag:
                found.append(f"{name}: pre-commit rev: {revision}, not {tag}")
        for pinned in re.findall(r"torch-gradlint(?:\[torch\])?==([\w.]+)", text):
            if pinned != release:
                found.append(f"{name}: pins torch-gradlint=={pinned}, not {release}")
        for line in unpinned_torch(text):
            found.append(f"{name}: torch is not pinned to {TORCH}: {line}")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if not pre_commit_revisions(readme):
        found.append("README.md: no pre-commit snippet with a rev")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: release_check.py vX.Y.Z", file=sys.stderr)
        return 2
    tag = argv[0].removeprefix("refs/tags/")
    found = problems(tag)
    for problem in found:
        print(problem)
    if not found:
        print(f"{tag}: the version, the README, the docs and the extension agree")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
