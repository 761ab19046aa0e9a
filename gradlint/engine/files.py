"""Files: discovering them, reading them, and linting or fixing one file."""

from __future__ import annotations

import os
import stat
import re
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..analysis.source import SourceDecodeError, decode_source
from ..findings import Finding, Range, Severity
from .config import Config, ConfigResolver
from .options import LintOptions
from .reading import (MAX_FILE_BYTES, MAX_NOTEBOOK_BYTES, NotARegularFile,  # noqa: F401 (re-exported)
                      is_notebook, read_bytes)

if TYPE_CHECKING:
    from .fixes import FixOutcome
    from .linter import LintCache

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


class Resolved:
    """``path.resolve()`` for many files, each directory resolved once (the files of a tree
    share them; resolving walks every component of the path). For one walk or one command:
    it does not see links changed after a directory was resolved."""

    def __init__(self) -> None:
        self._directories: dict[str, Path] = {}

    def __call__(self, path: Path) -> Path:
        if os.path.islink(path):
            return path.resolve()
        parent = os.path.abspath(path.parent)
        real = self._directories.get(parent)
        if real is None:
            real = self._directories[parent] = Path(parent).resolve()
        return real / path.name


def discover(paths: Sequence[Path], resolver: ConfigResolver, *, notebooks: bool = False,
             force_exclude: bool = False) -> Iterator[Path]:
    """Python files (and Jupyter notebooks when ``notebooks``) under ``paths``. Files named
    explicitly are included unless ``force_exclude`` and the configuration excludes them
    (what pre-commit needs: it names every changed file); directories are walked, skipping
    VCS, virtualenv, build and excluded directories."""
    suffixes = (".py", ".pyi", ".ipynb") if notebooks else (".py", ".pyi")
    seen: set[Path] = set()
    resolve = Resolved()
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
                resolved = resolve(path)
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
    timings: dict | None = None  # where its CPU time went (`--timings`: Timings.as_dict)


def read_text(path: Path) -> str:
    limit = MAX_NOTEBOOK_BYTES if is_notebook(path.name) else MAX_FILE_BYTES
    return decode_source(read_bytes(path, limit))


def source_text(data: bytes, name: str = "") -> str:
    """The text of a source file's bytes already read (SourceDecodeError: too large, or not
    decodable)."""
    limit = MAX_NOTEBOOK_BYTES if is_notebook(name) else MAX_FILE_BYTES
    if len(data) > limit:
        raise SourceDecodeError(f"file is too large to analyse ({len(data) // 1024 // 1024} MiB; "
                                f"the limit is {limit // 1024 // 1024} MiB)", 1, 0)
    return decode_source(data)


def file_error(display: str, message: str, line: int = 1, column: int = 0) -> Finding:
    rng = Range.of(line, column, line, column + 1)
    return Finding("GL000", "syntax-error", Severity.ERROR, message, rng, None, line, display)


def conftest_sets_default_dtype(path: Path, root: Path) -> bool:
    """Does a ``conftest.py`` (or a package ``__init__.py``) between the file and the
    project root change the default dtype? Then gradlint cannot know it for the code
    there (it may be float64)."""
    try:
        resolved = path.resolve()
        directory = resolved.parent
        stop = root.resolve()
    except OSError:
        return False
    for candidate in (directory, *directory.parents):
        for name in ("conftest.py", "__init__.py"):
            setup = candidate / name
            if setup != resolved and _sets_default_dtype(setup):
                return True
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


def _sets_default_dtype(setup: Path) -> bool:
    """Read each setup file once per version of it (every file of a package asks about the
    same ``__init__.py``)."""
    try:
        status = setup.stat()
    except OSError:
        return False
    key = (setup, status.st_mtime_ns, status.st_size)
    known = _SETUP_FILES.get(key)
    if known is None:
        try:
            known = bool(_SET_DEFAULT.search(read_bytes(setup))) if stat.S_ISREG(status.st_mode) else False
        except (OSError, SourceDecodeError):
            known = False
        if len(_SETUP_FILES) > 4096:
            _SETUP_FILES.clear()
        _SETUP_FILES[key] = known
    return known


_SETUP_FILES: dict[tuple, bool] = {}


