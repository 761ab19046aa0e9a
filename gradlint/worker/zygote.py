"""The fork server ("zygote"): imports torch once, then forks one fresh child per run.

1. Moves its JSON protocol off fd 0/1 (onto private duplicates), then points fd 0 at
   /dev/null and fd 1 at fd 2, so user code that prints or reads stdin cannot corrupt
   the protocol.
2. Imports torch once, with ``torch.set_num_threads(1)`` before any op, and warms up
   gradcheck, gradgradcheck and forward AD without creating thread pools (a child forked
   after a parent used the OpenMP pool hangs; one forked after this warm-up does not).
   Then it announces ``{"event": "ready", ...}``.
3. Serves newline-delimited JSON requests (``run``, ``cancel``, ``ping``, ``shutdown``).
   Each ``run`` executes in a freshly forked child, so each run sees freshly imported
   user code and a crash kills only the child. The zygote multiplexes the protocol, each
   child's event pipe and each child's captured stdout+stderr pipe, and enforces the
   per-run timeout and output cap.
4. Leaves no process behind: the zygote and each run child are child subreapers, so
   whatever a run starts (even in a session of its own, even orphaned) stays in the
   zygote's process tree; when a run ends, everything it left running is killed
   (``proctree``), and so is everything still running when the zygote exits.
"""

import json
import os
import re
import selectors
import signal
import sys
import time

from . import proctree
from .protocol import DEFAULT_LIMITS, PROTOCOL_VERSION, STDERR_TAIL_BYTES, base_result, dumps, write_all
from .text import first_line, fmt, nbytes, signal_name
from .torch_setup import gradcheck_refs, import_torch, warm_up
from .userframes import parse_faulthandler, user_roots



_NATIVE_OOM = re.compile(r"(libgomp: Thread creation failed|std::bad_alloc|Cannot allocate memory)[^\n]*")


def native_out_of_memory(tail):
    """The line of a run's last output that says native code ran out of memory, or None."""
    matches = list(_NATIVE_OOM.finditer(tail[-4096:]))
    return first_line(matches[-1].group(0).strip()) if matches else None


class _Run(object):
    def __init__(self, req, pid, res_fd, out_fd, deadline, out_cap):
        self.req = req
        self.id = req.get("id")
        self.pid = pid
        self.res_fd = res_fd
        self.out_fd = out_fd
        self.deadline = deadline
        self.out_cap = out_cap
        self.buf = b""
        self.result = None
        self.exit_status = None
        self.exit_time = None
        self.kill_reason = None
        self.out_bytes = 0
        self.tail = bytearray()
        self.started = time.monotonic()
        self.provisional = False  # the result so far was sent before the run finished


