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


def recall(table: dict, key: object, node: object) -> object:
    """What ``table`` remembers under ``key`` for ``node``, or ``MISSING`` (an entry left
    by another node that had the same id is not this node's)."""
    known = table.get(key)
    if known is not None and known[0] is node:
        return known[1]
    return MISSING


MISSING = object()
