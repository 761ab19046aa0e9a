"""Memos that live for one lint.

What they remember is a pure function of libcst nodes (which never change), keyed by a
node's ``id`` with the node itself kept in the entry, so that the id cannot be reused while
the entry lives. The engine empties them all after each lint (``forget``): that also lets
the lint's trees go.
"""

from __future__ import annotations

_ALL: list[dict] = []
MAX_ENTRIES = 100_000  # a memo that grows past this (one huge lint) starts afresh


def memo() -> dict:
    """A new memo, emptied by ``forget``."""
    found: dict = {}
    _ALL.append(found)
    return found


def remember(table: dict, key: object, node: object, value: object) -> None:
    if len(table) >= MAX_ENTRIES:
        table.clear()
    table[key] = (node, value)


def forget() -> None:
    for table in _ALL:
        table.clear()
