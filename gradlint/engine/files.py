"""Files: discovering them, reading them, and linting or fixing one file."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Sequence

from ..analysis.source import SourceDecodeError, decode_source
from ..findings import Finding, Range, Severity
from ..rules import SYNTAX_ERROR
from .config import Config, ConfigResolver
from .fixes import FixOutcome, fix_source
from .linter import LintCache, LintOptions, lint_source

MAX_FILE_BYTES = 8 * 1024 * 1024

# Directories never worth analysing (ruff's defaults, roughly), plus any virtualenv.
SKIPPED_DIRECTORIES = frozenset({
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "__pycache__",
    "node_modules", "build", "dist", "_build", "buck-out", ".eggs", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".gradlint_cache", "site-packages", ".ipynb_checkpoints",
    ".direnv", "__pypackages__",
})

_SET_DEFAULT = re.compile(rb"set_default_(?:dtype|tensor_type)")


class UsageError(Exception):
    """Something the user asked for that cannot be done (exit status 2)."""


def _skipped_directory(path: Path) -> bool:
    name = path.name
    return (name in SKIPPED_DIRECTORIES or name.endswith(".egg-info")
            or (path / "pyvenv.cfg").is_file())


def discover(paths: Sequence[Path], resolver: ConfigResolver) -> Iterator[Path]:
    """Python files under ``paths``. Files named explicitly are always included;
    directories are walked, skipping VCS, virtualenv, build and excluded directories."""
    seen: set[Path] = set()
    for root in paths:
        if not root.exists():
            raise UsageError(f"path does not exist: {root}")
        if root.is_file():
            if root.resolve() not in seen:
                seen.add(root.resolve())
                yield root
            continue
        for directory, subdirs, files in os.walk(root):
            base = Path(directory)
            config = resolver.for_path(base / "__init__.py")
            kept = []
            for sub in sorted(subdirs):
                candidate = base / sub
                if _skipped_directory(candidate) or config.is_excluded(candidate):
                    continue
                kept.append(sub)
            subdirs[:] = kept
            for name in sorted(files):
                if not (name.endswith(".py") or name.endswith(".pyi")):
                    continue
                path = base / name
                if resolver.for_path(path).is_excluded(path):
                    continue
                resolved = path.resolve()
                if resolved not in seen:
                    seen.add(resolved)
                    yield path


@dataclass
class FileReport:
    path: Path
    display: str
    findings: list[Finding] = field(default_factory=list)
    original: str | None = None  # the text as read (None when unreadable)
    fixed: str | None = None  # the text after fixes (when fixing)
    fixes_applied: int = 0
    internal_error: str | None = None  # gradlint failed on this file (a bug to report)


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if len(data) > MAX_FILE_BYTES:
        raise SourceDecodeError(f"file is too large to analyse ({len(data) // 1024 // 1024} MiB; "
                                f"the limit is {MAX_FILE_BYTES // 1024 // 1024} MiB)", 1, 0)
    return decode_source(data)


def file_error(display: str, message: str, line: int = 1, column: int = 0) -> Finding:
    rng = Range.of(line, column, line, column + 1)
    return Finding(SYNTAX_ERROR.code, SYNTAX_ERROR.name, Severity.ERROR, message, rng, None, line,
                   display)


def conftest_sets_default_dtype(path: Path, root: Path) -> bool:
    """Does a ``conftest.py`` (or a package ``__init__.py``) between the file and the
    project root change the default dtype? Then gradlint cannot know it for the code
    there (it may be float64)."""
    try:
        directory = path.resolve().parent
        stop = root.resolve()
    except OSError:
        return False
    for candidate in (directory, *directory.parents):
        for name in ("conftest.py", "__init__.py"):
            setup = candidate / name
            if setup.is_file() and setup != path.resolve():
                try:
                    if _SET_DEFAULT.search(setup.read_bytes()):
                        return True
                except OSError:
                    pass
        if candidate == stop:
            break
    return False


def conftest_fixture_sources(path: Path, root: Path) -> tuple[str, ...]:
    """The texts of the ``conftest.py`` files between the file and the project root that
    define pytest fixtures, nearest first (their fixtures are the file's too)."""
    try:
        resolved = path.resolve()
        directory = resolved.parent
        stop = root.resolve()
    except OSError:
        return ()
    if stop not in (directory, *directory.parents):
        return ()
    found = []
    for candidate in (directory, *directory.parents):
        conftest = candidate / "conftest.py"
        if conftest != resolved and conftest.is_file():
            try:
                text = read_text(conftest)
            except (OSError, SourceDecodeError):
                text = ""
            if "fixture" in text:
                found.append(text)
        if candidate == stop:
            break
    return tuple(found)


def options_for(path: Path, config: Config, select: list[str] | None,
                extra_ignore: Sequence[str]) -> LintOptions:
    options = config.options_for(path, select, extra_ignore,
                                 dtype_unknown=conftest_sets_default_dtype(path, config.root))
    return replace(options, conftests=conftest_fixture_sources(path, config.root))


def lint_file(path: Path, display: str, options: LintOptions, *, fix: bool = False,
              unsafe: bool = False, cache: LintCache | None = None) -> FileReport:
    report = FileReport(path, display)
    try:
        text = read_text(path)
    except SourceDecodeError as error:
        report.findings = [file_error(display, error.message, error.line, error.column)]
        return report
    except OSError as error:
        report.findings = [file_error(display, f"cannot read file: {error.strerror or error}")]
        return report
    return lint_text(text, path, display, options, fix=fix, unsafe=unsafe, cache=cache)


def lint_text(text: str, path: Path | None, display: str, options: LintOptions, *,
              fix: bool = False, unsafe: bool = False, cache: LintCache | None = None) -> FileReport:
    report = FileReport(path or Path(display), display, original=text)
    try:
        if fix:
            outcome: FixOutcome = fix_source(text, display, options, unsafe=unsafe, cache=cache)
            report.fixed = outcome.text
            report.fixes_applied = outcome.fixed
            report.findings = outcome.remaining
        else:
            report.findings = lint_source(text, display, options, cache).findings
    except Exception as error:  # a bug in gradlint: report it, and go on with other files
        report.internal_error = f"{type(error).__name__}: {error}"
        report.fixed = None
    return report
