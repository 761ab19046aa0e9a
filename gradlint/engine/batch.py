"""Checking many files: answers from the persistent cache, the rest in parallel workers,
and CI shards. Reports come back in the order of the files, whatever the workers do."""

from __future__ import annotations

import gc
import hashlib
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Iterator, Sequence

from . import timings
from .check_cache import CheckCache, entry_key
from .files import FileReport, UsageError, lint_file
from .options import LintOptions
from .reading import MAX_FILE_BYTES, MAX_NOTEBOOK_BYTES, is_notebook, read_bytes
from .timings import Timings

# Below this much source to analyse, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 256 * 1024
PARALLEL_MIN_FILES = 4


@dataclass(frozen=True)
class Job:
    path: Path
    display: str  # also what a shard is chosen by: the same on every CI machine
    options: LintOptions


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` (1 <= K <= N) as (K, N)."""
    index, slash, count = text.partition("/")
    if not slash or not index.strip().isdigit() or not count.strip().isdigit():
        raise UsageError(f"--shard expects K/N such as 1/4, got `{text}`")
    k, n = int(index), int(count)
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--shard {text}: K must be between 1 and N")
    return k, n


def shard_of(name: str, count: int) -> int:
    """The shard (1..count) of a file or target name: a stable hash, the same on every
    machine and Python (not ``hash()``, which is salted per process)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count + 1


def in_shard(name: str, shard: tuple[int, int] | None) -> bool:
    return shard is None or shard_of(name, shard[1]) == shard[0]


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _read(path: Path) -> bytes:
    """A file's bytes, checked before reading (never a FIFO or a device, never too much):
    OSError or SourceDecodeError otherwise (lint_file reports those)."""
    return read_bytes(path, MAX_NOTEBOOK_BYTES if is_notebook(path.name) else MAX_FILE_BYTES)


def check_files(jobs: Sequence[Job], *, workers: int = 0, fixing: bool = False,
                unsafe: bool = False, cache: CheckCache | None = None,
                count_fixes: bool = False, timings: Timings | None = None,
                process_ends: bool = False) -> list[FileReport]:
    """Reports for ``jobs``, in order. ``workers`` 0: one per CPU when the work is big
    enough to pay for processes. The cache is read and written only when not fixing.
    ``count_fixes``: count into each report's ``fixable`` what `--fix` would apply.
    ``timings``: receives where the CPU time of the files checked went (workers' too).
    ``process_ends``: the caller only prints the reports and exits (the command line): what
    the last file checked here leaves is then never collected (see ``_check_file``)."""
    from ..analysis.source import SourceDecodeError

    use_cache = cache is not None and not fixing
    kind = ("unsafe" if unsafe else "safe") if count_fixes else None
    reports: list[FileReport | None] = [None] * len(jobs)
    pending: list[tuple[int, int]] = []  # (position, size)
    for position, job in enumerate(jobs):
        size = 0
        if use_cache:
            try:
                data = _read(job.path)
            except (OSError, SourceDecodeError):
                pending.append((position, 0))
                continue
            size = len(data)
            hit = cache.get(job.path, entry_key(data, job.options.key()), job.display, kind)  # type: ignore[union-attr]
            if hit is not None:
                reports[position] = FileReport(job.path, job.display, hit[0], fixable=hit[1])
                continue
        else:
            try:
                size = job.path.stat().st_size
            except OSError:
                pass
        pending.append((position, size))

    if use_cache and pending:
        release_memory(collect=False)  # the files just read for their keys (before forking)
    tasks = [(jobs[position], fixing, unsafe, use_cache, count_fixes, timings is not None)
             for position, _ in pending]
    count = workers if workers > 0 else default_workers()
    total = sum(size for _, size in pending)
    if count > 1 and len(tasks) >= PARALLEL_MIN_FILES and (workers > 0 or total >= PARALLEL_MIN_BYTES):
        results = _in_workers(tasks, [size for _, size in pending], count)
    else:
        count = 1
        # (the last file's memory is not handed back: nothing is parsed after it, and a
        # collection over its trees costs a tenth of its lint)
        last = FREEZE if process_ends else KEEP
        results = [_check_one(task + (RELEASE if index < len(tasks) - 1 else last,))
                   for index, task in enumerate(tasks)]
    if timings is not None:
        timings.workers = count
    for (position, _), (report, key) in zip(pending, results):
        reports[position] = report
        if timings is not None and report.timings is not None:
            timings.merge(report.timings)
            report.timings = None
        if use_cache and key is not None and report.internal_error is None:
            cache.put(jobs[position].path, key, report.findings,  # type: ignore[union-attr]
                      {kind: report.fixable} if kind else None)
    return reports  # type: ignore[return-value]


def _check_one(task: tuple) -> tuple[FileReport, str | None]:
    """Check one file; ``task``: (job, fixing, unsafe, want_key, count_fixes, record
    timings[, what to do with its memory after it: RELEASE (the default), KEEP or FREEZE])."""
    record = task[5]
    release = task[6] if len(task) > 6 else RELEASE
    task = (*task[:5], release)
    if not record:
        return _check_file(task)
    recorder = Timings()
    with timings.one_file(recorder, task[0].display):
        report, key = _check_file(task)
    report.timings = recorder.as_dict()
    return report, key


def _check_file(task: tuple) -> tuple[FileReport, str | None]:
    from ..analysis.source import SourceDecodeError

    job, fixing, unsafe, want_key, count_fixes, release = task
    try:
        with timings.phase(timings.READING):
            data = _read(job.path)
    except (OSError, SourceDecodeError):  # reported by lint_file, never cached
        return lint_file(job.path, job.display, job.options, fix=fixing, unsafe=unsafe), None
    with timings.phase(timings.IMPORTS):
        from .linter import LintCache
        from . import files  # noqa: F401 (and what linting imports first: libcst, the rules)
        from .. import rules  # noqa: F401

    cache = LintCache(keep_findings=fixing or count_fixes)  # (a later lint of the fixed text reads them)
    with _no_collections():
        report = lint_file(job.path, job.display, job.options, fix=fixing, unsafe=unsafe, data=data,
                           count_fixes=count_fixes, cache=cache)
        parsed_chars = sum(len(text) for text in cache.blocks.texts())
        # (dropped before the collector is back on: its first pass would scan every tree still
        # held, a tenth of a big file's lint, just before they are freed)
        del cache
        if release == FREEZE:
            # the lint's reference cycles hold its trees, and the collector's first pass after
            # it would free them (5 % of a big file's check, for a process about to exit):
            # moved out of the collector's reach instead, they go when the process ends
            gc.freeze()
    if release != RELEASE:
        pass
    elif parsed_chars >= RELEASE_AFTER_BYTES:
        release_memory()
    elif len(data) >= RELEASE_AFTER_BYTES:
        release_memory(collect=False)  # its text and pre-check copies: no cycles to collect
    if not fixing:
        report.original = None  # the parent needs only the findings (less to send back)
    return report, (entry_key(data, job.options.key()) if want_key else None)


# After a file this big was parsed, its memory is handed back before the next file: its analysis holds
# reference cycles (so its trees live until the next full collection, while the next file is
# parsed), and glibc keeps what Python frees unless trimmed. Measured on torch's 450 kB
# distributed_test.py: 188 MB RSS after the lint, 182 MB after gc.collect(), 41 MB trimmed.
# Only parsed code counts: a big file the pre-checks skipped made no trees, and a full
# collection costs 20 ms (2.9 s of a 34 s whole-torch run went to collections after such files).
# (The whole-torch run's peak RSS, parent and workers: 338 MB before, 302 MB with this,
# 285 MB when big files are also kept apart, see BYTES_IN_FLIGHT.)
RELEASE_AFTER_BYTES = 64 * 1024
# what _check_file does with a file's memory after its lint: hands it back (a big file's),
# keeps it (nothing is parsed after it), or keeps it out of the collector's reach for good
# (nothing but printing follows: the command line's last file)
RELEASE, KEEP, FREEZE = "release", "keep", "freeze"


@contextmanager
def _no_collections() -> Iterator[None]:
    """No cyclic collection while one file is linted: its trees grow by millions of
    objects, and the collector's full passes scan all of them again and again (10-15 % of
    the lint of a big file). What cycles the lint leaves are collected after it, in one
    pass (release_memory, for a big file; for a small one, the next automatic collection).
    Peak memory is the same within a few percent (measured on the generated shapes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def release_memory(collect: bool = True) -> None:
    if collect:
        gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim():
    """glibc's malloc_trim, or None (found when first needed: a run that hands no memory
    back, such as one file checked, does not import ctypes)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def _in_workers(tasks: list[tuple], sizes: list[int], count: int) -> list[tuple[FileReport, str | None]]:
    import multiprocessing  # (not imported by runs answered from the cache)
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover (no fork on this platform)
        context = multiprocessing.get_context()
    from . import linter  # noqa: F401 (imported once here, inherited by forked workers)

    results: list = [None] * len(tasks)
    waiting = schedule(sizes)
    with ProcessPoolExecutor(max_workers=min(count, len(tasks)), mp_context=context) as pool:
        running: dict = {}
        while waiting or running:
            while waiting and len(running) < count:
                index = next_task(waiting, sizes, sum(sizes[i] for i in running.values()))
                if index is None:
                    break  # each file left would take the bytes in flight past the budget
                running[pool.submit(_check_one, tasks[index])] = index
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                results[running.pop(future)] = future.result()
    return results


# The bytes of source checked at once, over all workers: a worker's memory peaks with the
# tree it holds (torch's 450 kB distributed_test.py: 150 MB), and trees at once add up. While
# a big file is checked, the other workers take only files that fit beside it. (Whole torch,
# peak RSS of the process tree: 282-316 MB when only files over 128 kB were kept apart,
# 288-297 MB with this budget; see benchmarks/results-scale.md.)
BYTES_IN_FLIGHT = 512 * 1024


def schedule(sizes: Sequence[int]) -> list[int]:
    """The order to hand files out: the biggest first, so that one big file does not
    finish last on its own."""
    return sorted(range(len(sizes)), key=lambda i: -sizes[i])


def next_task(waiting: list[int], sizes: Sequence[int], in_flight: int) -> int | None:
    """Take the next file from ``waiting`` (biggest first): the first that keeps the bytes
    being checked (``in_flight``) within BYTES_IN_FLIGHT; any file when none is being
    checked; None when none fits (wait for one to finish)."""
    if not in_flight:
        return waiting.pop(0)
    for position, index in enumerate(waiting):
        if in_flight + sizes[index] <= BYTES_IN_FLIGHT:
            return waiting.pop(position)
    return None
