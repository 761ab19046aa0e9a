"""`gradlint trust [PATH]`, `gradlint untrust [PATH]`, `gradlint trust --list`: the folders
in which the language server may run code (gradcheck) for editors that have no workspace
trust of their own (Neovim, Emacs, Helix, ...), kept in the user's configuration."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported where used: `gradlint check` builds this command's parser only)
    from ..engine import trust_store

EXIT_CLEAN, EXIT_ERROR = 0, 2


def store_path() -> Path:
    from ..engine import trust_store
    return trust_store.default_location(os.environ, Path.home())


def add_parsers(commands) -> None:
    trust = commands.add_parser(
        "trust", help="let the language server run gradcheck in a folder (any editor)",
        description="Record FOLDER (default: the current directory) and everything under it as "
                    "trusted, in your own configuration (never in the folder): the language "
                    "server then runs gradcheck there when an editor asks, from any editor. "
                    "VS Code uses its own workspace trust instead.")
    trust.add_argument("path", nargs="?", default=".", metavar="FOLDER")
    trust.add_argument("--list", action="store_true", help="list the trusted folders")
    untrust = commands.add_parser("untrust", help="stop trusting a folder (see `gradlint trust`)")
    untrust.add_argument("path", nargs="?", default=".", metavar="FOLDER")
    untrust.add_argument("--all", action="store_true", help="stop trusting every folder")


def _load(path: Path) -> trust_store.TrustStore:
    from ..engine import trust_store
    try:
        return trust_store.load(path)
    except trust_store.TrustStoreError as error:
        print(f"gradlint: error: {error}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR) from None


def _save(store: trust_store.TrustStore) -> None:
    from ..engine import trust_store
    try:
        trust_store.save(store)
    except trust_store.TrustStoreError as error:
        print(f"gradlint: error: {error}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR) from None


def trust_command(args: argparse.Namespace) -> int:
    from ..engine import trust_store
    path = store_path()
    store = _load(path)
    if args.list:
        if not store.folders:
            print(f"No trusted folders ({path}).")
        for folder in store.folders:
            print(folder)
        return EXIT_CLEAN
    folder = Path(args.path)
    if not folder.is_dir():
        print(f"gradlint: error: not a directory: {folder}", file=sys.stderr)
        return EXIT_ERROR
    real = trust_store.canonical(folder)
    already = store.trusting(real)
    if already is not None:
        print(f"{real} is already trusted{'' if already == real else f' (through {already})'}.")
        return EXIT_CLEAN
    store.add(real)
    _save(store)
    print(f"Trusted {real}: the gradlint language server may run gradcheck on the code in it, "
          f"from any editor.")
    print(f"(recorded in {path}; `gradlint untrust {_quote(real)}` undoes it)")
    return EXIT_CLEAN


def untrust_command(args: argparse.Namespace) -> int:
    from ..engine import trust_store
    path = store_path()
    store = _load(path)
    if args.all:
        count = len(store.folders)
        store.folders.clear()
        store.added.clear()
        _save(store)
        print(f"No folder is trusted any more ({count} removed).")
        return EXIT_CLEAN
    real = trust_store.canonical(Path(args.path))
    removed = store.remove(real)
    if removed:
        _save(store)
        print(f"{real} is no longer trusted.")
    still = store.trusting(real)
    if still is not None:
        print(f"{real} is still trusted through {still}: `gradlint untrust {_quote(still)}`.")
        return EXIT_CLEAN
    if not removed:
        print(f"{real} was not trusted.")
    return EXIT_CLEAN


def _quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))
