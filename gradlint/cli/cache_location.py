"""Where `gradlint check` and `gradlint run` keep their caches: one place per project, never
in whatever folder the command happened to start from."""

from __future__ import annotations

import os
from pathlib import Path

from ..engine.config import ConfigResolver

CACHE_DIRECTORY = ".gradlint_cache"
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")  # (engine/import_roots.py's)


def project_root(resolver: ConfigResolver, cwd: Path) -> Path:
    """The directory of the pyproject.toml that configures gradlint, else the nearest
    directory at or above ``cwd`` with a project file (pyproject.toml, setup.py, setup.cfg),
    else ``cwd``."""
    config = resolver.for_path(cwd / "__init__.py")
    if config.source is not None:
        return config.root.resolve()
    start = cwd.resolve()
    for directory in (start, *start.parents):
        if any((directory / marker).is_file() for marker in PROJECT_MARKERS):
            return directory
    return start


def cache_directory(explicit: Path | None, resolver: ConfigResolver, cwd: Path) -> Path:
    """--cache-dir, else $GRADLINT_CACHE_DIR, else .gradlint_cache/ in the project root,
    else, when that is not writable, a directory for the project in the user's cache."""
    if explicit is not None:
        return explicit
    if os.environ.get("GRADLINT_CACHE_DIR"):
        return Path(os.environ["GRADLINT_CACHE_DIR"])
    root = project_root(resolver, cwd)
    local = root / CACHE_DIRECTORY
    if os.access(local if local.is_dir() else root, os.W_OK):
        return local
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gradlint"
    import hashlib

    return user / hashlib.blake2b(os.fsencode(root), digest_size=8).hexdigest()
