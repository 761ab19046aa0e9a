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
from .fixes import FixOutcome, allowed, fix_source, fixes_apply
from .linter import LintCache, LintOptions, lint_source
from .notebooks import MAX_NOTEBOOK_BYTES, NotebookError, is_notebook, lint_notebook
from .reading import MAX_FILE_BYTES, NotARegularFile, read_bytes  # noqa: F401 (re-exported)

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


def resolves_inside(path: Path, folder: Path) -> bool:
    """Is ``path``, symlinks followed, inside ``folder`` (symlinks followed)? The rule for
    code gradlint chooses to run: it stays inside the folder it was asked to look in."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _skipped_directory(path: Path) -> bool:
    name = path.name
    return (name in SKIPPED_DIRECTORIES or name.endswith(".egg-info")
            or (path / "pyvenv.cfg").is_file())


def discover(paths: Sequence[Path], resolver: ConfigResolver, *, notebooks: bool = False,
             force_exclude: bool = False) -> Iterator[Path]:
    """Python files (and Jupyter notebooks when ``notebooks``) under ``paths``. Files named
    explicitly are included unless ``force_exclude`` and the configuration excludes them
    (what pre-commit needs: it names every changed file); directories are walked, skipping
    VCS, virtualenv, build and excluded directories."""
    suffixes = (".py", ".pyi", ".ipynb") if notebooks else (".py", ".pyi")
    seen: set[Path] = set()
    for root in paths:
        if not root.exists():
            raise UsageError(f"path does not exist: {root}")
        if not root.is_dir():  # a file, or a FIFO/device named explicitly: reported when read
            if force_exclude and resolver.for_path(root).is_excluded(root):
                continue
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
                if not name.endswith(suffixes):
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
    fixable: int = 0  # how many fixes `--fix` would apply (when counted)
    internal_error: str | None = None  # gradlint failed on this file (a bug to report)


def read_text(path: Path) -> str:
    limit = MAX_NOTEBOOK_BYTES if is_notebook(path.name) else MAX_FILE_BYTES
    return decode_source(read_bytes(path, limit))


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
                    if _SET_DEFAULT.search(read_bytes(setup)):
                        return True
                except (OSError, SourceDecodeError):
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
              unsafe: bool = False, cache: LintCache | None = None,
              count_fixes: bool = False) -> FileReport:
    report = FileReport(path, display)
    try:
        text = read_text(path)
    except SourceDecodeError as error:
        report.findings = [file_error(display, error.message, error.line, error.column)]
        return report
    except OSError as error:
        report.findings = [file_error(display, f"cannot read file: {error.strerror or error}")]
        return report
    return lint_text(text, path, display, options, fix=fix, unsafe=unsafe, cache=cache,
                     count_fixes=count_fixes)


def lint_text(text: str, path: Path | None, display: str, options: LintOptions, *,
              fix: bool = False, unsafe: bool = False, cache: LintCache | None = None,
              count_fixes: bool = False) -> FileReport:
    """Lint (or, with ``fix``, fix) one text. ``count_fixes``: also count, into
    ``report.fixable``, the fixes that fixing would apply (by fixing a copy, so the count
    is exactly what ``--fix`` does: fixes that unlock others, overlaps, unparsable files)."""
    report = FileReport(path or Path(display), display, original=text)
    if is_notebook(display):
        return _lint_notebook(report, options, fix, unsafe, cache)
    try:
        if fix:
            outcome: FixOutcome = fix_source(text, display, options, unsafe=unsafe, cache=cache)
            report.fixed = outcome.text
            report.fixes_applied = outcome.fixed
            report.findings = outcome.remaining
        else:
            report.findings = lint_source(text, display, options, cache).findings
            if count_fixes and fixes_apply(report.findings) and \
                    any(allowed(f.fix, unsafe) for f in report.findings):
                report.fixable = fix_source(text, display, options, unsafe=unsafe, cache=cache).fixed
    except Exception as error:  # a bug in gradlint: report it, and go on with other files
        report.internal_error = f"{type(error).__name__}: {error}"
        report.fixed = None
    return report


def _lint_notebook(report: FileReport, options: LintOptions, fix: bool, unsafe: bool,
                   cache: LintCache | None) -> FileReport:
    assert report.original is not None
    try:
        result = lint_notebook(report.original, report.display, options, fix=fix, unsafe=unsafe,
                               cache=cache)
    except NotebookError as error:
        report.findings = [file_error(report.display, str(error))]
        return report
    except Exception as error:  # a bug in gradlint: report it, and go on with other files
        report.internal_error = f"{type(error).__name__}: {error}"
        return report
    report.findings = result.findings
    report.fixed = result.fixed_text
    report.fixes_applied = result.fixes_applied
    return report
