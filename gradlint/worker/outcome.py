"""How a run ends early, and how exceptions are reported and located in the user's code.

Two kinds of failure are kept apart: an exception raised by the user's code (it has a
user frame, or torch raised it about the user's Function) is the user's; anything else
raised while gradlint itself works (a check's own machinery, a recomputation) is
gradlint's, is reported as such, and never as the user's exception.
"""

import re
import sys
import traceback

from .text import exc_text, exc_type, first_line, nbytes
from .userframes import is_user_file
from .introspect import method_def, param_names, runs_in_method


class Outcome(Exception):
    """Ends a run (or a check) early with the given status/verdict."""

    def __init__(self, status, verdict, summary, message=None, **extra):
        Exception.__init__(self, summary)
        self.status = status
        self.verdict = verdict
        self.summary = summary
        self.message = message
        self.extra = extra


class Captured(BaseException):
    """Raised by the gradcheck interceptor to abort the code around a captured call."""


def is_memory_error(exc):
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, RuntimeError):
        msg = str(exc)
        return any(
            s in msg
            for s in ("can't allocate memory", "not enough memory", "bad_alloc",
                      "out of memory", "Cannot allocate memory")
        )
    return False


_USER_PHASES = ("forward", "backward", "setup_context", "jvp", "vjp", "vmap")
_GRADIENT_COUNT = re.compile(r"returned an incorrect number of gradients \(expected (\d+), got (\d+)\)")
# what torch says, from its C++ engine, about a user's Function (no user frame in the traceback)
_ABOUT_USER_CODE = (
    "Backward returned", "returned an incorrect number of gradients", "returned an invalid gradient",
    "does not require grad and does not have a grad_fn", "modified by an inplace operation",
    "leaf Variable that requires grad", "mark_dirty", "save_for_backward", "saved_tensors", "setup_context",
    "implement the jvp", "implement either the backward or vjp", "vmap support", "differentiate twice",
    "appears to not have been used in the graph", "expected Variable or None", "gradient different than None",
    "handle undefined output grads", "Legacy autograd function", "no autograd formula was registered",
    "custom operator", "is not defined as mutable", "no fake impl registered",
)


def is_users(exc, reporter):
    """Did the user's code raise ``exc`` (rather than gradlint's own checking machinery)?"""
    if is_memory_error(exc) or reporter.user_frames(exc):
        return True
    if not isinstance(exc, Exception):
        return True
    text = str(exc)
    return any(s in text for s in _ABOUT_USER_CODE)


