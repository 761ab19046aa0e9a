"""How a file is imported: its ``sys.path`` entry and dotted module name, found the way
pytest's default ``prepend`` import mode finds them, plus the project's own settings.

- A file's import root is the first directory above it that is not a package: walking up
  while the directory has an ``__init__.py`` and a name Python can import, and never past
  the project root (the nearest directory with ``pyproject.toml``, ``setup.py`` or
  ``setup.cfg``) — a checkout whose root has an ``__init__.py`` is not a package.
- The project's ``[tool.pytest.ini_options] pythonpath`` (or ``pytest.ini``/``setup.cfg``
  ``pythonpath``), its ``src/`` folder, and the project root itself come next on
  ``sys.path``, so a test that imports the code it checks finds it.
- ``--root DIR`` (an explicit root) comes first and names modules below it.
"""

from __future__ import annotations

import configparser
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ..analysis.source import SourceDecodeError
from .reading import read_bytes

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


@dataclass(frozen=True)
class ImportSpec:
    module: str  # dotted name ("pkg.sub.mod"), "" when the file cannot be named
    sys_path: tuple[str, ...]  # entries to put first, most important first


def project_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path``'s folder that holds a project file."""
    start = path if path.is_dir() else path.parent
    for directory in (start, *start.parents):
        if any((directory / marker).is_file() for marker in PROJECT_MARKERS):
            return directory
    return None


def module_root(path: Path, boundary: Path | None = None) -> tuple[Path, str]:
    """(the sys.path entry that imports ``path``, its dotted module name)."""
    path = path.resolve()
    parts = [] if path.stem == "__init__" else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file() and directory.name.isidentifier() \
            and directory != boundary and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    if not parts:  # an __init__.py at an import root: name it after its folder
        parts = [path.parent.name]
        directory = path.parent.parent
    return directory, ".".join(parts) if all(p.isidentifier() for p in parts) else ""


def pytest_pythonpath(root: Path) -> list[Path]:
    """Folders the project's pytest configuration adds to sys.path (``pythonpath``)."""
    entries: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(read_bytes(pyproject).decode("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, SourceDecodeError):
            data = {}  # a broken file is reported by the config loader, not here
        tool = data.get("tool") if isinstance(data, dict) else None
        pytest = tool.get("pytest") if isinstance(tool, dict) else None  # `tool = {pytest = 5}`
        ini = pytest.get("ini_options", {}) if isinstance(pytest, dict) else {}
        value = ini.get("pythonpath") if isinstance(ini, dict) else None
        if isinstance(value, str):
            entries += value.split()
        elif isinstance(value, list):
            entries += [v for v in value if isinstance(v, str)]
    for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        file = root / name
        if not file.is_file():
            continue
        parser = configparser.ConfigParser()
        try:
            parser.read(file, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError, OSError):
            continue
        if parser.has_option(section, "pythonpath"):
            entries += parser.get(section, "pythonpath").split()
    return [(root / entry).resolve() for entry in entries]


def import_spec(path: Path, *, workspace_root: Path | None = None, explicit_root: Path | None = None,
                related: tuple[Path, ...] = ()) -> ImportSpec:
    """How to import ``path`` (and the files it is checked with, ``related``)."""
    path = path.resolve()
    project = project_root(path)
    entries: list[Path] = []
    module = ""
    if explicit_root is not None:
        explicit_root = explicit_root.resolve()
        entries.append(explicit_root)
        if explicit_root in path.parents:
            relative = path.relative_to(explicit_root).with_suffix("")
            names = [p for p in relative.parts if p != "__init__"]
            if names and all(n.isidentifier() for n in names):
                module = ".".join(names)
    root, name = module_root(path, project)
    if not module:
        module = name
    entries.append(root)
    for other in related:
        other_project = project_root(other)
        entries.append(module_root(other, other_project)[0])
        if other_project is not None:
            entries.append(other_project)
    if project is not None:
        entries += pytest_pythonpath(project)
        if (project / "src").is_dir():
            entries.append(project / "src")
        entries.append(project)
    if workspace_root is not None:
        entries.append(workspace_root.resolve())
    seen: list[str] = []
    for entry in entries:
        text = str(entry)
        if text not in seen:
            seen.append(text)
    return ImportSpec(module, tuple(seen))
