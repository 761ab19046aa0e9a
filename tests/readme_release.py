"""What the README tells a new user to type, and the release it names: its first install
line, its pre-commit snippet, and the git tag both refer to (which must exist in this
repository: a user's pip and pre-commit fetch it)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REPOSITORY = "https://github.com/gradlint/gradlint"


def readme() -> str:
    return README.read_text(encoding="utf-8")


def first_install_line() -> str:
    """The first command of the README's Install section, without its `$ `."""
    text = readme()
    section = text[text.index("## Install\n"):]
    block = section[section.index("```console\n") + len("```console\n"):]
    first = block.splitlines()[0]
    assert first.startswith("$ "), first
    return first[2:].split("  #")[0].strip()


def pre_commit_config() -> dict:
    """The README's `.pre-commit-config.yaml` snippet."""
    text = readme()
    section = text[text.index("## pre-commit\n"):]
    block = section[section.index("```yaml\n") + len("```yaml\n"):]
    return yaml.safe_load(block[:block.index("```")])


def pre_commit_rev() -> str:
    [repo] = pre_commit_config()["repos"]
    assert repo["repo"] == REPOSITORY
    return repo["rev"]


def git(*args: str, cwd: Path = ROOT, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check, capture_output=True, text=True)


def tag_commit(tag: str) -> str | None:
    """The commit the tag names in this repository, or None."""
    found = git("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}", check=False)
    return found.stdout.strip() or None


MISSING_TAG = ("the README's install line and pre-commit `rev` name the tag {tag}, which does not "
               "exist in this repository; a release creates it (docs/releasing.md): "
               "`git tag {tag} <the commit to release>`")


def clone_with_tags(destination: Path) -> Path:
    """A clone of this repository (its commits and tags, as GitHub would serve them)."""
    git("clone", "--quiet", "--no-local", str(ROOT), str(destination), cwd=destination.parent)
    return destination


def local_spec(line: str, clone: Path) -> str:
    """The install line with the repository's URL replaced by a clone of it (a file URL with a
    host: PEP 508 does not take `name @ git+file:///path@rev`)."""
    assert REPOSITORY in line, line
    return line.replace(f"git+{REPOSITORY}", f"git+file://localhost{clone.resolve().as_posix()}")


def tree_size(folder: Path) -> int:
    total = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total


def version_at(rev: str, cwd: Path = ROOT) -> str:
    text = git("show", f"{rev}:gradlint/__init__.py", cwd=cwd).stdout
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)