class Zygote(object):
    def __init__(self, proto_in, proto_out, threads, child_main, warm_later=None):
        self.child_main = child_main  # runs one request in a forked child; never returns
        # warm-up left for idle time: done only if no request has come yet (once runs
        # start, the zygote's time is theirs: a request would wait for it)
        self.warm_later = warm_later
        self.requested = False
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.threads = threads
        self.sel = selectors.DefaultSelector()
        self.runs = {}  # id -> _Run
        self.by_pid = {}
        self.inbuf = b""
        self.eof = False
        self.pid = os.getpid()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        os.set_blocking(proto_in, False)
        signal.signal(signal.SIGCHLD, lambda s, f: None)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.sel.register(proto_in, selectors.EVENT_READ, ("proto", None))
        self.sel.register(self.wake_r, selectors.EVENT_READ, ("wake", None))

    def send(self, ev):
        try:
            write_all(self.proto_out, (dumps(ev) + "\n").encode("ascii"))
        except (BrokenPipeError, OSError):
            self.eof = True

    # -- main loop --------------------------------------------------------------

    def serve(self):
        while True:
            if self.eof:
                self.kill_all()
                return
            timeout = self._timeout()
            if self.warm_later is not None:
                if self.requested:
                    self.warm_later = None
                elif not self.sel.select(0):
                    self._warm_later()
                    continue
            try:
                events = self.sel.select(timeout)
            except InterruptedError:
                events = []
            for key, _mask in events:
                kind, run = key.data
                if kind == "proto":
                    self._read_proto()
                elif kind == "wake":
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                elif kind == "result":
                    self._read_result(run)
                elif kind == "output":
                    self._read_output(run)
            self._reap()
            self._deadlines()
            self._finalize_done()

    def _warm_later(self):
        warm, self.warm_later = self.warm_later, None
        try:
            warm()
        except Exception as e:  # an optimisation only
            sys.stderr.write("gradlint worker: warm-up failed: %s: %s\n" % (type(e).__name__, e))
        import gc

        gc.collect()  # what the warm-up made stays shared with the children, untouched
        if hasattr(gc, "freeze"):
            gc.freeze()

    def _timeout(self):
        if not self.runs:
            return None
        now = time.monotonic()
        t = 1.0
        for r in self.runs.values():
            if r.deadline is not None and r.kill_reason is None:
                t = min(t, max(0.0, r.deadline - now))
            if r.exit_time is not None:
                t = min(t, max(0.0, r.exit_time + 0.5 - now))
        return t

    # -- protocol -------------------------------------------------------------

    def _read_proto(self):
        try:
            data = os.read(self.proto_in, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            self.eof = True
            return
        self.inbuf += data
        while b"\n" in self.inbuf:
            line, self.inbuf = self.inbuf.split(b"\n", 1)
            if line.strip():
                self._handle(line)

    def _handle(self, line):
        try:
            req = json.loads(line.decode("utf-8"))
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self.send({"event": "protocol_error", "message": "bad request line: %s" % e})
            return
        op = req.get("op")
        if op == "run":
            self._start(req)
        elif op == "cancel":
            r = self.runs.get(req.get("id"))
            if r is not None:
                self._kill(r, "cancelled")
        elif op == "ping":
            self.send({"event": "pong", "running": sorted(str(k) for k in self.runs), "pid": self.pid})
        elif op == "shutdown":
            self.eof = True
        else:
            self.send({"event": "protocol_error", "message": "unknown op %r" % (op,), "id": req.get("id")})

    # -- runs -------------------------------------------------------------------

    def _start(self, req):
        self.requested = True
        rid = req.get("id")
        if rid is None or rid in self.runs:
            self.send({"event": "protocol_error", "message": "run needs a new, unique id", "id": rid})
            return
        limits = dict(DEFAULT_LIMITS)
        limits.update(req.get("limits") or {})
        req["limits"] = limits
        res_r, res_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        try:
            pid = os.fork()
        except OSError as e:
            for fd in (res_r, res_w, out_r, out_w):
                os.close(fd)
            r = base_result(req)
            r.update(status="error", verdict=None, summary="✗ could not start the run: fork failed (%s)" % e.strerror,
                     message=str(e))
            self.send({"event": "result", "id": rid, "result": r})
            return
        if pid == 0:  # child
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                fds = [res_r, out_r, self.proto_in, self.proto_out, self.wake_r, self.wake_w]
                for r in self.runs.values():
                    fds.extend([r.res_fd, r.out_fd])
                try:
                    fds.append(self.sel.fileno())
                except Exception:
                    pass
                for fd in fds:
                    if fd is not None and fd >= 0:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                self.child_main(req, res_w, out_w, self.pid, self.threads)
            finally:
                os._exit(71)
        os.close(res_w)
        os.close(out_w)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        os.set_blocking(res_r, False)
        os.set_blocking(out_r, False)
        timeout = limits.get("timeout_s")
        deadline = time.monotonic() + float(timeout) if timeout else None
        run = _Run(req, pid, res_r, out_r, deadline, int(limits.get("output_bytes") or 0))
        self.runs[rid] = run
        self.by_pid[pid] = run
        self.sel.register(res_r, selectors.EVENT_READ, ("result", run))
        self.sel.register(out_r, selectors.EVENT_READ, ("output", run))
        self.send({"event": "started", "id": rid, "pid": pid})

    def _kill(self, run, reason):
        if run.exit_status is not None:
            return
        if run.kill_reason is None:
            run.kill_reason = reason
        try:
            os.killpg(run.pid, signal.SIGKILL)
        except OSError:
            pass
        # what left the process group (setsid) is still below the run child (a subreaper)
        proctree.stop_and_kill_tree(run.pid)

    def _sweep(self):
        """Kill every process below the zygote that no live run owns: what finished runs
        left behind (orphans are re-parented to the zygote, a subreaper)."""
        live = [pid for pid, run in self.by_pid.items() if run.exit_status is None]
        proctree.kill_tree(self.pid, spare=live, reap=self._collect)

    def _read_result(self, run):
        while True:
            try:
                data = os.read(run.res_fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._close_fd(run, "res_fd")
                return
            run.buf += data
            while b"\n" in run.buf:
                line, run.buf = run.buf.split(b"\n", 1)
                try:
                    ev = json.loads(line.decode("utf-8"))
                except ValueError:
                    continue
                if ev.get("event") == "progress":
                    ev["id"] = run.id
                    self.send(ev)
                elif ev.get("event") == "result":
                    run.result = ev.get("result")
                    run.provisional = bool(ev.get("provisional"))

    def _read_output(self, run):
        while True:
            try:
                data = os.read(run.out_fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._close_fd(run, "out_fd")
                return
            run.out_bytes += len(data)
            run.tail += data
            if len(run.tail) > STDERR_TAIL_BYTES:
                del run.tail[: len(run.tail) - STDERR_TAIL_BYTES]
            if run.out_cap and run.out_bytes > run.out_cap and run.kill_reason is None:
                self._kill(run, "output_limit")

    def _close_fd(self, run, attr):
        fd = getattr(run, attr)
        if fd is None:
            return
        try:
            self.sel.unregister(fd)
        except (KeyError, ValueError):
            pass
        try:
            os.close(fd)
        except OSError:
            pass
        setattr(run, attr, None)

    def _collect(self):
        """Reap every exited child: runs (their status is kept) and adopted orphans.
        Returns the runs that ended."""
        ended = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return ended
            except InterruptedError:
                continue
            if pid == 0:
                return ended
            run = self.by_pid.pop(pid, None)
            if run is not None:
                run.exit_status = status
                run.exit_time = time.monotonic()
                ended.append(run)

    def _reap(self):
        ended = self._collect()
        if ended:
            self._sweep()  # before draining: what the runs left running must not write on
        for run in ended:
            # drain whatever is still buffered in the pipes
            if run.res_fd is not None:
                self._read_result(run)
            if run.out_fd is not None:
                self._read_output(run)

    def _deadlines(self):
        now = time.monotonic()
        for run in list(self.runs.values()):
            if run.deadline is not None and run.kill_reason is None and run.exit_status is None and now >= run.deadline:
                self._kill(run, "timeout")

    def _finalize_done(self):
        now = time.monotonic()
        for rid, run in list(self.runs.items()):
            if run.exit_status is None:
                continue
            if (run.res_fd is not None or run.out_fd is not None) and now < run.exit_time + 0.5:
                continue
            # grandchildren may keep the pipes open: stop waiting for them
            if run.res_fd is not None:
                self._read_result(run)
            if run.out_fd is not None:
                self._read_output(run)
            self._close_fd(run, "res_fd")
            self._close_fd(run, "out_fd")
            try:
                os.killpg(run.pid, signal.SIGKILL)  # leftovers of the run's process group
            except OSError:
                pass
            del self.runs[rid]
            self.send({"event": "result", "id": rid, "result": self._final(run)})

    def _final(self, run):
        req = run.req
        limits = req.get("limits") or {}
        tail = bytes(run.tail).decode("utf-8", "replace")
        status = run.exit_status
        r = run.result  # a result that arrived before a kill is kept
        if r is None:
            r = self._no_result(run, tail, limits)
        elif run.provisional and run.kill_reason:
            # the run's verdict came before it was stopped: kept, saying what was cut short
            r.setdefault("notes", []).append("the run was stopped (%s) after its verdict, while analysing it"
                                             % run.kill_reason)
        r["id"] = run.id
        r["stderr_tail"] = tail
        r["output_bytes"] = run.out_bytes
        r.setdefault("timings", {})["child_wall_s"] = time.monotonic() - run.started
        r.setdefault("environment", {})["pid"] = run.pid
        if os.WIFSIGNALED(status):
            r["exit"] = {"signal": os.WTERMSIG(status), "signal_name": signal_name(os.WTERMSIG(status))[0]}
        elif os.WIFEXITED(status):
            r["exit"] = {"code": os.WEXITSTATUS(status)}
        return r

    def _no_result(self, run, tail, limits):
        req = run.req
        r = base_result(req)
        roots = user_roots(req)
        status = run.exit_status
        reason = run.kill_reason
        if reason == "timeout":
            t = limits.get("timeout_s")
            r.update(status="timeout", summary="⏱ timed out after %s s (the run was killed)" % fmt(float(t)),
                     message="The run did not finish within %s seconds; gradlint killed it. Use smaller inputs "
                             "or a longer timeout." % fmt(float(t)))
            headline, frames = None, []
        elif reason == "cancelled":
            r.update(status="cancelled", summary="cancelled", message="The run was cancelled and its process killed.")
            headline, frames = None, []
        elif reason == "output_limit":
            cap = limits.get("output_bytes")
            r.update(status="output_limit",
                     summary="✗ stopped: the code wrote more than %s to stdout/stderr" % nbytes(cap),
                     message="The run wrote %s of output (cap %s) and was killed." % (nbytes(run.out_bytes), nbytes(cap)))
            headline, frames = None, []
        else:
            headline, frames = parse_faulthandler(tail, roots)
            crash = {"faulthandler": headline, "traceback": frames}
            where = ""
            if frames:
                f = frames[0]
                where = " in %s (%s:%d)" % (f["function"], os.path.basename(f["file"]), f["line"])
                r["location"] = {"file": f["file"], "line": f["line"], "function": f["function"],
                                 "reason": "crashed here"}
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                name, desc = signal_name(sig)
                crash.update(signal=sig, signal_name=name, description=desc)
                if sig == signal.SIGKILL:
                    extra = " (possibly the kernel's out-of-memory killer)"
                else:
                    extra = ""
                r.update(status="crash",
                         summary="✗ crashed: killed by %s%s%s%s" % (name, " (%s)" % desc.lower() if desc else "", where, extra),
                         message="The process running the check died from signal %s%s. The last output is in "
                                 "stderr_tail." % (name, extra))
            else:
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
                crash.update(exit_code=code)
                r.update(status="crash",
                         summary="✗ crashed: the code exited the process with status %s%s" % (code, where),
                         message="The process running the check exited (status %s) before reporting a result, e.g. "
                                 "through os._exit()." % code)
            native = native_out_of_memory(tail)
            cap = limits.get("memory_bytes")
            if native and cap:  # native code (OpenMP, C++) died at the memory cap, not the user's code
                r.update(status="memory", summary="✗ out of memory: %s (cap %s)" % (native, nbytes(cap)),
                         message="The run hit its memory cap in native code, which ended the process (%s). Use "
                                 "smaller inputs or a larger memory limit." % native)
            r["crash"] = crash
        return r

    def kill_all(self):
        for run in list(self.runs.values()):
            self._kill(run, "shutdown")
        proctree.kill_tree(self.pid, reap=self._collect)  # and whatever finished runs left
        deadline = time.monotonic() + 2.0
        while self.by_pid and time.monotonic() < deadline:
            self._collect()
            if self.by_pid:
                time.sleep(0.01)




def main():
    t0 = time.perf_counter()
    # 1. the protocol moves to private fds; user output can never reach it
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)

    def announce(ev):
        write_all(proto_out, (dumps(ev) + "\n").encode("ascii"))

    if not hasattr(os, "fork"):
        announce({"event": "fatal", "reason": "the gradcheck worker needs os.fork (Linux or macOS)"})
        return 3
    proctree.subreaper()  # orphans of runs are adopted here, not by init
    try:
        torch = import_torch()
    except ImportError as e:
        if getattr(e, "name", None) == "torch" or "No module named 'torch'" in str(e):
            reason = "torch is not installed in %s" % sys.executable
        else:
            reason = "importing torch failed in %s: %s: %s" % (sys.executable, type(e).__name__, first_line(str(e)))
        announce({"event": "fatal", "reason": reason})
        return 3
    except BaseException as e:
        announce({"event": "fatal", "reason": "importing torch failed in %s: %s: %s"
                  % (sys.executable, type(e).__name__, first_line(str(e)))})
        return 3
    t_import = time.perf_counter() - t0
    from .child import child_main  # the run's modules, imported before any fork

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # no OpenMP pool in the zygote: forked children would hang on it
    t1 = time.perf_counter()
    later = None
    try:
        later = warm_up()
    except Exception as e:  # an optimisation only
        sys.stderr.write("gradlint worker: warm-up failed: %s: %s\n" % (type(e).__name__, e))
    gradcheck_refs()
    # children's garbage collections must not touch (and so copy) the zygote's objects
    import gc

    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    t_warm = time.perf_counter() - t1
    zyg = Zygote(proto_in, proto_out, threads, child_main, later)
    announce({
        "event": "ready",
        "protocol": PROTOCOL_VERSION,
        "torch": torch.__version__,
        "python": "%d.%d.%d" % sys.version_info[:3],
        "executable": sys.executable,
        "pid": os.getpid(),
        "num_threads": threads,
        "import_s": round(t_import, 4),
        "warmup_s": round(t_warm, 4),
    })
    try:
        zyg.serve()
    finally:
        zyg.kill_all()
    return 0
