"""Linting documents for the server: per-workspace configuration, caching, scheduling.

No LSP types here: the server converts what this returns.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

from ..engine.config import Config, ConfigError, ConfigResolver
from ..engine.files import conftest_fixture_sources, conftest_sets_default_dtype
from ..engine.linter import LintCache, LintCancelled, LintOptions, lint_source
from ..engine.fixes import fix_source
from ..findings import Finding
from .settings import Settings

log = logging.getLogger("gradlint.server")


_SERIALS = itertools.count(1)
SERVER_CACHE_BYTES = 48 * 2 ** 20  # the editor's incremental cache (estimated bytes)


@dataclass(frozen=True)
class LintSnapshot:
    uri: str
    version: int | None
    findings: tuple[Finding, ...]
    serial: int = field(default_factory=lambda: next(_SERIALS))  # unique, for pull result ids


class ProjectConfigs:
    """Configuration per workspace folder, re-read when pyproject.toml/conftest.py change."""

    def __init__(self, on_error: Callable[[str], None]):
        self._resolvers: dict[Path, ConfigResolver] = {}
        self._conftest: dict[Path, bool] = {}
        self._on_error = on_error
        self._reported: set[str] = set()

    def invalidate(self) -> None:
        self._resolvers.clear()
        self._conftest.clear()
        self._reported.clear()

    def config_for(self, path: Path | None, root: Path) -> Config:
        resolver = self._resolvers.get(root)
        if resolver is None:
            resolver = self._resolvers[root] = ConfigResolver(root)
        try:
            return resolver.for_path(path if path is not None else root / "untitled.py")
        except ConfigError as error:
            message = str(error)
            if message not in self._reported:
                self._reported.add(message)
                self._on_error(message)
            return Config(root=root)

    def default_dtype_unknown(self, path: Path | None, root: Path) -> bool:
        if path is None:
            return False
        key = path.parent
        if key not in self._conftest:
            self._conftest[key] = conftest_sets_default_dtype(path, root)
        return self._conftest[key]

    def options(self, path: Path | None, root: Path, settings: Settings) -> LintOptions:
        config = self.config_for(path, root)
        options = config.options_for(path, list(settings.select) if settings.select else None,
                                     settings.ignore,
                                     dtype_unknown=self.default_dtype_unknown(path, root))
        if settings.severity:
            options = replace(options, severity={**options.severity, **settings.severity})
        if path is not None:
            options = replace(options, conftests=conftest_fixture_sources(path, root))
        return options


# Lints that parsed this much since the last time (estimated bytes of trees, about a
# 10,000-line file) leave millions of objects in the block cache for the next keystroke.
# Python's cyclic collector would traverse them all again in a full collection every so many
# edits: 0.9 s on a 50,000-line file, one edit in twenty. They are collected once, right
# after such a lint, and frozen: the collector no longer looks at them, while reference
# counting still frees them when the cache lets go (a libcst tree holds no reference cycles).
FREEZE_AFTER_BYTES = 16 * 2 ** 20


def _settle() -> None:
    gc.collect()  # (the garbage with cycles that lint left must not be frozen with the rest)
    gc.freeze()


class Linter:
    """Runs lints off the event loop, one at a time, sharing one incremental cache (bounded
    by bytes). A lint of a document gives way to a newer lint of the same document: it
    stops at the next block and returns None, so a big file never keeps the editor waiting
    on versions nobody will see."""

    def __init__(self) -> None:
        # 48 MiB of (estimated) cache: with the interpreter, libcst and pygls the server stays
        # under 150 MB after 10,000 distinct edits (benchmarks/bench_editor.py)
        self.cache = LintCache(max_bytes=SERVER_CACHE_BYTES)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradlint-lint")
        self._latest: dict[str, object] = {}  # document -> token of its newest lint
        self._closed = False
        self._parsed_at_settle = 0  # the block cache's parsed bytes at the last _settle

    async def lint(self, text: str, path: str, options: LintOptions, *,
                   supersede: str | None = None,
                   on_partial: Callable[[list[Finding]], None] | None = None
                   ) -> list[Finding] | None:
        """The findings, or None when a newer lint of ``supersede`` (a document) took over.
        ``on_partial`` gets early findings of a long lint, on the event loop."""
        loop = asyncio.get_running_loop()
        token = object()
        if supersede is not None:
            self._latest[supersede] = token

        def cancelled() -> bool:
            return self._closed or (supersede is not None and self._latest.get(supersede) is not token)

        def partial(findings: list[Finding]) -> None:
            if on_partial is not None and not cancelled():
                loop.call_soon_threadsafe(on_partial, findings)

        def run():
            if cancelled():
                raise LintCancelled()
            return lint_source(text, path, options, self.cache, cancelled=cancelled,
                               progress=partial if on_partial is not None else None)

        try:
            result = await loop.run_in_executor(self._executor, run)
        except LintCancelled:
            return None
        finally:
            if supersede is not None and self._latest.get(supersede) is token:
                del self._latest[supersede]
            self._settle_if_parsed_much()  # (also after a lint a newer one superseded)
        return result.findings

    def _settle_if_parsed_much(self) -> None:
        parsed = self.cache.blocks.parsed_bytes
        if parsed - self._parsed_at_settle >= FREEZE_AFTER_BYTES and not self._closed:
            self._parsed_at_settle = parsed
            self._executor.submit(_settle)  # queued after this lint: its findings go out first

    async def fix_all(self, text: str, path: str, options: LintOptions) -> str:
        loop = asyncio.get_running_loop()
        outcome = await loop.run_in_executor(
            self._executor, lambda: fix_source(text, path, options, unsafe=False, cache=self.cache))
        return outcome.text

    async def call(self, function, *args):
        """Run ``function`` on the lint thread (it shares the cache, which is not thread-safe)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, function, *args)

    def shutdown(self) -> None:
        self._closed = True  # a running lint stops at its next block
        self._executor.shutdown(wait=False, cancel_futures=True)


class Debouncer:
    """One timer per document: a change to one document never delays another."""

    def __init__(self) -> None:
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def schedule(self, key: str, delay: float, callback: Callable[[], None]) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()
        if delay <= 0:
            self._timers[key] = loop.call_soon(self._fire, key, callback)
        else:
            self._timers[key] = loop.call_later(delay, self._fire, key, callback)

    def _fire(self, key: str, callback: Callable[[], None]) -> None:
        self._timers.pop(key, None)
        callback()

    def cancel(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def cancel_all(self) -> None:
        for key in list(self._timers):
            self.cancel(key)

    def pending(self) -> Iterable[str]:
        return list(self._timers)
