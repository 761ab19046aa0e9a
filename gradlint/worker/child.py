"""The forked child that runs one check: limits, output capture, and the result.

It never returns: it writes its result event and leaves through ``os._exit``.
"""

import os
import signal
import sys

import torch

from . import proctree, world
from .job import Job
from .outcome import Captured, is_memory_error
from .protocol import DEFAULT_LIMITS, dumps, write_all
from .text import exc_text, first_line


def set_pdeathsig():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = getattr(libc, "prctl", None)
        if prctl is not None:
            prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def address_space():
    """This process's address space in bytes (0 when unknown: no /proc)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def child_main(req, result_w, output_w, zygote_pid, threads):
    """Runs in the forked child; never returns."""
    code = 0
    try:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        set_pdeathsig()
        if os.getppid() != zygote_pid:
            os._exit(1)
        proctree.subreaper()  # what the run starts stays below it, even after setsid()
        os.dup2(output_w, 1)
        os.dup2(output_w, 2)
        if output_w > 2:
            os.close(output_w)
        limits = req.get("limits") or {}
        mem = limits.get("memory_bytes", DEFAULT_LIMITS["memory_bytes"])
        if mem:
            # RLIMIT_AS counts address space: every thread's malloc arena reserves 64 MiB of it,
            # so with many cores the OpenMP pool alone could use up the cap. Few arenas suffice.
            try:
                import ctypes

                ctypes.CDLL(None).mallopt(-8, 4)  # M_ARENA_MAX (glibc)
            except Exception:
                pass
            try:
                import resource

                # the cap is what the run may allocate: torch alone already maps ~0.5 GiB
                cap = address_space() + int(mem)
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            except Exception:
                pass
        import faulthandler

        faulthandler.enable(file=sys.stderr, all_threads=True)
        torch.set_num_threads(threads)

        def emit(ev):
            write_all(result_w, (dumps(ev) + "\n").encode("ascii"))

        job = Job(req, emit)
        result = None
        try:
            result = job.run()
            if world.needs_group(result):  # collectives: again in a process group of one
                with world.GroupOfOne() as started:
                    if started:
                        job = Job(req, emit)
                        result = job.run()
                        result["notes"].insert(0, world.NOTE)
        except Captured:
            result = job.result
            result.update(status="error", verdict="exception",
                          summary="✗ internal: a captured gradcheck call escaped")
        except BaseException as e:  # SystemExit, KeyboardInterrupt, ... from user code
            info = job.reporter.exception_info(e, "run")
            if isinstance(e, Exception) and not info["traceback"] and not is_memory_error(e):
                # no user frame: a bug in this worker, not in the user's code
                import traceback

                result = job.result
                result.update(status="error", verdict=None,
                              summary="✗ internal error in the gradlint worker: %s: %s"
                                      % (type(e).__name__, first_line(exc_text(e, 300))),
                              message="".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:],
                              exception=info)
            elif is_memory_error(e):
                result = job.result
                result.update(status="memory", verdict=None, summary=job.reporter.memory_summary(e),
                              message=exc_text(e), exception=info, location=job.reporter.location_for("run", info))
            else:
                what = type(e).__name__
                if isinstance(e, SystemExit):
                    what = "SystemExit(%r)" % (e.code,)
                result = job.result
                result.update(
                    status="error", verdict="exception",
                    summary="✗ the code raised %s, which stops the program" % what,
                    message="%s was raised while running the check; gradlint reports it instead of exiting."
                            % what,
                    exception=info, location=job.reporter.location_for("run", info),
                )
            result["checks"] = job.checks
            for rec in job.checks:
                rec.pop("_outcome", None)
        result["environment"]["num_threads"] = torch.get_num_threads()
        emit({"event": "result", "result": result})
    except BaseException:
        code = 70
        try:
            import traceback

            traceback.print_exc()
        except BaseException:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)