class FileOptions:
    """Each file's options in a batch: configuration and conftest dtype looked up once per
    directory (a package's files share them), options built once per distinct outcome."""

    def __init__(self, resolver: ConfigResolver, select: list[str] | None,
                 extra_ignore: Sequence[str]):
        self.resolver = resolver
        self.select = select
        self.extra_ignore = extra_ignore
        self._configs: dict[Path, Config] = {}
        self._dtype_unknown: dict[tuple[Path, str], bool] = {}
        self._options: dict[tuple[int, bool, tuple[str, ...]], LintOptions] = {}
        self._conftests: dict[tuple[Path, str], tuple[str, ...]] = {}

    def config(self, path: Path) -> Config:
        config = self._configs.get(path.parent)
        if config is None:
            config = self._configs[path.parent] = self.resolver.for_path(path)
        return config

    def __call__(self, path: Path) -> LintOptions:
        config = self.config(path)
        # a setup file does not count for itself
        special = path.name if path.name in ("conftest.py", "__init__.py") else ""
        key = (path.parent, special)
        unknown = self._dtype_unknown.get(key)
        if unknown is None:
            unknown = self._dtype_unknown[key] = conftest_sets_default_dtype(path, config.root)
        conftests = self._conftests.get(key)
        if conftests is None:
            conftests = self._conftests[key] = conftest_fixture_sources(path, config.root)
        if config.per_file_ignores:
            options = config.options_for(path, self.select, self.extra_ignore, dtype_unknown=unknown)
            return replace(options, conftests=conftests)
        options = self._options.get((id(config), unknown, conftests))
        if options is None:
            options = config.options_for(path, self.select, self.extra_ignore, dtype_unknown=unknown)
            options = replace(options, conftests=conftests)
            self._options[(id(config), unknown, conftests)] = options
        return options


def lint_file(path: Path, display: str, options: LintOptions, *, fix: bool = False,
              unsafe: bool = False, cache: LintCache | None = None,
              count_fixes: bool = False, data: bytes | None = None) -> FileReport:
    """Lint the file at ``path`` (whose bytes are ``data`` when already read; then its
    ``.pyc``, when current, spares the syntax check)."""
    report = FileReport(path, display)
    try:
        text = read_text(path) if data is None else source_text(data, path.name)
    except SourceDecodeError as error:
        report.findings = [file_error(display, error.message, error.line, error.column)]
        return report
    except OSError as error:
        report.findings = [file_error(display, f"cannot read file: {error.strerror or error}")]
        return report
    compiles = None
    if data is not None:
        from .bytecode import compiled_before

        compiles = partial(compiled_before, path, data)
    return lint_text(text, path, display, options, fix=fix, unsafe=unsafe, cache=cache,
                     count_fixes=count_fixes, compiles=compiles)


def lint_text(text: str, path: Path | None, display: str, options: LintOptions, *,
              fix: bool = False, unsafe: bool = False, cache: LintCache | None = None,
              count_fixes: bool = False, compiles: Callable[[], bool] | None = None) -> FileReport:
    """Lint (or, with ``fix``, fix) one text. ``count_fixes``: also count, into
    ``report.fixable``, the fixes that fixing would apply (by fixing a copy, so the count
    is exactly what ``--fix`` does: fixes that unlock others, overlaps, unparsable files)."""
    from .fixes import allowed, fix_source, fixes_apply
    from .linter import LintCache, lint_source

    report = FileReport(path or Path(display), display, original=text)
    if count_fixes and cache is None:  # the count's lint of the fixed text reuses the unchanged blocks'
        cache = LintCache()
    if is_notebook(display):
        return _lint_notebook(report, options, fix, unsafe, cache, count_fixes)
    try:
        if fix:
            outcome: FixOutcome = fix_source(text, display, options, unsafe=unsafe, cache=cache)
            report.fixed = outcome.text
            report.fixes_applied = outcome.fixed
            report.findings = outcome.remaining
        else:
            report.findings = lint_source(text, display, options, cache, compiles=compiles).findings
            if count_fixes and fixes_apply(report.findings) and \
                    any(allowed(f.fix, unsafe) for f in report.findings):
                report.fixable = fix_source(text, display, options, unsafe=unsafe, cache=cache,
                                            findings=report.findings, counting=True).fixed
    except Exception as error:  # a bug in gradlint: report it, and go on with other files
        report.internal_error = f"{type(error).__name__}: {error}"
        report.fixed = None
    return report


def _lint_notebook(report: FileReport, options: LintOptions, fix: bool, unsafe: bool,
                   cache: LintCache | None, count_fixes: bool = False) -> FileReport:
    from .fixes import allowed, fixes_apply
    from .linter import LintCache
    from .notebooks import NotebookError, lint_notebook

    assert report.original is not None
    if count_fixes and cache is None:  # the count's lint of the fixed cells reuses the unchanged blocks'
        cache = LintCache()
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
    if count_fixes and not fix and fixes_apply(report.findings) and \
            any(allowed(f.fix, unsafe) for f in report.findings):
        try:  # what `--fix` would apply, counted by fixing a copy, as for a .py file
            report.fixable = lint_notebook(report.original, report.display, options, fix=True, unsafe=unsafe,
                                           cache=cache, findings=result.findings, counting=True).fixes_applied
        except Exception as error:  # a bug in gradlint: report it, and go on with other files
            report.internal_error = f"{type(error).__name__}: {error}"
    return report
