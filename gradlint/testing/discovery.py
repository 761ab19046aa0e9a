"""Where `pytest --gradlint` finds the project's Functions when pytest is pointed at the tests
only (``testpaths = ["tests"]``): the project's own packages that the tests import, found in
its import roots (the root directory, ``src/``, pytest's ``pythonpath``), or, when the tests
import none of them, every package in those roots.

Files pytest collects anyway (under its arguments) are not added again; test modules and
conftest files are left to pytest. Reading imports uses the standard library's ``ast`` on
the test files (never imports them).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ..engine.files import SKIPPED_DIRECTORIES, resolves_inside
from ..engine.import_roots import pytest_pythonpath
from ..engine.reading import read_bytes

MAX_TEST_FILES = 2000  # test files read for their imports
MAX_FILES = 5000  # package files added


@dataclass
class Discovered:
    files: list[Path] = field(default_factory=list)  # package files to collect
    packages: list[Path] = field(default_factory=list)  # the package folders (or modules) found
    imported: bool = False  # found through the tests' imports (else: the import roots' packages)


def import_roots(rootpath: Path) -> list[Path]:
    roots = [*pytest_pythonpath(rootpath)]
    if (rootpath / "src").is_dir():
        roots.append(rootpath / "src")
    roots.append(rootpath)
    unique: list[Path] = []
    for root in roots:
        resolved = root.resolve()
        if resolved.is_dir() and resolved not in unique and resolves_inside(resolved, rootpath):
            unique.append(resolved)
    return unique


def _is_test_file(name: str) -> bool:
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


def _walk(folder: Path, limit: int) -> Iterable[Path]:
    count = 0
    for directory, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRECTORIES and not d.startswith(".")
                            and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith(".py"):
                count += 1
                if count > limit:
                    return
                yield Path(directory) / name


def test_files(paths: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_file() and path.suffix == ".py":
            found.append(path)
        elif path.is_dir():
            found.extend(_walk(path, MAX_TEST_FILES - len(found)))
        if len(found) >= MAX_TEST_FILES:
            break
    return found


def imported_names(path: Path) -> set[str]:
    """The top-level names a file imports absolutely (``import a.b``, ``from a.b import c``)."""
    try:
        tree = ast.parse(read_bytes(path), filename=str(path))
    except Exception:  # unreadable, too big, not Python: it imports nothing we can see
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _package(root: Path, name: str) -> Path | None:
    folder = root / name
    if folder.is_dir() and name.isidentifier() and name not in SKIPPED_DIRECTORIES:
        return folder
    module = root / f"{name}.py"
    return module if module.is_file() else None


def _root_packages(root: Path) -> list[Path]:
    return [child for child in sorted(root.iterdir())
            if child.is_dir() and (child / "__init__.py").is_file() and child.name.isidentifier()
            and child.name not in SKIPPED_DIRECTORIES and child.name not in ("tests", "test", "testing")]


def _covered(path: Path, covered: Sequence[Path]) -> bool:
    return any(path == c or path.is_relative_to(c) for c in covered)


def discover(rootpath: Path, args: Sequence[Path]) -> Discovered:
    """The package files to collect beyond ``args`` (what pytest was pointed at)."""
    rootpath = rootpath.resolve()
    covered = [arg.resolve() for arg in args]
    roots = import_roots(rootpath)
    result = Discovered()
    names: set[str] = set()
    for file in test_files(covered):
        names |= imported_names(file)
    for name in sorted(names):
        for root in roots:
            found = _package(root, name)
            if found is not None:
                if found not in result.packages and not _covered(found, covered):
                    result.packages.append(found)
                break
    result.imported = bool(result.packages)
    if not result.packages:
        for root in roots:
            for package in _root_packages(root):
                if package not in result.packages and not _covered(package, covered):
                    result.packages.append(package)
    for package in result.packages:
        files = [package] if package.is_file() else _walk(package, MAX_FILES)
        for file in files:
            if len(result.files) >= MAX_FILES:
                break
            if not _is_test_file(file.name) and not _covered(file.resolve(), covered) \
                    and resolves_inside(file, rootpath) and file not in result.files:
                result.files.append(file)
    return result