class Reporter(object):
    """Turns exceptions into Outcomes and finds the source line a result points at.

    ``target`` is the result's target dict (its ``line`` may be filled in later);
    ``fclass``, ``path`` and ``call_line`` are set as the run learns them.
    """

    def __init__(self, roots, target, limits=None):
        self.roots = roots
        self.target = target
        self.limits = limits or {}
        self.path = None
        self.fclass = None
        self.call_line = None
        self.op_locations = {}  # a custom op's "op", "backward", "setup_context", "fake" definitions

    def user_frames(self, exc):
        frames = []
        for fs in traceback.extract_tb(exc.__traceback__):
            if is_user_file(fs.filename, self.roots):
                frames.append({
                    "file": fs.filename, "line": fs.lineno, "function": fs.name,
                    "code": (fs.line or "").strip() or None,
                })
        return frames

    def exception_info(self, exc, phase):
        frames = self.user_frames(exc)
        if frames and phase in ("forward", "backward", "check", "gradcheck", "inputs"):
            fn = frames[-1]["function"]
            own = self._own_phase(frames)
            if own is not None:
                phase = own
            elif fn in _USER_PHASES:
                phase = fn if fn != "vjp" else "backward"
            else:
                phase = self._op_phase(frames) or phase
        elif not frames and phase == "check" and "Backward" in str(exc):
            phase = "backward"  # raised by the autograd engine about a Function's backward
        return {
            "type": exc_type(exc),
            "message": exc_text(exc),
            "phase": phase,
            "traceback": frames,
        }

    def _own_phase(self, frames):
        """The Function's own method the check called, when the frames hold one: the outermost of
        its methods on the stack. A helper or closure backward calls raised inside backward, and
        so did the Function's forward when backward calls it again (an adjoint solve): the
        forward check passed on its own."""
        if self.fclass is None:
            return None
        for frame in frames:
            name = frame["function"]
            if name in _USER_PHASES and runs_in_method(self.fclass, name, frame["file"], frame["line"]):
                return "backward" if name == "vjp" else name
        return None

    def _op_phase(self, frames):
        """A custom op's piece the innermost of ``frames`` that is one runs in: the op's own
        function is its forward (their names are the user's, not forward/backward)."""
        pieces = (("op", "forward"), ("backward", "backward"), ("setup_context", "setup_context"))
        for frame in reversed(frames):
            for key, phase in pieces:
                loc = self.op_locations.get(key)
                if loc and loc.get("file") == frame["file"] and loc.get("function") \
                        and loc["function"].split(".")[-1] == frame["function"]:
                    return phase
        return None

    def location_for(self, why, info=None):
        if info and info.get("traceback"):
            f = info["traceback"][-1]
            return {"file": f["file"], "line": f["line"], "function": f["function"], "reason": "raised here"}
        if self.op_locations:
            loc = self.op_locations.get({"forward": "op", "jvp": "backward"}.get(why, why)) or self.op_locations.get("op")
            if loc is not None:
                return dict(loc)
        if why in ("backward", "forward", "jvp", "setup_context", "vmap") and self.fclass is not None:
            loc = method_def(self.fclass, why)
            if loc is None and why == "backward":
                loc = method_def(self.fclass, "vjp")
            if loc is not None:
                loc["reason"] = why
                return loc
        if self.call_line is not None and self.path:
            return {"file": self.path, "line": self.call_line, "function": None, "reason": "call"}
        if self.fclass is not None:
            loc = method_def(self.fclass, "forward")
            if loc:
                loc["reason"] = "forward"
                return loc
        tl = self.target.get("line")
        if tl and self.path:
            return {"file": self.path, "line": tl, "function": None, "reason": "target"}
        return None

    def user_exception(self, exc, phase, what=None):
        """An Outcome for an exception from user code (memory, or exception)."""
        info = self.exception_info(exc, phase)
        if is_memory_error(exc):
            raise Outcome("memory", None, self.memory_summary(exc), exc_text(exc), exception=info,
                          location=self.location_for(info["phase"], info))
        where = info["phase"]
        if where in ("forward", "backward", "setup_context", "jvp", "vmap"):
            what = where
        label = "%s in %s" % (info["type"].split(".")[-1], what or where)
        msg = first_line(info["message"])
        need = environment_need(exc)
        if need is not None:
            # the code asks for a GPU or a process group this run does not have: the
            # environment, not the gradients
            return Outcome(
                "error", "missing_dependency",
                "✗ cannot run here: the code needs %s (%s in %s: %s)" % (
                    need, info["type"].split(".")[-1], what or where, msg),
                info["message"], exception=info, location=self.location_for(where, info))
        if isinstance(exc, ImportError):
            # the interpreter lacks a module the code needs: the environment, not the gradients
            return Outcome(
                "error", "missing_dependency",
                "✗ cannot run here: %s (%s in %s); install it in %s, or pass another --python"
                % (msg, info["type"].split(".")[-1], what or where, sys.executable),
                info["message"], exception=info, location=self.location_for(where, info))
        count = self.gradient_count(msg)
        if count is not None:  # name the inputs without a gradient, as GL004 does
            return Outcome("error", "exception", count, info["message"], exception=info,
                           location=self.location_for("backward", info))
        return Outcome(
            "error", "exception", "✗ %s: %s" % (label, msg), info["message"],
            exception=info, location=self.location_for(where, info),
        )

    def gradient_count(self, message):
        """"✗ backward returns 1 gradient but forward takes 2 inputs: no gradient for `w`" from torch's
        "returned an incorrect number of gradients (expected 2, got 1)"; None for other messages."""
        m = _GRADIENT_COUNT.search(message)
        if m is None or self.fclass is None:
            return None
        expected, got = int(m.group(1)), int(m.group(2))
        names = param_names(None, self.fclass)
        if got >= expected or len(names) < expected:
            return None
        missing = ", ".join("`%s`" % n for n in names[got:expected])
        return ("✗ backward returns %d gradient%s but forward takes %d inputs: no gradient for %s (torch: %s)"
                % (got, "" if got == 1 else "s", expected, missing, message))

    def memory_summary(self, exc):
        cap = self.limits.get("memory_bytes")
        m = re.search(r"tried to allocate (\d+) bytes", str(exc))
        what = ("the code tried to allocate %s" % nbytes(int(m.group(1)))) if m else (
            "%s: %s" % (type(exc).__name__, first_line(exc_text(exc, 200))))
        return "✗ out of memory: %s%s" % (what, " (cap %s)" % nbytes(cap) if cap else "")


_NO_DEVICE = ("Torch not compiled with CUDA enabled", "Found no NVIDIA driver", "No CUDA GPUs are available",
              "CUDA driver initialization failed", "no kernel image is available", "Cannot access accelerator device",
              "Triton requires a GPU", "0 active drivers")


_NO_PROCESS_GROUP = re.compile(r"process group has not been initiali[sz]ed|(?:process|parallel|model parallel|data "
                               r"parallel) group is not initiali[sz]ed|init_process_group")


def environment_need(exc):
    """What the code needs that this run does not have (a CUDA device, an initialised
    torch.distributed process group), from its exception; else None."""
    text = str(exc)
    if any(phrase in text for phrase in _NO_DEVICE):
        return "a CUDA device"
    if _NO_PROCESS_GROUP.search(text):
        return "torch.distributed initialised (a process group)"
    return None


def needs_a_device(exc):
    """Did the code fail for want of something no input can give (a GPU, a process group)?"""
    return environment_need(exc) is not None


def internal_error_text(exc):
    """The traceback of a failure in gradlint's own code, for the report."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
