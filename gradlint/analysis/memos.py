"""Memos that live for one lint.

What they remember is a pure function of libcst nodes (which never change), keyed by a
node's ``id`` with the node itself kept in the entry, so that the id cannot be reused while
the entry lives. The engine empties them all after each lint (``forget``): that also lets
the lint's trees go.
"""

from __future__ import annotations

_ALL: list[dict] = []
MAX_ENTRIES = 100_000  # a memo that grows past this (one huge lint) starts afresh


# For memos of what the rules ask again about the block they are checking: each block's
# questions come together (all rules run on one block, then the next), so a few thousand
# entries keep nearly every answer worth keeping, and a big file's lint does not hold all
# of them (with the facts and sites they keep alive) until its end.
NEAR_ENTRIES = 2_048


def memo(limit: int = MAX_ENTRIES) -> dict:
    """A new memo, emptied by ``forget``, and started afresh when it reaches ``limit``."""
    found: dict = {}
    _ALL.append(found)
    _LIMITS[id(found)] = limit  # (memos are module globals: their ids stay theirs)
    return found


_LIMITS: dict[int, int] = {}


def remember(table: dict, key: object, node: object, value: object) -> None:
    make_room(table)
    table[key] = (node, value)


def make_room(table: dict) -> None:
    """Empty ``table`` if it is full (for memos that store entries of their own shape)."""
    if len(table) >= _LIMITS.get(id(table), MAX_ENTRIES):
        table.clear()


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
