"""The supervisor side of the gradcheck worker (asyncio, stdlib only, never imports torch).

``WorkerClient`` starts the worker (``gradlint/worker/``, a fork server) in the user's interpreter,
sends it ``run`` requests, and turns every way a run can end into one ``RunResult``, built
where the worker's JSON arrives (see docs/run-result-schema.md). It restarts the worker when it dies, kills it when it stops
answering (watchdog), and leaves no processes behind after ``close()``: not the worker,
not its runs, and not what the runs started, even in sessions of their own (the worker
keeps them in its process tree as a child subreaper; see ``gradlint/worker/proctree.py``).
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import itertools
import json
import logging
import os
import shutil
import signal
import time
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Mapping, Optional, Union

from ..worker import proctree
from .protocol import DEFAULT_LIMITS, PROTOCOL_VERSION, make_result, worker_path as _default_worker_path
from .result import RunResult

log = logging.getLogger("gradlint.runner")

ProgressCallback = Callable[[str, Optional[int]], Union[None, Awaitable[None]]]

_MAX_LINE = 64 * 2 ** 20  # a result line can carry a 64 KiB stderr tail and long messages
_STDERR_KEEP = 8192


class WorkerStartError(Exception):
    """The worker could not be started; ``reason`` is one line an editor can show."""

    def __init__(self, reason: str, detail: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class WorkerInfo:
    """What the worker announced when it became ready."""

    pid: int
    torch: str
    python: str
    executable: str
    num_threads: int
    import_s: float
    warmup_s: float
    startup_s: float


@dataclass
class _Pending:
    request: dict
    future: asyncio.Future
    on_progress: ProgressCallback | None
    pid: int | None = None


@dataclass
class _Zygote:
    proc: asyncio.subprocess.Process
    info: WorkerInfo | None = None
    pending: dict = field(default_factory=dict)  # run id -> _Pending
    children: dict = field(default_factory=dict)  # run id -> child pid (its own process group)
    stderr_tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=200))
    reader: asyncio.Task | None = None
    stderr_reader: asyncio.Task | None = None
    dead: bool = False
    death_reason: str | None = None
    closing_status: str = "crash"  # what in-flight runs become when we kill the worker
    pings: list = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: Mapping[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is None or stdin.is_closing():
            raise ConnectionResetError("worker stdin is closed")
        stdin.write((json.dumps(message) + "\n").encode("utf-8"))

    def kill_group(self) -> None:
        """SIGKILL the worker and every process below it (its runs and whatever they
        started), and the process groups of the worker and of every in-flight run."""
        if self.proc.returncode is None:  # not reaped: the pid is still the worker's
            proctree.stop_and_kill_tree(self.proc.pid)
        pgids = [self.proc.pid] + list(self.children.values())
        for pgid in pgids:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass


class WorkerClient:
    """Runs gradcheck requests in a warm worker process.

    ``python``: the interpreter that has torch (the user's). ``cwd``: the workspace root
    (the worker's working directory). ``env``: the worker's environment (None: inherit).
    ``max_parallel``: how many runs may be in flight at once. ``grace``: seconds past a
    run's timeout after which the worker is presumed hung, killed and restarted.
    """

    def __init__(
        self,
        python: str,
        cwd: str,
        env: Mapping[str, str] | None = None,
        max_parallel: int = 2,
        *,
        worker_path: str | None = None,
        startup_timeout: float = 120.0,
        grace: float = 10.0,
    ) -> None:
        if max_parallel < 1:
            raise ValueError("max_parallel must be at least 1")
        self.python = python
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.max_parallel = max_parallel
        self.worker_path = worker_path or _default_worker_path()
        self.startup_timeout = startup_timeout
        self.grace = grace
        self.restarts = 0
        self._zyg: _Zygote | None = None
        self._ids = itertools.count(1)
        self._sem: asyncio.Semaphore | None = None
        self._start_lock: asyncio.Lock | None = None
        self._closed = False
        self._started_once = False
        self._starting: _Zygote | None = None  # a worker being started (close() kills it too)

    # -- public API -------------------------------------------------------------

    @property
    def info(self) -> WorkerInfo | None:
        """The running worker's announcement, or None when none is running."""
        z = self._zyg
        return z.info if z is not None and not z.dead else None

    @property
    def pid(self) -> int | None:
        """The worker (zygote) pid, or None."""
        z = self._zyg
        return z.pid if z is not None and not z.dead else None

    @property
    def running_children(self) -> dict:
        """Run id -> pid of the forked child running it, for runs now in flight."""
        z = self._zyg
        return dict(z.children) if z is not None else {}

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> "WorkerClient":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> WorkerInfo:
        """Start the worker (if it is not running) and wait until it is ready.

        Raises WorkerStartError with a one-line reason (interpreter not found, torch not
        installed in it, ...).
        """
        z = await self._ensure_started()
        assert z.info is not None
        return z.info

    async def restart(self) -> WorkerInfo:
        """Replace the worker with a fresh one (e.g. after the environment changed)."""
        z = self._zyg
        if z is not None and not z.dead:
            await self._kill(z, "the worker was restarted")
        return await self.start()

    async def ping(self, timeout: float = 5.0) -> float:
        """Round-trip time to the worker in seconds (starts it if needed)."""
        z = await self._ensure_started()
        fut = asyncio.get_running_loop().create_future()
        z.pings.append(fut)
        t = time.monotonic()
        z.send({"op": "ping"})
        await asyncio.wait_for(fut, timeout)
        return time.monotonic() - t

    async def run(
        self,
        request: Mapping[str, Any],
        *,
        timeout: float = 60.0,
        on_progress: ProgressCallback | None = None,
    ) -> RunResult:
        """Run one request and return its result (never raises for run outcomes).

        ``timeout`` is the run's limit in seconds (enforced by the worker, which kills
        the run; past timeout + grace the whole worker is presumed hung and restarted).
        ``on_progress(message, percentage)`` is called for progress events. Cancelling
        the awaiting task cancels the run: the worker kills its process.
        """
        if self._closed:
            raise RuntimeError("WorkerClient is closed")
        rid = "r%d" % next(self._ids)
        req = dict(request)
        req["op"] = "run"
        req["id"] = rid
        limits = dict(DEFAULT_LIMITS)
        limits.update(request.get("limits") or {})
        limits["timeout_s"] = float(timeout)
        req["limits"] = limits
        options = dict(req.get("options") or {})
        if self.max_parallel > 1 and not options.get("num_threads"):
            # runs side by side share the cores: more OpenMP threads than cores spin against
            # each other (a 40 s gradcheck that takes 1.5 s alone, measured on 2 cores)
            options["num_threads"] = max(1, (os.cpu_count() or 1) // self.max_parallel)
            req["options"] = options
        t0 = time.monotonic()
        sem = self._semaphore()
        async with sem:
            queued = time.monotonic() - t0
            if self._closed:
                return self._finish(make_result(req, "cancelled", "cancelled", message="the worker was closed"),
                                    t0, queued)
            try:
                z = await self._ensure_started()
            except WorkerStartError as e:
                if self._closed:
                    result = make_result(req, "cancelled", "cancelled", message="the worker was closed")
                else:
                    result = make_result(req, "error", "✗ " + e.reason, verdict="worker_unavailable",
                                         message=e.detail)
                return self._finish(result, t0, queued)
            loop = asyncio.get_running_loop()
            pend = _Pending(req, loop.create_future(), on_progress)
            if z.dead:  # died since _ensure_started (its death handler may have run already)
                return self._finish(make_result(req, "crash", "✗ crashed: " + (z.death_reason or "the worker died"),
                                                message="the worker died before the run started"), t0, queued)
            z.pending[rid] = pend
            try:
                try:
                    z.send(req)
                    await z.proc.stdin.drain()
                except (ConnectionError, RuntimeError, AttributeError) as e:
                    log.debug("sending run %s failed: %s", rid, e)  # the reader reports the worker's death
                done, _ = await asyncio.wait({pend.future}, timeout=timeout + self.grace)
            except asyncio.CancelledError:
                z.pending.pop(rid, None)
                if not z.dead:
                    try:
                        z.send({"op": "cancel", "id": rid})
                    except (ConnectionError, RuntimeError):
                        pass
                raise
            if done:
                result = pend.future.result()
            else:
                z.pending.pop(rid, None)
                limit = timeout + self.grace
                log.warning("worker pid %s gave no result for %s within %.1f s; restarting it", z.pid, rid, limit)
                await self._kill(z, "the worker stopped answering and was restarted")
                result = make_result(
                    req, "timeout", "⏱ timed out after %g s (the worker stopped answering and was restarted)" % limit,
                    message="No result arrived within the run's timeout plus %g s of grace; the worker process "
                            "group was killed and will be restarted." % self.grace)
        return self._finish(result, t0, queued)

    async def close(self, grace: float = 3.0) -> None:
        """Stop the worker and every run; leaves no processes behind. The worker gets
        ``grace`` seconds to stop its runs itself before it is killed with its tree."""
        self._closed = True
        if self._starting is not None:
            self._starting.kill_group()  # its start-up fails; the waiting run reports it
        z = self._zyg
        self._zyg = None
        if z is None:
            return
        z.closing_status = "cancelled"
        if z.death_reason is None:
            z.death_reason = "the worker was closed"
        if not z.dead:
            try:
                z.send({"op": "shutdown"})
                z.proc.stdin.close()
            except (ConnectionError, RuntimeError, AttributeError):
                pass
            try:
                await asyncio.wait_for(z.proc.wait(), grace)
            except asyncio.TimeoutError:
                pass
        await self._kill(z, "the worker was closed")

    # -- internals --------------------------------------------------------------

    def _semaphore(self) -> asyncio.Semaphore:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.max_parallel)
        return self._sem

    def _finish(self, result: RunResult, t0: float, queued: float) -> RunResult:
        return replace(result, timings={**result.timings, "queue_s": queued, "wall_s": time.monotonic() - t0})

    async def _ensure_started(self) -> _Zygote:
        if self._closed:
            raise WorkerStartError("the worker client is closed")
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            z = self._zyg
            if z is not None and not z.dead:
                return z
            if self._started_once:
                self.restarts += 1
                log.info("restarting the gradcheck worker (restart #%d)", self.restarts)
            z = await self._spawn()
            if self._closed:  # closed while starting
                await self._kill(z, "the worker was closed")
                raise WorkerStartError("the worker client is closed")
            self._zyg = z
            self._started_once = True
            return z

    def _resolve_python(self) -> str:
        python = self.python
        if os.sep in python or (os.altsep and os.altsep in python):
            if not os.path.exists(python):
                raise WorkerStartError("Python interpreter not found: %s" % python)
            return python
        # a bare name is looked up on the worker's PATH (the inherited one when env is None)
        found = shutil.which(python, path=self.env.get("PATH") if self.env is not None else None)
        if found is None:
            raise WorkerStartError("Python interpreter not found: %s" % python)
        return found

    async def _spawn(self) -> _Zygote:
        python = self._resolve_python()
        if not os.path.isdir(self.cwd):
            raise WorkerStartError("workspace folder not found: %s" % self.cwd)
        if not os.path.isfile(self.worker_path):
            raise WorkerStartError("gradcheck worker script not found: %s" % self.worker_path)
        t0 = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                python, "-u", self.worker_path,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd, env=self.env, start_new_session=True, limit=_MAX_LINE,
            )
        except FileNotFoundError:
            raise WorkerStartError("Python interpreter not found: %s" % python) from None
        except PermissionError:
            raise WorkerStartError("cannot execute %s: permission denied" % python) from None
        except OSError as e:
            raise WorkerStartError("cannot start %s: %s" % (python, e.strerror or e)) from None
        z = _Zygote(proc)
        self._starting = z
        z.stderr_reader = asyncio.ensure_future(self._read_stderr(z))
        try:
            info = await asyncio.wait_for(self._await_ready(z, python, t0), self.startup_timeout)
        except asyncio.TimeoutError:
            z.kill_group()
            await self._reap(z)
            raise WorkerStartError(
                "the gradcheck worker did not become ready within %g s (%s)" % (self.startup_timeout, python),
                "\n".join(z.stderr_tail)) from None
        except BaseException:
            z.kill_group()
            await self._reap(z)
            raise
        finally:
            self._starting = None
        z.info = info
        z.reader = asyncio.ensure_future(self._read_events(z))
        log.info("gradcheck worker ready: pid %d, torch %s, python %s (%.2f s)", info.pid, info.torch,
                 info.python, info.startup_s)
        return z

    async def _await_ready(self, z: _Zygote, python: str, t0: float) -> WorkerInfo:
        assert z.proc.stdout is not None
        while True:
            line = await z.proc.stdout.readline()
            if not line:
                rc = await z.proc.wait()
                if z.stderr_reader is not None:
                    try:
                        await asyncio.wait_for(asyncio.shield(z.stderr_reader), 2.0)
                    except (asyncio.TimeoutError, Exception):
                        pass
                last = next((ln for ln in reversed(z.stderr_tail) if ln.strip()), "")
                raise WorkerStartError(
                    "the gradcheck worker exited during start-up (status %s)%s" % (rc, ": " + last if last else ""),
                    "\n".join(z.stderr_tail))
            try:
                ev = json.loads(line)
            except ValueError:
                log.debug("worker start-up: ignoring a non-JSON line %r", line[:200])
                continue
            kind = ev.get("event")
            if kind == "fatal":
                raise WorkerStartError(ev.get("reason") or "the gradcheck worker failed to start",
                                       "\n".join(z.stderr_tail))
            if kind == "ready":
                if ev.get("protocol") != PROTOCOL_VERSION:
                    raise WorkerStartError(
                        "the gradcheck worker speaks protocol %r, expected %r" % (ev.get("protocol"), PROTOCOL_VERSION))
                return WorkerInfo(
                    pid=int(ev.get("pid") or z.pid), torch=str(ev.get("torch")), python=str(ev.get("python")),
                    executable=str(ev.get("executable") or python), num_threads=int(ev.get("num_threads") or 1),
                    import_s=float(ev.get("import_s") or 0.0), warmup_s=float(ev.get("warmup_s") or 0.0),
                    startup_s=time.monotonic() - t0,
                )

    async def _read_stderr(self, z: _Zygote) -> None:
        stream = z.proc.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\n")
            z.stderr_tail.append(text[:_STDERR_KEEP])
            log.debug("worker %d stderr: %s", z.pid, text)

    async def _read_events(self, z: _Zygote) -> None:
        stream = z.proc.stdout
        assert stream is not None
        try:
            while True:
                line = await stream.readline()
                if not line:
                    break
                try:
                    ev = json.loads(line)
                except ValueError:
                    log.warning("worker %d sent a non-JSON line: %r", z.pid, line[:200])
                    continue
                self._dispatch(z, ev)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as e:
            log.warning("reading from worker %d failed: %s", z.pid, e)
        finally:
            await self._on_death(z)

    def _dispatch(self, z: _Zygote, ev: dict) -> None:
        kind = ev.get("event")
        rid = ev.get("id")
        if kind == "started":
            z.children[rid] = ev.get("pid")
            pend = z.pending.get(rid)
            if pend is not None:
                pend.pid = ev.get("pid")
        elif kind == "progress":
            pend = z.pending.get(rid)
            if pend is not None and pend.on_progress is not None:
                try:
                    ret = pend.on_progress(str(ev.get("message") or ""), ev.get("percentage"))
                    if inspect.isawaitable(ret):
                        asyncio.ensure_future(ret)
                except Exception:  # a broken callback must not break the protocol
                    log.exception("progress callback failed")
        elif kind == "result":
            z.children.pop(rid, None)
            pend = z.pending.pop(rid, None)
            if pend is not None and not pend.future.done():
                pend.future.set_result(RunResult.from_json(ev.get("result") or {}))  # the one conversion
        elif kind == "pong":
            while z.pings:
                fut = z.pings.pop(0)
                if not fut.done():
                    fut.set_result(ev)
        else:
            log.warning("worker %d: %s", z.pid, ev)

    async def _on_death(self, z: _Zygote) -> None:
        """The worker's stdout closed: it died (or was killed). Fail its runs as crashes."""
        z.dead = True
        rc = await self._reap(z)
        reason = z.death_reason
        if reason is None:
            if rc is not None and rc < 0:
                try:
                    sig = signal.Signals(-rc).name
                except ValueError:
                    sig = "signal %d" % -rc
                reason = "the gradcheck worker (pid %d) was killed by %s" % (z.pid, sig)
            else:
                reason = "the gradcheck worker (pid %d) exited with status %s" % (z.pid, rc)
            log.warning("%s; it will be restarted on the next run", reason)
        for pgid in list(z.children.values()):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        status = z.closing_status
        for rid, pend in list(z.pending.items()):
            if not pend.future.done():
                if status == "cancelled":
                    res = make_result(pend.request, "cancelled", "cancelled", message=reason)
                else:
                    res = make_result(pend.request, "crash", "✗ crashed: " + reason,
                                      message=reason + ". The run did not finish; the worker is restarted for "
                                      "the next run.", crash={"worker_pid": z.pid, "returncode": rc},
                                      stderr_tail="\n".join(z.stderr_tail))
                pend.future.set_result(res)
        z.pending.clear()
        z.children.clear()
        for fut in z.pings:
            if not fut.done():
                fut.set_exception(ConnectionResetError(reason))
        z.pings.clear()
        if self._zyg is z:
            self._zyg = None

    async def _reap(self, z: _Zygote) -> int | None:
        try:
            return await asyncio.wait_for(z.proc.wait(), 5.0)
        except asyncio.TimeoutError:
            z.kill_group()
            return await z.proc.wait()

    async def _kill(self, z: _Zygote, reason: str) -> None:
        """Kill the worker's process group (and its runs' groups) and wait for the fallout."""
        if z.death_reason is None:
            z.death_reason = reason
        z.dead = True
        z.kill_group()
        await self._reap(z)
        for task in (z.reader, z.stderr_reader):
            if task is not None:
                try:
                    await asyncio.wait_for(task, 5.0)
                except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
                    task.cancel()
        if z.reader is None:
            await self._on_death(z)
        if self._zyg is z:
            self._zyg = None


def adopt_orphans() -> bool:
    """Make this process a child subreaper (Linux): a process that escapes a worker
    which dies abruptly is adopted here rather than by init, so ``kill_orphans`` can find
    it. For programs that own their workers (the CLI, the server), not for libraries."""
    return proctree.subreaper()


def kill_orphans() -> int:
    """Kill every process still below this one; call it once no worker should be left
    (after ``close()``). Returns how many were killed."""
    return proctree.kill_tree(os.getpid(), deadline_s=2.0, reap=_reap_children)


def _reap_children() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except (ChildProcessError, InterruptedError):
            return
        if pid == 0:
            return


def run_sync(
    requests: list,
    *,
    python: str,
    cwd: str,
    env: Mapping[str, str] | None = None,
    max_parallel: int = 2,
    timeout: float = 60.0,
    on_progress: Callable[[int, str, Optional[int]], None] | None = None,
    worker_path: str | None = None,
) -> list[RunResult]:
    """Run requests with a temporary worker; returns their results in order.

    ``on_progress(index, message, percentage)`` reports progress per request.
    """

    async def main() -> list[RunResult]:
        client = WorkerClient(python, cwd, env, max_parallel, worker_path=worker_path)
        try:
            def cb(i: int) -> ProgressCallback | None:
                if on_progress is None:
                    return None
                return lambda msg, pct: on_progress(i, msg, pct)

            return list(await asyncio.gather(
                *(client.run(r, timeout=timeout, on_progress=cb(i)) for i, r in enumerate(requests))))
        finally:
            await client.close()

    return asyncio.run(main())
