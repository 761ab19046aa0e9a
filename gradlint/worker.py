#!/usr/bin/env python3
"""gradlint's gradcheck worker: a fork server ("zygote") that proves gradients.

This file is ONE standalone module: it uses the standard library and torch only,
keeps to Python 3.8 syntax, and never imports gradlint. It runs in the *user's*
interpreter, started by the supervisor (``gradlint.runner``) as::

    python -u /abs/path/to/gradlint/worker.py

What it does:

1. Moves its JSON protocol off fd 0/1 (onto private duplicates), then points fd 0
   at /dev/null and fd 1 at fd 2, so user code that prints or reads stdin cannot
   corrupt the protocol.
2. Imports torch once, with ``torch.set_num_threads(1)`` before any op, and warms
   up gradcheck, gradgradcheck and forward AD without creating thread pools (a
   child forked after a parent used the OpenMP pool hangs; one forked after this
   warm-up does not). Then it announces ``{"event": "ready", ...}``.
3. Serves newline-delimited JSON requests (``run``, ``cancel``, ``ping``,
   ``shutdown``). Each ``run`` executes in a freshly forked child, so each run sees
   freshly imported user code and a crash kills only the child. The zygote
   multiplexes the protocol, each child's event pipe and each child's captured
   stdout+stderr pipe, and enforces the per-run timeout and output cap.

The request and result formats are documented in docs/run-result-schema.md.
"""

import json
import os
import selectors
import signal
import sys
import time

# ----------------------------------------------------------------------------
# constants (kept in sync with gradlint/runner/protocol.py by a test)

PROTOCOL_VERSION = 1
SCHEMA_ID = "gradlint.run-result"
SCHEMA_VERSION = 1

STATUSES = (
    "pass", "fail", "error", "no_inputs", "crash", "timeout", "memory",
    "cancelled", "output_limit",
)
VERDICTS = (
    "ok", "wrong_gradient", "non_differentiable_point", "input_mutated",
    "random_op", "nondeterministic_backward", "not_twice_differentiable",
    "low_precision_input", "undefined_grad", "batched_grad", "gradcheck_failed",
    "exception", "bad_inputs", "bad_request", "target_not_found",
    "worker_unavailable",
)

DEFAULT_LIMITS = {
    "timeout_s": 60.0,
    "memory_bytes": 4 * 2 ** 30,
    "output_bytes": 8 * 2 ** 20,
}
STDERR_TAIL_BYTES = 64 * 1024

DEFAULT_OPTIONS = {
    "eps": 1e-6,
    "atol": 1e-5,
    "rtol": 1e-3,
    "nondet_tol": 0.0,
    "check_undefined_grad": True,
    "check_grad_dtypes": False,
    "check_batched_grad": False,
    "fast_mode": "auto",
    "gradgradcheck": "auto",
    "check_forward_ad": "auto",
    "check_input_mutation": True,
    "check_random": True,
    "check_nondeterminism": True,
    "check_low_precision": True,
    "promote": True,
    "seed": 0,
    "worst_k": 5,
    "slow_confirm_max_elements": 4096,
    "max_recompute_evals": 20000,
    "num_threads": None,
}
# gradcheck/gradgradcheck keywords a call site may carry that map onto options
_CALL_SITE_OPTIONS = (
    "eps", "atol", "rtol", "nondet_tol", "check_undefined_grad",
    "check_grad_dtypes", "check_batched_grad", "fast_mode", "check_forward_ad",
)

WORKER_FILE = os.path.realpath(os.path.abspath(__file__))

torch = None  # imported by _import_torch() (in the zygote, before any fork)
_REAL = {}  # the real gradcheck / gradgradcheck / GradcheckError

# ----------------------------------------------------------------------------
# small helpers shared by the zygote and the child


def _dumps(obj):
    return json.dumps(_json_safe(obj), ensure_ascii=True, allow_nan=False, default=repr)


def _json_safe(obj):
    """Non-finite floats become the strings "nan", "inf", "-inf"."""
    if isinstance(obj, float):
        if obj != obj:
            return "nan"
        if obj in (float("inf"), float("-inf")):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


def _signal_name(num):
    try:
        name = signal.Signals(num).name
    except ValueError:
        name = "signal %d" % num
    try:
        desc = signal.strsignal(num)
    except (ValueError, AttributeError):
        desc = None
    return name, desc


_REALPATHS = {}


def _realpath(path):
    r = _REALPATHS.get(path)
    if r is None:
        r = os.path.realpath(path)
        _REALPATHS[path] = r
    return r


def _is_user_file(path, roots):
    if not path or path.startswith("<"):
        return False
    rp = _realpath(path)
    if rp == WORKER_FILE:
        return False
    parts = rp.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    for root in roots:
        if rp == root or rp.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def _user_roots(req):
    roots = []
    mod = (req.get("module") or {}).get("path")
    if mod:
        roots.append(_realpath(os.path.dirname(os.path.abspath(mod))))
    for p in (req.get("user_roots") or []) + list(req.get("sys_path") or []):
        if isinstance(p, str) and p:
            rp = _realpath(os.path.abspath(p))
            if rp not in roots:
                roots.append(rp)
    return roots


def _source_line(path, line):
    import linecache

    try:
        return linecache.getline(path, line).strip() or None
    except Exception:
        return None


def _parse_faulthandler(text, roots):
    """Frames of the crashing thread from a faulthandler dump, most recent first."""
    import re

    start = text.rfind("Fatal Python error")
    if start < 0:
        return None, []
    block = text[start:]
    headline = block.splitlines()[0].strip()
    frames = []
    in_thread = False
    pat = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')
    for line in block.splitlines()[1:]:
        if line.startswith("Current thread") or (line.startswith("Thread 0x") and not frames):
            in_thread = line.startswith("Current thread")
            continue
        if not in_thread:
            continue
        m = pat.match(line)
        if m:
            frames.append({"file": m.group(1), "line": int(m.group(2)), "function": m.group(3).strip()})
        elif frames:
            break
    user = []
    for f in frames:
        if _is_user_file(f["file"], roots):
            f = dict(f)
            f["code"] = _source_line(f["file"], f["line"])
            user.append(f)
    return headline, user


def _base_result(req):
    req = req or {}
    target = dict(req.get("target") or {})
    mod = req.get("module") or {}
    if mod.get("path"):
        target.setdefault("file", mod.get("path"))
    return {
        "schema": SCHEMA_ID,
        "version": SCHEMA_VERSION,
        "id": req.get("id"),
        "status": None,
        "verdict": None,
        "summary": "",
        "message": None,
        "target": target,
        "location": None,
        "inputs": [],
        "outputs": [],
        "options": {},
        "checks": [],
        "exception": None,
        "crash": None,
        "notes": [],
        "warnings": [],
        "stderr_tail": "",
        "output_bytes": 0,
        "timings": {},
        "environment": {
            "python": "%d.%d.%d" % sys.version_info[:3],
            "executable": sys.executable,
            "torch": getattr(torch, "__version__", None),
            "pid": os.getpid(),
        },
    }


# ----------------------------------------------------------------------------
# torch import and warm-up (zygote)


def _import_torch():
    global torch
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch as _torch
    torch = _torch
    _REAL["gradcheck"] = torch.autograd.gradcheck
    _REAL["gradgradcheck"] = torch.autograd.gradgradcheck
    gc_mod = sys.modules["torch.autograd.gradcheck"]
    _REAL["module"] = gc_mod
    _REAL["GradcheckError"] = gc_mod.GradcheckError
    return torch


def _warm_up():
    """Import and initialise what gradcheck uses lazily, on one thread only."""
    import warnings

    # the modules a run needs, so a forked child does not import them again
    import ctypes  # noqa: F401
    import faulthandler  # noqa: F401
    import importlib.util  # noqa: F401
    import inspect  # noqa: F401
    import itertools  # noqa: F401
    import linecache  # noqa: F401
    import math  # noqa: F401
    import re  # noqa: F401
    import traceback  # noqa: F401
    import unittest  # noqa: F401

    for name in ("resource", "torch._subclasses.schema_check_mode"):  # (the latter: lazily by autograd)
        try:
            __import__(name)
        except ImportError:
            pass
    import torch.autograd.forward_ad as fwAD

    class _Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    gc, ggc = _REAL["gradcheck"], _REAL["gradgradcheck"]
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(3, generator=gen, dtype=torch.float64) + 0.5).requires_grad_()
    z = torch.tensor([0.5 + 0.7j, -1.3 + 0.4j], dtype=torch.complex128, requires_grad=True)

    def dual():
        with fwAD.dual_level():
            d = fwAD.make_dual(x.detach(), torch.ones_like(x))
            fwAD.unpack_dual(d * d)

    def grad():
        out = _Square.apply(x)
        torch.autograd.grad(out, (x,), torch.ones_like(out), retain_graph=True, allow_unused=True)

    steps = [
        lambda: gc(_Square.apply, (x,)),
        lambda: gc(_Square.apply, (x,), fast_mode=True),
        lambda: ggc(_Square.apply, (x,)),
        lambda: ggc(_Square.apply, (x,), fast_mode=True),
        lambda: gc(lambda t: (t * t).sum(), (x,), check_forward_ad=True, check_backward_ad=False),
        lambda: gc(lambda t: t * t, (z,)),
        lambda: gc(lambda t: t * t, (z,), fast_mode=True),
        grad,
        dual,
        lambda: torch.view_as_real(z.detach()).reshape(-1),
        lambda: torch.nn.functional.dropout(x, 0.5, training=True),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in steps:
            try:
                step()
            except Exception as e:  # an optimisation only: never fatal
                sys.stderr.write("gradlint worker: a warm-up step failed: %s: %s\n" % (type(e).__name__, e))
    torch.manual_seed(0)


def _gradcheck_refs():
    """(module, attribute) pairs holding the real gradcheck/gradgradcheck.

    Computed once in the zygote (after the warm-up): sweeping every module in each child
    would touch, and so copy, most of the parent's memory pages. Modules imported later
    (by user code) bind the already-patched functions.
    """
    refs = _REAL.get("refs")
    if refs is None:
        real = (_REAL["gradcheck"], _REAL["gradgradcheck"])
        refs = []
        for name, mod in list(sys.modules.items()):
            d = getattr(mod, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for attr, val in list(d.items()):
                if val is real[0] or val is real[1]:
                    refs.append((name, attr))
        _REAL["refs"] = refs
    return refs


# ----------------------------------------------------------------------------
# outcome plumbing (child)


class Outcome(Exception):
    """Ends a run early with the given status/verdict."""

    def __init__(self, status, verdict, summary, message=None, **extra):
        Exception.__init__(self, summary)
        self.status = status
        self.verdict = verdict
        self.summary = summary
        self.message = message
        self.extra = extra


class _Captured(BaseException):
    """Raised by the gradcheck interceptor to abort the code around a captured call."""


def _is_memory_error(exc):
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


def _exc_text(exc, limit=2000):
    msg = str(exc)
    if len(msg) > limit:
        msg = msg[:limit] + "…"
    return msg


def _exc_type(exc):
    t = type(exc)
    mod = t.__module__
    if mod in ("builtins", "__main__") or not mod:
        return t.__qualname__
    return mod + "." + t.__qualname__


def _first_line(text):
    text = (text or "").strip()
    return text.splitlines()[0] if text else ""


def _fmt(v):
    """Short number formatting for summaries."""
    if isinstance(v, str):
        return v
    if v is None:
        return "?"
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return "%.4g" % v


def _idx(index):
    return "[" + ", ".join(str(i) for i in index) + "]"


# ----------------------------------------------------------------------------
# tensor helpers (child)


def _is_tensor(x):
    return isinstance(x, torch.Tensor)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _unravel(k, shape):
    idx = []
    for s in reversed(tuple(shape)):
        idx.append(k % s)
        k //= s
    return tuple(reversed(idx))


def _realize(t):
    """A float64 vector of a tensor's real scalars (complex: re, im interleaved)."""
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj().contiguous())
    return t.reshape(-1).to(torch.float64)


def _nparts(t):
    return 2 if t.is_complex() else 1


def _real_numel(t):
    return t.numel() * _nparts(t)


_PROMOTE = None


def _promotion_map():
    global _PROMOTE
    if _PROMOTE is None:
        _PROMOTE = {
            torch.float16: torch.float64,
            torch.bfloat16: torch.float64,
            torch.float32: torch.float64,
            torch.complex64: torch.complex128,
        }
        c32 = getattr(torch, "complex32", None)
        if c32 is not None:
            _PROMOTE[c32] = torch.complex128
    return _PROMOTE


def _preview(t, n=6):
    try:
        flat = t.detach().reshape(-1)[:n].cpu()
        if flat.is_complex():
            vals = ["%.4g%+.4gj" % (v.real, v.imag) for v in flat.tolist()]
        elif flat.dtype == torch.bool:
            vals = [str(v) for v in flat.tolist()]
        elif flat.is_floating_point():
            vals = ["%.4g" % v for v in flat.tolist()]
        else:
            vals = [str(v) for v in flat.tolist()]
        more = ", …" if t.numel() > n else ""
        return "[" + ", ".join(vals) + more + "]"
    except Exception:
        return None


def _max_abs_diff(a, b):
    """Max |a-b| over two tuples of outputs; inf on a structural difference, 0 if equal (NaN-aware)."""
    a, b = _as_tuple(a), _as_tuple(b)
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b):
        if _is_tensor(x) != _is_tensor(y):
            return float("inf")
        if not _is_tensor(x):
            if x != y:
                return float("inf")
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return float("inf")
        if x.numel() == 0:
            continue
        xd, yd = x.detach(), y.detach()
        if xd.is_floating_point() or xd.is_complex():
            both_nan = xd.isnan() & yd.isnan()
            d = (xd - yd).abs().to(torch.float64)
            d = torch.where(both_nan, torch.zeros_like(d), d)
            d = torch.where(d.isnan(), torch.full_like(d, float("inf")), d)
            worst = max(worst, float(d.max()))
        elif not torch.equal(xd, yd):
            return float("inf")
    return worst


def _away_from_zero(shape, gen, dtype=None):
    """Values with |v| in [0.3, 0.7] or [1.3, 1.7], random sign: away from 0, ±1 and ties."""
    dtype = dtype or torch.float64
    real = torch.float64
    u = torch.rand(shape, generator=gen, dtype=real)
    band = (torch.rand(shape, generator=gen, dtype=real) < 0.5).to(real)
    sign = torch.where(torch.rand(shape, generator=gen, dtype=real) < 0.5, -1.0, 1.0).to(real)
    v = sign * (0.3 + 0.4 * u + band)
    if dtype.is_complex:
        w = _away_from_zero(shape, gen)
        return torch.complex(v, w).to(dtype)
    return v.to(dtype)


# ----------------------------------------------------------------------------
# Jacobians: everything is reduced to real Jacobians J[out_real, in_real]
# (a complex scalar contributes two real coordinates, re then im).


def _numerical_columns(fn, inputs, j, eps, out_positions):
    """Central-difference Jacobian columns for input j: {o: tensor[n_out_real, n_in_real]}."""
    x = inputs[j]
    xd = x.detach()
    parts = _nparts(x)
    cols = dict((o, []) for o in out_positions)
    # like torch: no torch.no_grad() here (the gradgradcheck function needs autograd)
    for k in range(x.numel()):
        idx = _unravel(k, x.shape)
        orig = xd[idx].clone()
        for p in range(parts):
            d = eps if p == 0 else eps * 1j
            xd[idx] = orig + d
            plus = _as_tuple(fn(*inputs))
            xd[idx] = orig - d
            minus = _as_tuple(fn(*inputs))
            xd[idx] = orig
            for o in out_positions:
                cols[o].append((_realize(plus[o]) - _realize(minus[o])) / (2 * eps))
    out = {}
    for o in out_positions:
        if cols[o]:
            out[o] = torch.stack(cols[o], dim=1)
        else:
            out[o] = None
    return out


_DISCONNECTED = ("differentiate twice", "does not require grad", "appears to not have been used")


def _analytical_rows(fn, inputs, in_positions, o):
    """Reverse-mode Jacobian rows for output o: ({j: tensor[n_out_real, n_in_real]}, notes)."""
    notes = set()
    outs = _as_tuple(fn(*inputs))
    out = outs[o]
    targets = [inputs[j] for j in in_positions]
    parts = _nparts(out)
    n = out.numel()
    rows = dict((j, []) for j in in_positions)
    for k in range(n):
        for p in range(parts):
            grads = None
            if out.requires_grad:
                g = torch.zeros(n, dtype=out.dtype, device=out.device)
                g[k] = 1 if p == 0 else 1j
                g = g.reshape(out.shape)
                try:
                    grads = torch.autograd.grad(out, targets, g, retain_graph=True, allow_unused=True)
                except RuntimeError as e:
                    msg = str(e)
                    if "differentiate twice" in msg:
                        notes.add("once_differentiable")
                    elif not any(s in msg for s in _DISCONNECTED):
                        raise
                    notes.add("disconnected")
                    grads = None
            else:
                notes.add("output_does_not_require_grad")
            for pos, j in enumerate(in_positions):
                t = inputs[j]
                gr = grads[pos] if grads is not None else None
                rows[j].append(
                    torch.zeros(_real_numel(t), dtype=torch.float64) if gr is None else _realize(gr)
                )
    result = {}
    for j in in_positions:
        result[j] = torch.stack(rows[j], dim=0) if rows[j] else None
    return result, notes


def _forward_columns(fn, inputs, j, out_positions):
    """Forward-mode (jvp) Jacobian columns for input j."""
    import torch.autograd.forward_ad as fwAD

    x = inputs[j]
    parts = _nparts(x)
    cols = dict((o, []) for o in out_positions)
    base = [t.detach() if _is_tensor(t) else t for t in inputs]
    for k in range(x.numel()):
        for p in range(parts):
            tangent = torch.zeros(x.numel(), dtype=x.dtype, device=x.device)
            tangent[k] = 1 if p == 0 else 1j
            tangent = tangent.reshape(x.shape)
            with fwAD.dual_level():
                args = list(base)
                args[j] = fwAD.make_dual(base[j], tangent)
                outs = _as_tuple(fn(*args))
                for o in out_positions:
                    tan = fwAD.unpack_dual(outs[o]).tangent
                    primal = outs[o]
                    if tan is None:
                        cols[o].append(torch.zeros(_real_numel(primal), dtype=torch.float64))
                    else:
                        cols[o].append(_realize(tan))
    return dict((o, torch.stack(c, dim=1) if c else None) for o, c in cols.items())


class JacobianAnalysis:
    """Recompute slow-mode numerical and analytical Jacobians and find the worst entries."""

    def __init__(self, fn, inputs, in_positions, out_positions, in_names, out_names, opts,
                 mode="reverse"):
        self.fn = fn
        self.inputs = inputs
        self.in_positions = list(in_positions)
        self.out_positions = list(out_positions)
        self.in_names = in_names
        self.out_names = out_names
        self.opts = opts
        self.mode = mode
        self.notes = set()

    def cost(self, ins, outs):
        n = 0
        for j in ins:
            n += 2 * _real_numel(self.inputs[j])
        if self.mode == "reverse":
            outs_t = _as_tuple(self.fn(*self.inputs))
            for o in outs:
                n += _real_numel(outs_t[o])
        else:
            for j in ins:
                n += _real_numel(self.inputs[j])
        return n

    def pairs(self, ins, outs):
        """Returns {(o, j): (analytical, numerical)} real Jacobian blocks."""
        eps = self.opts["eps"]
        numerical = {}
        for j in ins:
            cols = _numerical_columns(self.fn, self.inputs, j, eps, outs)
            for o in outs:
                numerical[(o, j)] = cols[o]
        analytical = {}
        if self.mode == "reverse":
            for o in outs:
                rows, notes = _analytical_rows(self.fn, self.inputs, ins, o)
                self.notes |= notes
                for j in ins:
                    analytical[(o, j)] = rows[j]
        else:
            for j in ins:
                cols = _forward_columns(self.fn, self.inputs, j, outs)
                for o in outs:
                    analytical[(o, j)] = cols[o]
        return dict((key, (analytical[key], numerical[key])) for key in numerical)

    def analyse(self, hint=None):
        """hint: (o, j) positions named by torch, or None. Returns (primary, failing_pairs)."""
        cap = self.opts["max_recompute_evals"]
        ins, outs = self.in_positions, self.out_positions
        if self.cost(ins, outs) > cap:
            if hint is None:
                return None, []
            ins, outs = [hint[1]], [hint[0]]
            if self.cost(ins, outs) > cap:
                return None, []
        blocks = self.pairs(ins, outs)
        atol, rtol = self.opts["atol"], self.opts["rtol"]
        failing = []
        for o in outs:
            for j in ins:
                a, n = blocks[(o, j)]
                if a is None or n is None or a.numel() == 0:
                    continue
                err = (a - n).abs()
                tol = atol + rtol * n.abs()
                bad = ~(err <= tol)
                nbad = int(bad.sum())
                if nbad:
                    failing.append({
                        "o": o, "j": j, "a": a, "n": n, "err": err, "bad": bad,
                        "failing_elements": nbad, "total_elements": int(a.numel()),
                        "analytical_all_zero": bool((a == 0).all()),
                    })
        if not failing:
            return None, []
        primary = None
        if hint is not None:
            for f in failing:
                if (f["o"], f["j"]) == tuple(hint):
                    primary = f
        if primary is None:
            primary = failing[0]
        return primary, failing

    def describe(self, f, kink_check=True):
        """The worst-k entries of a failing pair, with kink detection."""
        o, j = f["o"], f["j"]
        x = self.inputs[j]
        out0 = _as_tuple(self.fn(*self.inputs))[o]
        err = torch.where(f["err"].isnan(), torch.full_like(f["err"], float("inf")), f["err"])
        err = torch.where(f["bad"], err, torch.full_like(err, -1.0))
        k = max(1, int(self.opts["worst_k"]))
        flat = err.reshape(-1)
        order = torch.argsort(flat, descending=True)[: min(k, f["failing_elements"])]
        n_in = f["a"].shape[1]
        worst = []
        for pos in order.tolist():
            r, c = divmod(pos, n_in)
            out_k, out_part = divmod(r, _nparts(out0))
            in_k, in_part = divmod(c, _nparts(x))
            in_index = _unravel(in_k, x.shape)
            a = float(f["a"][r, c])
            n = float(f["n"][r, c])
            abs_err = abs(a - n)
            entry = {
                "input": self.in_names[j],
                "input_position": j,
                "input_index": list(in_index),
                "output": o,
                "output_name": self.out_names[o],
                "output_index": list(_unravel(out_k, out0.shape)),
                "numerical": n,
                "analytical": a,
                "abs_error": abs_err,
                "rel_error": (abs_err / abs(n)) if n not in (0.0,) and n == n else None,
                "input_value": _scalar(x.detach()[in_index]),
            }
            if x.is_complex():
                entry["input_part"] = ("real", "imag")[in_part]
            if out0.is_complex():
                entry["output_part"] = ("real", "imag")[out_part]
            if kink_check:
                try:
                    entry.update(self._one_sided(j, in_index, in_part, o, r))
                except Exception as e:  # a kink probe must never hide the finding
                    entry["kink"] = None
                    entry["kink_error"] = _exc_text(e, 200)
            worst.append(entry)
        return worst

    def _one_sided(self, j, in_index, in_part, o, r):
        x = self.inputs[j]
        xd = x.detach()
        eps = self.opts["eps"]
        orig = xd[in_index].clone()

        def at(delta):
            xd[in_index] = orig + delta
            try:
                return float(_realize(_as_tuple(self.fn(*self.inputs))[o])[r])
            finally:
                xd[in_index] = orig

        f0 = at(0)
        jumps = []
        slopes = None
        for h in (eps, 10 * eps):
            d = h if in_part == 0 else h * 1j
            fwd = (at(d) - f0) / h
            bwd = (f0 - at(-d)) / h
            if slopes is None:
                slopes = (bwd, fwd)
            jumps.append(abs(fwd - bwd) if (fwd == fwd and bwd == bwd) else float("inf"))
        left, right = slopes
        atol, rtol = self.opts["atol"], self.opts["rtol"]
        finite = all(v == v and v not in (float("inf"), float("-inf")) for v in (left, right))
        tol = 10 * (atol + rtol * max(abs(left), abs(right))) if finite else 0.0
        kink = (not finite) or (jumps[0] > tol and jumps[0] > 0.5 * jumps[1])
        return {"kink": bool(kink), "left_slope": left, "right_slope": right}


def _scalar(t):
    try:
        v = t.item()
    except Exception:
        return None
    if isinstance(v, complex):
        return [v.real, v.imag]
    return v


_PAIR_RE = None


def _parse_gradcheck_message(msg):
    """(output_idx, input_idx, part, forward_mode) from a GradcheckError, or None."""
    import re

    global _PAIR_RE
    if _PAIR_RE is None:
        _PAIR_RE = re.compile(
            r"Jacobian (computed with forward mode )?mismatch for output (\d+) "
            r"with respect to input (\d+)"
        )
    m = _PAIR_RE.search(msg)
    if not m:
        return None
    part = None
    if "imaginary part of complex" in msg:
        part = "imaginary"
    elif "real part of complex" in msg:
        part = "real"
    return int(m.group(2)), int(m.group(3)), part, bool(m.group(1))


# ----------------------------------------------------------------------------
# the run itself (child)


class Job:
    def __init__(self, req, emit):
        self.req = req
        self.emit = emit
        self.result = _base_result(req)
        self.roots = _user_roots(req)
        self.path = None
        self.target = dict(req.get("target") or {})
        self.kind = self.target.get("kind")
        self.checks = []
        self.timings = self.result["timings"]
        self.captured = None
        self.fclass = None  # the autograd.Function subclass, when known
        self.call_line = None
        self.call_kwargs = {}
        self.warnings = []
        self.opts = dict(DEFAULT_OPTIONS)

    # -- progress and bookkeeping -------------------------------------------

    def progress(self, message, percentage=None):
        ev = {"event": "progress", "message": message}
        if percentage is not None:
            ev["percentage"] = int(max(0, min(100, percentage)))
        self.emit(ev)

    def exception_info(self, exc, phase):
        import traceback

        frames = []
        for fs in traceback.extract_tb(exc.__traceback__):
            if _is_user_file(fs.filename, self.roots):
                frames.append({
                    "file": fs.filename, "line": fs.lineno, "function": fs.name,
                    "code": (fs.line or "").strip() or None,
                })
        if frames and phase in ("forward", "backward", "check", "gradcheck", "inputs"):
            fn = frames[-1]["function"]
            if fn in ("forward", "backward", "setup_context", "jvp", "vjp"):
                phase = fn if fn != "vjp" else "backward"
        elif not frames and phase == "check" and "Backward" in str(exc):
            phase = "backward"  # raised by the autograd engine about a Function's backward
        return {
            "type": _exc_type(exc),
            "message": _exc_text(exc),
            "phase": phase,
            "traceback": frames,
        }

    def location_for(self, why, info=None):
        if info and info.get("traceback"):
            f = info["traceback"][-1]
            return {"file": f["file"], "line": f["line"], "function": f["function"], "reason": "raised here"}
        if why in ("backward", "forward", "jvp", "setup_context") and self.fclass is not None:
            loc = _method_def(self.fclass, why if why != "setup_context" else "setup_context")
            if loc is None and why == "backward":
                loc = _method_def(self.fclass, "vjp")
            if loc is not None:
                loc["reason"] = why
                return loc
        if self.call_line is not None and self.path:
            return {"file": self.path, "line": self.call_line, "function": None, "reason": "call"}
        if self.fclass is not None:
            loc = _method_def(self.fclass, "forward")
            if loc:
                loc["reason"] = "forward"
                return loc
        tl = self.result["target"].get("line")
        if tl and self.path:
            return {"file": self.path, "line": tl, "function": None, "reason": "target"}
        return None

    def user_exception(self, exc, phase, what=None):
        """Turn an exception from user code into an Outcome (memory, input_mutated or exception)."""
        if _is_memory_error(exc):
            info = self.exception_info(exc, phase)
            raise Outcome("memory", None, self.memory_summary(exc), _exc_text(exc), exception=info,
                          location=self.location_for(info["phase"], info))
        info = self.exception_info(exc, phase)
        where = info["phase"]
        if where in ("forward", "backward", "setup_context", "jvp"):
            what = where
        label = "%s in %s" % (info["type"].split(".")[-1], what or where)
        msg = _first_line(info["message"])
        return Outcome(
            "error", "exception", "✗ %s: %s" % (label, msg), info["message"],
            exception=info, location=self.location_for(where, info),
        )

    def memory_summary(self, exc):
        import re

        cap = (self.req.get("limits") or {}).get("memory_bytes")
        m = re.search(r"tried to allocate (\d+) bytes", str(exc))
        what = ("the code tried to allocate %s" % _bytes(int(m.group(1)))) if m else (
            "%s: %s" % (type(exc).__name__, _first_line(_exc_text(exc, 200))))
        return "✗ out of memory: %s%s" % (what, " (cap %s)" % _bytes(cap) if cap else "")

    # -- the pipeline -----------------------------------------------------------

    def run(self):
        t0 = time.perf_counter()
        try:
            self._run()
        except Outcome as oc:
            self._apply_outcome(oc)
        finally:
            self.timings["total_s"] = time.perf_counter() - t0
        self.result["checks"] = self.checks
        self.result["warnings"] = self.warnings[:20]
        if self.result["status"] is None:
            self._conclude()
        for rec in self.checks:
            rec.pop("_outcome", None)
        return self.result

    def _apply_outcome(self, oc):
        r = self.result
        r["status"] = oc.status
        r["verdict"] = oc.verdict
        r["summary"] = oc.summary
        r["message"] = oc.message
        for k, v in oc.extra.items():
            r[k] = v

    def _run(self):
        req = self.req
        self._read_options()
        module = req.get("module") or {}
        path = module.get("path")
        if not path or not isinstance(path, str):
            raise Outcome("error", "bad_request", "✗ bad request: module.path is missing")
        self.path = os.path.abspath(path)
        if not os.path.isfile(self.path):
            raise Outcome("error", "bad_request", "✗ no such file: %s" % self.path)
        if self.kind not in ("function_class", "callable", "call_site"):
            raise Outcome("error", "bad_request", "✗ bad request: unknown target kind %r" % (self.kind,))
        cwd = req.get("cwd")
        if cwd:
            os.chdir(cwd)
        sys.argv = [self.path]
        self._set_sys_path()

        torch.manual_seed(self.opts["seed"])
        if self.kind == "call_site":
            self._install_interceptor()
        t = time.perf_counter()
        self.progress("importing %s" % os.path.basename(self.path), 2)
        try:
            mod = self._import_module()
        finally:
            self.timings["import_s"] = time.perf_counter() - t
        t = time.perf_counter()
        fn, names, inputs, grad_outputs = self._target_and_inputs(mod)
        self.timings["inputs_s"] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            self._checks(fn, names, inputs, grad_outputs)
        finally:
            self.timings["checks_s"] = time.perf_counter() - t

    def _read_options(self):
        opts = self.req.get("options") or {}
        if not isinstance(opts, dict):
            raise Outcome("error", "bad_request", "✗ bad request: options must be an object")
        self.explicit = dict(opts)
        unknown = sorted(k for k in opts if k not in DEFAULT_OPTIONS)
        if unknown:
            self.result["notes"].append("unknown options ignored: " + ", ".join(unknown))
        for k, v in opts.items():
            if k in DEFAULT_OPTIONS:
                self.opts[k] = v
        o = self.opts
        for k in ("eps", "atol", "rtol", "nondet_tol"):
            if isinstance(o[k], bool) or not isinstance(o[k], (int, float)) or o[k] < 0:
                raise Outcome("error", "bad_request", "✗ bad request: option %s must be a non-negative number" % k)
        for k in ("seed", "worst_k", "slow_confirm_max_elements", "max_recompute_evals"):
            if isinstance(o[k], bool) or not isinstance(o[k], int):
                raise Outcome("error", "bad_request", "✗ bad request: option %s must be an integer" % k)
        for k in ("fast_mode", "gradgradcheck", "check_forward_ad"):
            if o[k] not in ("auto", True, False):
                raise Outcome("error", "bad_request", "✗ bad request: option %s must be \"auto\", true or false" % k)
        n = self.opts.get("num_threads")
        if n:
            torch.set_num_threads(int(n))

    def _set_sys_path(self):
        entries = [os.path.abspath(p) for p in (self.req.get("sys_path") or []) if isinstance(p, str)]
        for p in reversed(entries):
            while p in sys.path:
                sys.path.remove(p)
            sys.path.insert(0, p)

    # -- import ---------------------------------------------------------------------

    def _module_name(self):
        given = (self.req.get("module") or {}).get("name")
        d = os.path.dirname(self.path)
        stem = os.path.splitext(os.path.basename(self.path))[0]
        parts = [] if stem == "__init__" else [stem]
        while os.path.isfile(os.path.join(d, "__init__.py")):
            parts.insert(0, os.path.basename(d))
            d = os.path.dirname(d)
        if given:
            return given, d
        if not parts:
            parts = [os.path.basename(os.path.dirname(self.path))]
        return ".".join(parts), d

    def _import_module(self):
        import importlib
        import importlib.util

        name, root = self._module_name()
        if root not in sys.path:
            sys.path.insert(0, root)
        if "." not in name and name in sys.modules:
            name = "_gradlint_target_" + name
        self.result["target"]["module"] = name
        try:
            if "." in name:
                importlib.import_module(name.rpartition(".")[0])
            spec = importlib.util.spec_from_file_location(
                name, self.path,
                submodule_search_locations=[os.path.dirname(self.path)]
                if self.path.endswith("__init__.py") else None,
            )
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except _Captured:
                pass
        except Outcome:
            raise
        except _Captured:
            raise
        except Exception as e:
            oc = self.user_exception(e, "import", "import of %s" % name)
            oc.summary = "✗ %s while importing %s: %s" % (
                type(e).__name__, name, _first_line(_exc_text(e)))
            raise oc
        return module

    # -- call-site capture --------------------------------------------------------

    def _install_interceptor(self):
        line = self.target.get("line")
        end = self.target.get("end_line") or line
        if not isinstance(line, int):
            raise Outcome("error", "bad_request", "✗ bad request: call_site target needs an integer line")
        self.call_line = line
        target_file = _realpath(self.path)
        job = self
        real_gc, real_ggc = _REAL["gradcheck"], _REAL["gradgradcheck"]

        def make(variant, real):
            def interceptor(*args, **kwargs):
                if job.captured is None:
                    f = sys._getframe(1)
                    depth = 0
                    while f is not None and depth < 8:
                        if (_realpath(f.f_code.co_filename) == target_file
                                and line <= f.f_lineno <= end):
                            job.captured = {
                                "variant": variant, "args": args, "kwargs": kwargs,
                                "line": f.f_lineno,
                            }
                            job._uninstall_interceptor()
                            raise _Captured()
                        f = f.f_back
                        depth += 1
                    # another call: it runs for real, but its failure must not stop us from
                    # reaching the call we were asked about
                    try:
                        return real(*args, **kwargs)
                    except _REAL["GradcheckError"] as e:
                        caller = sys._getframe(1)
                        job.result["notes"].append(
                            "another %s call (%s:%d) failed on the way to this one and was let through: %s"
                            % (variant, os.path.basename(caller.f_code.co_filename), caller.f_lineno,
                               _first_line(str(e))))
                        return False
                return real(*args, **kwargs)

            interceptor.__name__ = variant
            interceptor.__qualname__ = variant
            interceptor.__wrapped__ = real
            return interceptor

        fakes = {"gradcheck": make("gradcheck", real_gc), "gradgradcheck": make("gradgradcheck", real_ggc)}
        patched = []
        for modname, attr in _gradcheck_refs():
            d = getattr(sys.modules.get(modname), "__dict__", None)
            val = d.get(attr) if isinstance(d, dict) else None
            if val is real_gc or val is real_ggc:
                d[attr] = fakes["gradcheck" if val is real_gc else "gradgradcheck"]
                patched.append((d, attr, val))
        self._patched = patched

    def _uninstall_interceptor(self):
        for d, attr, val in getattr(self, "_patched", []):
            d[attr] = val
        self._patched = []

    def _call_enclosing(self, module, enclosing):
        import inspect

        parts = enclosing.split(".")
        try:
            obj = module
            for p in parts[:-1]:
                obj = getattr(obj, p)
            owner = obj
            getattr(owner, parts[-1])
        except AttributeError:
            raise Outcome("error", "target_not_found",
                          "✗ `%s` is not defined in %s" % (enclosing, os.path.basename(self.path)))
        try:
            if owner is module:
                bound = getattr(module, parts[-1])
            elif isinstance(owner, type):
                import unittest

                if issubclass(owner, unittest.TestCase):
                    owner.setUpClass()
                    inst = owner(parts[-1])
                    inst.setUp()
                else:
                    try:
                        sig = inspect.signature(owner)
                        needs = [p.name for p in sig.parameters.values()
                                 if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
                    except (TypeError, ValueError):
                        needs = []
                    if needs:
                        raise Outcome(
                            "no_inputs", None,
                            "cannot create `%s(%s)` to call `%s`: it takes parameters; declare inputs with "
                            "`# gradlint: inputs=...`" % (owner.__name__, ", ".join(needs), enclosing))
                    inst = owner()
                bound = getattr(inst, parts[-1])
            else:
                bound = getattr(owner, parts[-1])
        except (Outcome, _Captured):
            raise
        except Exception as e:
            raise self.user_exception(e, "setup", "setting up %s" % enclosing)
        try:
            sig = inspect.signature(bound)
            needs = [p.name for p in sig.parameters.values()
                     if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        except (TypeError, ValueError):
            needs = []
        if needs:
            raise Outcome(
                "no_inputs", None,
                "cannot call `%s(%s)`: it takes parameters; declare inputs with `# gradlint: inputs=...`"
                % (parts[-1] if len(parts) == 1 else enclosing, ", ".join(needs)))
        try:
            if inspect.iscoroutinefunction(bound):
                import asyncio

                asyncio.run(bound())
            else:
                bound()
        except _Captured:
            return
        except Outcome:
            raise
        except Exception as e:
            raise self.user_exception(e, "enclosing", enclosing)

    # -- target and inputs ------------------------------------------------------

    def _resolve(self, module, qualname):
        obj = module
        try:
            for p in qualname.split("."):
                obj = getattr(obj, p)
        except AttributeError:
            raise Outcome("error", "target_not_found",
                          "✗ `%s` is not defined in %s" % (qualname, os.path.basename(self.path)))
        return obj

    def _target_and_inputs(self, module):
        import inspect

        spec = self.req.get("inputs")
        t = self.result["target"]
        grad_outputs = None
        if self.kind == "call_site":
            enclosing = self.target.get("enclosing")
            if self.captured is None and enclosing:
                self._call_enclosing(module, enclosing)
            self._uninstall_interceptor()
            if self.captured is None:
                where = ("`%s()`" % enclosing) if enclosing else ("importing %s" % os.path.basename(self.path))
                hint = "" if enclosing else (
                    " (is it inside a function, or under `if __name__ == \"__main__\":`? name the enclosing "
                    "function or declare inputs with `# gradlint: inputs=...`)")
                raise Outcome("no_inputs", None,
                              "the gradcheck call at line %s was not reached while running %s%s"
                              % (self.target.get("line"), where, hint))
            cap = self.captured
            real = _REAL[cap["variant"]]
            try:
                bound = inspect.signature(real).bind(*cap["args"], **cap["kwargs"])
            except TypeError as e:
                raise Outcome("error", "exception",
                              "✗ the call raises TypeError: %s" % e, str(e),
                              location=self.location_for("call"))
            a = dict(bound.arguments)
            fn = a.pop("func")
            raw_inputs = a.pop("inputs")
            grad_outputs = a.pop("grad_outputs", None)
            self.call_kwargs = a
            t["variant"] = cap["variant"]
            t["line_reached"] = cap["line"]
            ignored = []
            for k, v in a.items():
                if k == "raise_exception":
                    continue
                if k in _CALL_SITE_OPTIONS and k not in self.explicit:
                    self.opts[k] = v
                elif k not in _CALL_SITE_OPTIONS:
                    ignored.append(k)
            if ignored:
                self.result["notes"].append("call options not re-checked: " + ", ".join(sorted(ignored)))
            fc = getattr(fn, "__self__", None)
            if isinstance(fc, type) and issubclass(fc, torch.autograd.Function):
                self.fclass = fc
                t["function_class"] = fc.__qualname__
            names = _param_names(fn, self.fclass)
            if not spec or spec.get("kind") == "call_site":
                return fn, names, ("call_site", _as_tuple(raw_inputs), None), grad_outputs
        else:
            qualname = self.target.get("qualname")
            if not qualname or not isinstance(qualname, str):
                raise Outcome("error", "bad_request", "✗ bad request: target.qualname is missing")
            obj = self._resolve(module, qualname)
            if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
                self.fclass = obj
                fn = obj.apply
                t["function_class"] = obj.__qualname__
                loc = _method_def(obj, "forward")
                if loc:
                    t["line"] = loc["line"]
            elif self.kind == "function_class":
                raise Outcome("error", "target_not_found",
                              "✗ `%s` is not a torch.autograd.Function subclass" % qualname)
            elif callable(obj):
                fn = obj
                loc = _def_of(obj)
                if loc:
                    t["line"] = loc["line"]
            else:
                raise Outcome("error", "target_not_found", "✗ `%s` is not callable" % qualname)
            names = _param_names(fn, self.fclass)
        spec = spec or {"kind": "synthesize"}
        kind = spec.get("kind")
        if kind == "expression":
            src = spec.get("source")
            if not isinstance(src, str):
                raise Outcome("error", "bad_request", "✗ bad request: inputs.source must be a string")
            ns = dict(vars(module))
            ns.setdefault("torch", torch)
            torch.manual_seed(self.opts["seed"])
            try:
                value = eval(compile(src, "<gradlint inputs>", "eval"), ns)
            except SyntaxError as e:
                raise Outcome("error", "bad_request", "✗ the inputs expression is not valid Python: %s" % e.msg)
            except Exception as e:
                raise self.user_exception(e, "inputs", "the inputs expression")
            return fn, names, ("expression", _as_tuple(value), None), grad_outputs
        if kind == "synthesize":
            inputs, info = self._synthesize(fn, spec)
            return fn, names, ("synthesized", inputs, info), grad_outputs
        if kind == "call_site":
            raise Outcome("error", "bad_request", "✗ bad request: call_site inputs need a call_site target")
        raise Outcome("error", "bad_request", "✗ bad request: unknown inputs kind %r" % (kind,))

    def _synthesize(self, fn, spec):
        params = _value_params(fn, self.fclass)
        if params is None:
            raise Outcome("no_inputs", None,
                          "cannot read the signature of the target; declare inputs with `# gradlint: inputs=...`")
        plan = []  # ("tensor", name) | ("value", name, value)
        for p in params:
            if p.kind == p.VAR_POSITIONAL or p.kind == p.VAR_KEYWORD:
                continue
            ann = p.annotation
            tensor_ann = _is_tensor_annotation(ann)
            if p.kind == p.KEYWORD_ONLY:
                if p.default is p.empty:
                    raise Outcome("no_inputs", None,
                                  "cannot make a value for keyword-only `%s`; declare inputs with "
                                  "`# gradlint: inputs=...`" % p.name)
                continue
            if p.default is p.empty:
                if ann is not p.empty and not tensor_ann:
                    raise Outcome("no_inputs", None,
                                  "cannot make a value for `%s` (%s, no default); declare inputs with "
                                  "`# gradlint: inputs=...`" % (p.name, _ann_name(ann)))
                plan.append(("tensor", p.name))
            elif tensor_ann is True:
                plan.append(("tensor", p.name))
            else:
                plan.append(("value", p.name, p.default))
        seed = int(spec.get("seed", self.opts["seed"]))
        n_t = sum(1 for e in plan if e[0] == "tensor")
        shapes = spec.get("shapes")
        if shapes:
            if len(shapes) != n_t:
                raise Outcome("error", "bad_request",
                              "✗ bad request: %d shapes given for %d tensor parameters" % (len(shapes), n_t))
            strategies = [[tuple(s) for s in shapes]]
        else:
            strategies = [[s] * n_t for s in ((3,), (3, 3), (2, 3, 3), ())]
        tried = []
        first_exc = None
        for strat in strategies:
            gen = torch.Generator().manual_seed(seed)
            args = []
            it = iter(strat)
            for e in plan:
                if e[0] == "tensor":
                    args.append(_away_from_zero(next(it), gen).requires_grad_(True))
                else:
                    args.append(e[2])
            args = tuple(args)
            try:
                torch.manual_seed(self.opts["seed"])
                fn(*args)
            except Exception as e:
                if _is_memory_error(e):
                    raise self.user_exception(e, "forward")
                if first_exc is None:
                    first_exc = e
                tried.append({"shapes": [list(s) for s in strat], "error": "%s: %s" % (
                    type(e).__name__, _first_line(_exc_text(e, 300)))})
                if n_t == 0:
                    break
                continue
            info = {"seed": seed, "shapes": [list(s) for s in strat], "tried": tried,
                    "plan": [e[0] for e in plan]}
            return args, info
        # the same error for every shape is a bug in the code, not a shape problem
        same_everywhere = len(tried) > 1 and len(set(t["error"] for t in tried)) == 1
        if first_exc is not None and (same_everywhere or not isinstance(first_exc, (RuntimeError, ValueError, IndexError))):
            oc = self.user_exception(first_exc, "forward")
            oc.extra["synthesis"] = {"tried": tried}
            raise oc
        raise Outcome(
            "no_inputs", None,
            "forward failed for every synthesized input shape (%s); declare inputs with "
            "`# gradlint: inputs=...`" % ", ".join(str(tuple(s["shapes"][0])) if s["shapes"] else "()" for s in tried),
            "\n".join("%s: %s" % (s["shapes"], s["error"]) for s in tried),
            synthesis={"tried": tried},
        )

    # -- checks --------------------------------------------------------------------

    def _checks(self, fn, names, inputs_spec, grad_outputs):
        source, raw, synth = inputs_spec
        opts = self.opts
        promote = bool(opts["promote"])
        base = []
        infos = []
        promoted_any = False
        promo = _promotion_map()
        for i, v in enumerate(raw):
            name = names[i] if i < len(names) else "input%d" % i
            if _is_tensor(v):
                dt = v.dtype
                new = v.detach()
                promoted_from = None
                if promote and dt in promo:
                    new = new.to(promo[dt])
                    promoted_from = str(dt).replace("torch.", "")
                    promoted_any = promoted_any or v.requires_grad
                new = new.clone().requires_grad_(v.requires_grad) if (new.is_floating_point() or new.is_complex()) else new.clone()
                base.append(new)
                info = {
                    "index": i, "name": name, "kind": "tensor", "shape": list(v.shape),
                    "dtype": str(new.dtype).replace("torch.", ""), "requires_grad": bool(v.requires_grad),
                    "promoted_from": promoted_from, "preview": _preview(v), "source": source,
                    "device": str(v.device),
                }
                if synth is not None:
                    info["seed"] = synth["seed"]
                infos.append(info)
            else:
                base.append(v)
                r = repr(v)
                infos.append({"index": i, "name": name, "kind": "value", "repr": r[:80] + ("…" if len(r) > 80 else ""),
                              "type": type(v).__name__, "source": source})
        self.result["inputs"] = infos
        if synth is not None:
            self.result["synthesis"] = synth
        if source == "expression" and not any(_is_tensor(v) and v.requires_grad for v in base):
            # declared inputs are values to check at; a declaration that leaves requires_grad
            # out means "differentiate with respect to the floating-point tensors"
            for i, v in enumerate(base):
                if _is_tensor(v) and (v.is_floating_point() or v.is_complex()):
                    v.requires_grad_(True)
                    infos[i]["requires_grad"] = True
            self.result["notes"].append(
                "the declared inputs did not require grad: every floating-point tensor was made "
                "to require grad for the check")
        base = tuple(base)
        in_names = [inf["name"] for inf in infos]
        grad_pos = [i for i, v in enumerate(base) if _is_tensor(v) and v.requires_grad]
        if not grad_pos:
            raise Outcome("error", "bad_inputs",
                          "✗ no input requires grad: gradcheck needs at least one floating-point input "
                          "tensor with requires_grad=True")
        go_base = None
        if grad_outputs is not None:
            go_base = []
            for g in _as_tuple(grad_outputs):
                if _is_tensor(g):
                    g2 = g.detach()
                    if promote and g2.dtype in promo:
                        g2 = g2.to(promo[g2.dtype])
                    go_base.append(g2.clone().requires_grad_(g.requires_grad))
                else:
                    go_base.append(g)
            go_base = tuple(go_base)
        self.go_base = go_base

        def fresh():
            return tuple(
                v.detach().clone().requires_grad_(v.requires_grad)
                if _is_tensor(v) and (v.is_floating_point() or v.is_complex()) else
                (v.clone() if _is_tensor(v) else v)
                for v in base
            )

        self.fresh = fresh
        self.fn = fn
        self.in_names = in_names
        self.grad_pos = grad_pos
        self.result["options"] = dict(self.opts)

        variant = self.result["target"].get("variant")
        want_gg = opts["gradgradcheck"]
        once = self.fclass is not None and _is_once_differentiable(self.fclass)
        if want_gg == "auto":
            if self.kind == "call_site":
                run_gg = variant == "gradgradcheck"
                gg_skip_reason = None if run_gg else "not requested by this gradcheck call"
            else:
                run_gg = not once
                gg_skip_reason = "backward is @once_differentiable" if once else None
        else:
            run_gg = bool(want_gg)
            gg_skip_reason = None if run_gg else "disabled by options"
        want_fw = opts["check_forward_ad"]
        has_jvp = self.fclass is not None and _defines(self.fclass, "jvp")
        if want_fw == "auto":
            run_fw = has_jvp
        else:
            run_fw = bool(want_fw)

        plan = ["forward"]
        if opts["check_input_mutation"]:
            plan.append("input_mutation")
        if opts["check_random"]:
            plan.append("random_op")
        if opts["check_nondeterminism"]:
            plan.append("nondeterminism")
        plan.append("gradcheck")
        plan.append("gradgradcheck")
        if run_fw:
            plan.append("forward_ad")
        low_precision = promoted_any and self.kind == "call_site" and opts["check_low_precision"]
        if low_precision:
            plan.append("as_written")
        blocked = None  # why the remaining checks are skipped
        fw_blocked = None  # forward_ad only depends on forward

        for step, name in enumerate(plan):
            pct = 5 + 90.0 * step / len(plan)
            reason = fw_blocked if name == "forward_ad" else blocked
            if reason:
                self._skip(name, reason)
                continue
            if name == "gradgradcheck" and not run_gg:
                rec = self._skip(name, gg_skip_reason)
                if once and run_gg is False and want_gg == "auto":
                    rec["verdict"] = "not_twice_differentiable"
                continue
            self.progress(_CHECK_LABELS.get(name, name), pct)
            rec = self._run_check(name, getattr(self, "_check_" + name))
            if rec["status"] in ("fail", "error"):
                blocked = "skipped: %s %s" % (name.replace("_", " "), "failed" if rec["status"] == "fail" else "raised")
                if name in ("forward", "input_mutation", "random_op", "nondeterminism"):
                    fw_blocked = blocked
        self.progress("done", 100)

    def _skip(self, name, reason):
        rec = {"name": name, "status": "skipped", "verdict": None, "seconds": 0.0, "message": reason, "details": {}}
        self.checks.append(rec)
        return rec

    def _run_check(self, name, body):
        import warnings

        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\..*")
            warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*")
            try:
                rec = body()
            except Outcome as oc:
                if oc.status not in ("fail", "error"):
                    raise  # memory, no_inputs: the run ends here
                rec = {"status": oc.status, "verdict": oc.verdict, "message": oc.summary,
                       "details": dict(oc.extra), "_outcome": oc}
            except Exception as e:
                oc = self.user_exception(e, "check", name.replace("_", " "))
                rec = {"status": "error", "verdict": "exception", "message": oc.summary,
                       "details": {"exception": oc.extra.get("exception")}, "_outcome": oc}
        seen = set((w["message"], w["category"]) for w in self.warnings)
        for w in caught:
            key = (str(w.message)[:500], w.category.__name__)
            if key in seen:
                continue
            seen.add(key)
            self.warnings.append({"category": key[1], "message": key[0], "file": w.filename, "line": w.lineno,
                                  "check": name})
        rec["name"] = name
        rec["seconds"] = time.perf_counter() - t
        rec.setdefault("verdict", None)
        rec.setdefault("message", None)
        rec.setdefault("details", {})
        order = ["name", "status", "verdict", "seconds", "message", "details"]
        out = dict((k, rec[k]) for k in order)
        if "_outcome" in rec:
            out["_outcome"] = rec["_outcome"]
        self.checks.append(out)
        return out

    def _call(self, inputs):
        torch.manual_seed(self.opts["seed"])
        return self.fn(*inputs)

    def _check_forward(self):
        out = self._call(self.fresh())
        outs = _as_tuple(out)
        info = []
        for i, o in enumerate(outs):
            if _is_tensor(o):
                info.append({"index": i, "kind": "tensor", "shape": list(o.shape),
                             "dtype": str(o.dtype).replace("torch.", ""), "requires_grad": bool(o.requires_grad)})
            else:
                info.append({"index": i, "kind": "value", "type": type(o).__name__})
        self.result["outputs"] = info
        diff = [i for i, o in enumerate(outs) if _is_tensor(o) and o.requires_grad]
        self.out_count = len(outs)
        self.diff_out = diff
        self.out_names = ["output %d" % i for i in range(len(outs))]
        bad = [i for i, o in enumerate(outs) if not _is_tensor(o)]
        if bad:
            return {"status": "error", "verdict": "exception",
                    "message": "✗ forward returned a %s at output %d; gradcheck needs tensors"
                    % (type(outs[bad[0]]).__name__, bad[0]),
                    "_outcome": Outcome("error", "exception",
                                        "✗ forward returned a %s at output %d; gradcheck needs tensors"
                                        % (type(outs[bad[0]]).__name__, bad[0]),
                                        location=self.location_for("forward"))}
        return {"status": "pass", "details": {"outputs": len(outs), "differentiable_outputs": len(diff)}}

    def _check_input_mutation(self):
        inputs = self.fresh()
        snap = [(i, t.detach().clone(), t._version) for i, t in enumerate(inputs) if _is_tensor(t)]
        try:
            self._call(inputs)
        except RuntimeError as e:
            if "leaf Variable that requires grad" in str(e) and "in-place" in str(e):
                return self._mutated_record([], str(e))
            raise
        changed = []
        for i, before, ver in snap:
            t = inputs[i]
            d = _max_abs_diff(t, before)
            if d > 0 or t._version != ver:
                changed.append({"input": self.in_names[i], "position": i, "max_change": d,
                                "version_bumped": t._version != ver})
        if changed:
            return self._mutated_record(changed, None)
        return {"status": "pass"}

    def _mutated_record(self, changed, torch_message):
        if changed:
            names = ", ".join(c["input"] for c in changed)
            summary = "✗ forward modifies its input%s %s in place" % ("s" if len(changed) > 1 else "", names)
        else:
            summary = "✗ forward modifies a leaf input that requires grad in place"
        msg = ("gradcheck perturbs inputs and re-runs forward; a forward that changes its inputs makes the "
               "numerical Jacobian meaningless. Work on a copy (x = x.clone()) or use ctx.mark_dirty and "
               "return the modified tensor.")
        if torch_message:
            msg = torch_message + "\n" + msg
        return {"status": "fail", "verdict": "input_mutated", "message": summary,
                "details": {"changed": changed},
                "_outcome": Outcome("fail", "input_mutated", summary, msg, location=self.location_for("forward"))}

    def _check_random_op(self):
        seed = self.opts["seed"]
        torch.manual_seed(seed + 1)
        a = self.fn(*self.fresh())
        torch.manual_seed(seed + 2)
        b = self.fn(*self.fresh())
        diff = _max_abs_diff(a, b)
        if diff == 0:
            return {"status": "pass"}
        torch.manual_seed(seed + 1)
        a2 = self.fn(*self.fresh())
        same_seed = _max_abs_diff(a, a2)
        if same_seed == 0:
            summary = "✗ forward is random: its output changes with the RNG seed (e.g. dropout)"
            msg = ("gradcheck evaluates forward many times; random ops such as dropout give a different function "
                   "each time, so numerical gradients are garbage. Check the function with the randomness "
                   "disabled (eval mode / p=0) or with a fixed mask passed in as an input.")
        else:
            summary = "✗ forward is not deterministic: two calls with the same inputs differ by %s" % _fmt(same_seed)
            msg = "forward returns different values for the same inputs and seed; gradcheck cannot check it."
        return {"status": "fail", "verdict": "random_op", "message": summary,
                "details": {"max_difference": diff, "same_seed_difference": same_seed},
                "_outcome": Outcome("fail", "random_op", summary, msg, location=self.location_for("forward"))}

    def _grad_outputs_for(self, outs, gen):
        gos = []
        for o in outs:
            dt = o.dtype if (o.is_floating_point() or o.is_complex()) else torch.float64
            gos.append(_away_from_zero(tuple(o.shape), gen, dt).to(o.device))
        return gos

    def _check_nondeterminism(self):
        inputs = self.fresh()
        outs = _as_tuple(self._call(inputs))
        douts = [outs[i] for i in self.diff_out]
        if not douts:
            return {"status": "skipped", "message": "no output requires grad"}
        gen = torch.Generator().manual_seed(self.opts["seed"] + 7)
        gos = self._grad_outputs_for(douts, gen)
        targets = [inputs[j] for j in self.grad_pos]
        g1 = torch.autograd.grad(douts, targets, gos, retain_graph=True, allow_unused=True)
        g2 = torch.autograd.grad(douts, targets, gos, retain_graph=True, allow_unused=True)
        worst = 0.0
        where = None
        for j, a, b in zip(self.grad_pos, g1, g2):
            if a is None and b is None:
                continue
            if a is None or b is None:
                d = float("inf")
            else:
                d = _max_abs_diff(a, b)
            if d > worst:
                worst, where = d, j
        tol = float(self.opts["nondet_tol"])
        if worst > tol:
            name = self.in_names[where]
            summary = ("✗ backward is nondeterministic: two backward passes differ by up to %s (input %s)"
                       % (_fmt(worst), name))
            msg = ("Running backward twice with the same grad_outputs gave different gradients. If this is "
                   "expected (atomic adds, random ops in backward), pass nondet_tol=%s to gradcheck." % _fmt(worst))
            return {"status": "fail", "verdict": "nondeterministic_backward", "message": summary,
                    "details": {"max_difference": worst, "input": name, "nondet_tol": tol},
                    "_outcome": Outcome("fail", "nondeterministic_backward", summary, msg,
                                        location=self.location_for("backward"))}
        return {"status": "pass", "details": {"max_difference": worst}}

    # gradcheck / gradgradcheck / forward AD

    def _torch_kwargs(self):
        o = self.opts
        kw = {
            "eps": float(o["eps"]), "atol": float(o["atol"]), "rtol": float(o["rtol"]),
            "nondet_tol": float(o["nondet_tol"]),
            "check_undefined_grad": bool(o["check_undefined_grad"]),
            "check_grad_dtypes": bool(o["check_grad_dtypes"]),
            "check_batched_grad": bool(o["check_batched_grad"]),
        }
        return kw

    def _modes(self, outs_real, ins_real):
        fm = self.opts["fast_mode"]
        if fm == "auto":
            small = outs_real * ins_real <= int(self.opts["slow_confirm_max_elements"])
            return ["fast", "slow"] if small else ["fast"]
        return ["fast"] if fm else ["slow"]

    def _check_gradcheck(self):
        fn = self.fn
        inputs = self.fresh()
        outs = _as_tuple(fn(*inputs))
        out_pos = self.diff_out or [i for i, o in enumerate(outs) if _is_tensor(o) and (o.is_floating_point() or o.is_complex())]
        ins_real = sum(_real_numel(inputs[j]) for j in self.grad_pos)
        outs_real = sum(_real_numel(outs[o]) for o in out_pos)
        spec = {
            "fn": fn, "fresh": self.fresh, "in_positions": self.grad_pos, "out_positions": out_pos,
            "in_names": self.in_names, "out_names": self.out_names, "order": "first",
            "diff_out": self.diff_out,
        }
        return self._gradcheck_like(spec, self._modes(outs_real, ins_real), "gradcheck",
                                    lambda inp, fast: _REAL["gradcheck"](fn, inp, fast_mode=fast,
                                                                         raise_exception=True, **self._torch_kwargs()))

    def _check_gradgradcheck(self):
        fn = self.fn
        n_in = len(self.in_names)
        outs = _as_tuple(fn(*self.fresh()))
        douts = [outs[i] for i in self.diff_out]
        if not douts:
            return {"status": "skipped", "message": "no output requires grad"}
        if self.go_base is None:
            gen = torch.Generator().manual_seed(self.opts["seed"] + 11)
            gos_base = tuple(g.requires_grad_(True) for g in self._grad_outputs_for(douts, gen))
        else:
            gos_base = self.go_base
        grad_in = list(self.grad_pos)
        diff_go = [i for i, g in enumerate(gos_base) if _is_tensor(g) and g.requires_grad]

        def fresh2():
            ins = self.fresh()
            g2 = tuple(g.detach().clone().requires_grad_(g.requires_grad) if _is_tensor(g) else g for g in gos_base)
            return ins + g2

        def new_func(*args):
            ins = args[:n_in]
            g = args[n_in:]
            o = [x for x in _as_tuple(fn(*ins)) if _is_tensor(x) and x.requires_grad]
            gi = torch.autograd.grad(o, [ins[j] for j in grad_in], g, create_graph=True, allow_unused=True)
            return tuple(x for x in gi if x is not None)

        # which first-order gradients exist (torch drops the None ones, shifting output numbers)
        probe_in = fresh2()
        o = [x for x in _as_tuple(fn(*probe_in[:n_in])) if _is_tensor(x) and x.requires_grad]
        gi = torch.autograd.grad(o, [probe_in[j] for j in grad_in], probe_in[n_in:], create_graph=True,
                                 allow_unused=True)
        kept = [grad_in[k] for k, x in enumerate(gi) if x is not None]
        out_names2 = ["grad of %s" % self.in_names[j] for j in kept]
        in_names2 = list(self.in_names) + ["grad_output %d" % i for i in range(len(gos_base))]
        in_pos2 = list(grad_in) + [n_in + i for i in diff_go]
        out_pos2 = list(range(len(kept)))
        ins_real = sum(_real_numel(probe_in[j]) for j in in_pos2)
        outs_real = sum(_real_numel(x) for x in gi if x is not None)
        diff_out2 = [k for k, x in enumerate([x for x in gi if x is not None]) if x.requires_grad]
        spec = {
            "fn": new_func, "fresh": fresh2, "in_positions": in_pos2, "out_positions": out_pos2,
            "in_names": in_names2, "out_names": out_names2, "order": "second", "diff_out": diff_out2,
        }
        kw = self._torch_kwargs()

        def run(inp, fast):
            return _REAL["gradgradcheck"](fn, inp[:n_in], inp[n_in:], fast_mode=fast, raise_exception=True, **kw)

        return self._gradcheck_like(spec, self._modes(outs_real, ins_real), "gradgradcheck", run)

    def _check_forward_ad(self):
        fn = self.fn
        inputs = self.fresh()
        outs = _as_tuple(fn(*inputs))
        out_pos = self.diff_out or [i for i, o in enumerate(outs) if _is_tensor(o) and (o.is_floating_point() or o.is_complex())]
        spec = {
            "fn": fn, "fresh": self.fresh, "in_positions": self.grad_pos, "out_positions": out_pos,
            "in_names": self.in_names, "out_names": self.out_names, "order": "forward",
            "diff_out": self.diff_out,
        }
        o = self.opts
        kw = {"eps": float(o["eps"]), "atol": float(o["atol"]), "rtol": float(o["rtol"]),
              "check_undefined_grad": False}
        ins_real = sum(_real_numel(inputs[j]) for j in self.grad_pos)
        outs_real = sum(_real_numel(outs[p]) for p in out_pos)

        def run(inp, fast):
            return _REAL["gradcheck"](fn, inp, fast_mode=fast, raise_exception=True, check_forward_ad=True,
                                      check_backward_ad=False, **kw)

        return self._gradcheck_like(spec, self._modes(outs_real, ins_real), "forward_ad", run)

    def _gradcheck_like(self, spec, modes, label, run):
        GradcheckError = _REAL["GradcheckError"]
        details = {"modes": [], "eps": self.opts["eps"], "atol": self.opts["atol"], "rtol": self.opts["rtol"]}
        notes = []
        for mode in modes:
            torch.manual_seed(self.opts["seed"])
            t = time.perf_counter()
            try:
                run(spec["fresh"](), mode == "fast")
            except GradcheckError as e:
                details["modes"].append({"mode": mode, "passed": False, "seconds": time.perf_counter() - t})
                rec = self._analyse_failure(spec, str(e), mode, label, details)
                if rec is not None:
                    return rec
                notes.append("fast mode failed but the slow-mode recomputation found no mismatch; "
                             "checked again in slow mode")
                if "slow" not in modes:
                    modes.append("slow")
                continue
            details["modes"].append({"mode": mode, "passed": True, "seconds": time.perf_counter() - t})
        if notes:
            details["notes"] = notes
        return {"status": "pass", "details": details}

    def _analyse_failure(self, spec, msg, mode, label, details):
        """A record for a GradcheckError, or None when a fast-mode failure does not reproduce."""
        order = spec["order"]
        details["torch_message"] = msg if len(msg) < 4000 else msg[:4000] + "…"
        ctx_loc = {"first": "backward", "second": "backward", "forward": "jvp"}[order]
        what = {"first": "Jacobian mismatch", "second": "second-order Jacobian mismatch (gradgradcheck)",
                "forward": "forward-mode Jacobian mismatch (jvp)"}[order]

        def finish(verdict, summary, message, status="fail"):
            details["verdict_reason"] = message
            why = "inputs" if verdict == "non_differentiable_point" else ctx_loc
            return {"status": status, "verdict": verdict, "message": summary, "details": details,
                    "_outcome": Outcome(status, verdict, summary, message, location=self.location_for(why))}

        if "Backward is not reentrant" in msg:
            return finish("nondeterministic_backward",
                          "✗ backward is nondeterministic (gradcheck: backward is not reentrant)", msg)
        if "backward not multiplied by grad_output" in msg:
            return finish("wrong_gradient",
                          "✗ backward ignores grad_output: its result does not scale with the incoming gradient",
                          msg)
        if "handle undefined output grads" in msg:
            return finish("undefined_grad",
                          "✗ backward fails when an output's gradient is undefined (None); handle None grads or "
                          "pass check_undefined_grad=False", msg)
        if "While computing batched gradients" in msg:
            return finish("batched_grad",
                          "✗ batched gradients fail: " + _first_line(msg.split("got:", 1)[-1]), msg)

        parsed = _parse_gradcheck_message(msg)
        hint = None
        diff_out = spec.get("diff_out") or []
        if parsed is not None:
            oi, ii, part, fwd = parsed
            in_pos = spec["in_positions"]
            if ii < len(in_pos):
                outs = diff_out if diff_out else spec["out_positions"]
                if oi < len(outs):
                    hint = (outs[oi], in_pos[ii])
        inputs = spec["fresh"]()
        ana = JacobianAnalysis(spec["fn"], inputs, spec["in_positions"], spec["out_positions"],
                               spec["in_names"], spec["out_names"], self.opts,
                               mode="forward" if order == "forward" else "reverse")
        primary, failing = ana.analyse(hint)
        if primary is None:
            if mode == "fast":
                return None
            if "Numerical gradient for function expected to be zero" in msg and order == "second":
                return finish("not_twice_differentiable",
                              "✗ backward is not differentiable: second-order gradients are missing "
                              "(backward detaches or runs under no_grad)", msg)
            details["worst"] = []
            return finish("wrong_gradient" if "Jacobian" in msg else "gradcheck_failed",
                          "✗ %s: %s" % (label, _first_line(msg)), msg)
        worst = ana.describe(primary, kink_check=True)
        details.update({
            "output": primary["o"], "output_name": spec["out_names"][primary["o"]],
            "input": spec["in_names"][primary["j"]], "input_position": primary["j"],
            "failing_elements": primary["failing_elements"], "total_elements": primary["total_elements"],
            "analytical_all_zero": primary["analytical_all_zero"],
            "worst": worst,
            "failing_pairs": [
                {"output": f["o"], "output_name": spec["out_names"][f["o"]],
                 "input": spec["in_names"][f["j"]], "input_position": f["j"],
                 "failing_elements": f["failing_elements"], "total_elements": f["total_elements"],
                 "max_abs_error": _nan_max(f["err"]), "analytical_all_zero": f["analytical_all_zero"]}
                for f in failing
            ],
            "recompute_notes": sorted(ana.notes),
        })
        if parsed is not None and parsed[2]:
            details["torch_part"] = parsed[2]
        w = worst[0]
        where = "%s%s" % (w["input"], _idx(w["input_index"]))
        out_where = "%s%s" % (w["output_name"], _idx(w["output_index"]))
        if order == "second" and (primary["analytical_all_zero"] or "once_differentiable" in ana.notes):
            once = "once_differentiable" in ana.notes or (self.fclass is not None and _is_once_differentiable(self.fclass))
            if once:
                summary = "✗ not twice differentiable: backward is @once_differentiable, so gradgradcheck fails"
                message = ("The backward is marked @once_differentiable, so second-order gradients are not "
                           "available. Remove gradgradcheck for this Function, or write a differentiable backward.")
            else:
                summary = ("✗ not twice differentiable: second-order gradients w.r.t. %s are all zero "
                           "(backward detaches or runs under no_grad)" % details["input"])
                message = ("The gradient computed by backward does not depend differentiably on %s: backward "
                           "probably uses .detach(), .data, torch.no_grad() or .item()/.tolist(). If double "
                           "backward is not needed, mark backward with @once_differentiable."
                           % details["input"])
            return finish("not_twice_differentiable", summary, message)
        kinks = [e for e in worst if e.get("kink")]
        if kinks and len(kinks) == len(worst):
            k = kinks[0]
            summary = ("✗ not differentiable at the test point: %s = %s is at a kink (one-sided slopes %s and %s); "
                       "use inputs away from it" % (where, _fmt(_scalar_fmt(k["input_value"])),
                                                     _fmt(k["left_slope"]), _fmt(k["right_slope"])))
            message = ("The %s differs from the numerical one only where the function has a kink: the left and "
                       "right finite differences disagree, so the central difference (%s) is meaningless there. "
                       "Choose inputs away from the kink; the gradient itself may be right."
                       % ({"first": "analytical gradient", "second": "second derivative",
                           "forward": "jvp"}[order], _fmt(k["numerical"])))
            return finish("non_differentiable_point", summary, message)
        summary = "✗ %s: input %s, %s (worst |Δ| %s at %s, %s; numerical %s, analytical %s)" % (
            what, details["input"], details["output_name"], _fmt(w["abs_error"]), where, out_where,
            _fmt(w["numerical"]), _fmt(w["analytical"]))
        message = ("%d of %d entries of d(%s)/d(%s) differ beyond atol=%s + rtol=%s·|numerical|."
                   % (primary["failing_elements"], primary["total_elements"], details["output_name"],
                      details["input"], _fmt(self.opts["atol"]), _fmt(self.opts["rtol"])))
        return finish("wrong_gradient", summary, message)

    def _check_as_written(self):
        """Re-run the call exactly as written (original dtypes) after the float64 copy passed."""
        import inspect
        import warnings

        cap = self.captured
        real = _REAL[cap["variant"]]
        a = dict(inspect.signature(real).bind(*cap["args"], **cap["kwargs"]).arguments)
        a["raise_exception"] = True
        promoted = [{"name": i["name"], "from": i["promoted_from"]} for i in self.result["inputs"]
                    if i.get("promoted_from")]
        torch.manual_seed(self.opts["seed"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                real(**a)
            except _REAL["GradcheckError"] as e:
                torch_message = str(e)
            else:
                return {"status": "pass", "message": "the call as written passes too",
                        "details": {"promoted": promoted}}
        names = ", ".join("%s (%s)" % (p["name"], p["from"]) for p in promoted)
        dts = sorted(set(p["from"] for p in promoted))
        summary = "✗ gradients are right in float64; your %s inputs make gradcheck fail" % "/".join(dts)
        message = ("The same check passes on float64 copies of the inputs (%s) but fails as written. gradcheck's "
                   "finite differences need double precision: create the inputs with dtype=torch.float64 "
                   "(or call .double()), or loosen eps/atol/rtol." % names)
        details = {"promoted": promoted, "torch_message": torch_message[:4000]}
        return {"status": "fail", "verdict": "low_precision_input", "message": summary, "details": details,
                "_outcome": Outcome("fail", "low_precision_input", summary, message, location=self.location_for("call"))}

    # -- conclusion -------------------------------------------------------------

    def _conclude(self):
        r = self.result
        decisive = next((rec for rec in self.checks if rec["status"] in ("fail", "error")), None)
        if decisive is not None:
            oc = decisive.get("_outcome")
            if oc is None:
                oc = Outcome(decisive["status"], decisive.get("verdict"), decisive.get("message") or decisive["name"])
            self._apply_outcome(oc)
            r["failed_check"] = decisive["name"]
            return
        r["status"] = "pass"
        r["verdict"] = "ok"
        ran = [c["name"] for c in self.checks if c["status"] == "pass" and c["name"] in
               ("gradcheck", "gradgradcheck", "forward_ad")]
        n_t = sum(1 for i in r["inputs"] if i.get("kind") == "tensor")
        dts = sorted(set(i["dtype"] for i in r["inputs"] if i.get("kind") == "tensor"))
        r["summary"] = "✓ gradients match: %s (%d input%s, %s)" % (
            ", ".join(ran) if ran else "no checks", n_t, "" if n_t == 1 else "s", "/".join(dts))
        for c in self.checks:
            if c["status"] == "skipped" and c.get("verdict") == "not_twice_differentiable":
                r["notes"].append("second-order gradients not checked: backward is @once_differentiable")


_CHECK_LABELS = {
    "forward": "running forward",
    "input_mutation": "checking that forward leaves its inputs alone",
    "random_op": "checking that forward is deterministic",
    "nondeterminism": "checking that backward is deterministic",
    "gradcheck": "gradcheck",
    "gradgradcheck": "gradgradcheck",
    "forward_ad": "forward-mode gradcheck",
    "as_written": "gradcheck as written (original dtypes)",
}


def _scalar_fmt(v):
    if isinstance(v, list) and len(v) == 2:
        return "%s%+gj" % (_fmt(v[0]), v[1])
    return v


def _nan_max(t):
    if t.numel() == 0:
        return 0.0
    if bool(t.isnan().any()):
        return float("nan")
    return float(t.max())


def _method_def(cls, name):
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass):
            if klass.__module__.startswith("torch."):
                return None
            f = vars(klass)[name]
            f = getattr(f, "__func__", f)
            return _def_of(f)
    return None


def _def_of(func):
    import inspect
    import linecache

    try:
        f = inspect.unwrap(func)
    except Exception:
        f = func
    code = getattr(f, "__code__", None)
    if code is None:
        return None
    path, first = code.co_filename, code.co_firstlineno
    line = first
    for ln in range(first, first + 40):
        s = linecache.getline(path, ln).lstrip()
        if s.startswith(("def ", "async def ", "lambda")) or " lambda" in s:
            line = ln
            break
        if s and not s.startswith(("@", "#")) and not s.endswith((",", "(", ")")):
            break
    return {"file": path, "line": line, "function": getattr(f, "__qualname__", None)}


def _defines(cls, name):
    base = getattr(torch.autograd.Function, name, None)
    own = getattr(cls, name, None)
    return own is not None and own is not base


def _is_once_differentiable(cls):
    f = getattr(cls, "backward", None)
    f = getattr(f, "__func__", f)
    code = getattr(f, "__code__", None)
    if code is None or getattr(f, "__wrapped__", None) is None:
        return False
    fn_mod = sys.modules.get("torch.autograd.function")
    return code.co_name == "wrapper" and fn_mod is not None and _realpath(code.co_filename) == _realpath(fn_mod.__file__)


def _uses_setup_context(cls):
    try:
        from torch.autograd.function import _is_setup_context_defined

        return bool(_is_setup_context_defined(cls.setup_context))
    except Exception:
        return getattr(cls, "setup_context", None) is not getattr(torch.autograd.Function, "setup_context", None)


def _value_params(fn, fclass):
    """The parameters that take the values passed to fn (ctx removed for old-style Functions)."""
    import inspect

    try:
        if fclass is not None:
            params = list(inspect.signature(fclass.forward).parameters.values())
            if not _uses_setup_context(fclass) and params:
                params = params[1:]
            return params
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


def _param_names(fn, fclass):
    params = _value_params(fn, fclass) or []
    names = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            names.extend("%s[%d]" % (p.name, i) for i in range(16))
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names


def _is_tensor_annotation(ann):
    """True for Tensor, None for Optional[Tensor]-like, False otherwise (or no annotation)."""
    import inspect

    if ann is inspect.Parameter.empty:
        return False
    if ann is torch.Tensor:
        return True
    if isinstance(ann, str):
        s = ann.replace(" ", "")
        if s in ("Tensor", "torch.Tensor"):
            return True
        if "Tensor" in s and ("Optional" in s or "None" in s):
            return None
        return False
    args = getattr(ann, "__args__", None)
    if args and torch.Tensor in args:
        return None
    return False


def _ann_name(ann):
    if isinstance(ann, str):
        return ann
    return getattr(ann, "__name__", None) or repr(ann)


# ----------------------------------------------------------------------------
# child process entry


def _set_pdeathsig():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = getattr(libc, "prctl", None)
        if prctl is not None:
            prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _child_main(req, result_w, output_w, zygote_pid, threads):
    """Runs in the forked child; never returns."""
    code = 0
    try:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        _set_pdeathsig()
        if os.getppid() != zygote_pid:
            os._exit(1)
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

                resource.setrlimit(resource.RLIMIT_AS, (int(mem), int(mem)))
            except Exception:
                pass
        import faulthandler

        faulthandler.enable(file=sys.stderr, all_threads=True)
        torch.set_num_threads(threads)

        def emit(ev):
            _write_all(result_w, (_dumps(ev) + "\n").encode("ascii"))

        job = Job(req, emit)
        result = None
        try:
            result = job.run()
        except _Captured:
            result = job.result
            result.update(status="error", verdict="exception",
                          summary="✗ internal: a captured gradcheck call escaped")
        except BaseException as e:  # SystemExit, KeyboardInterrupt, ... from user code
            info = job.exception_info(e, "run")
            if isinstance(e, Exception) and not info["traceback"] and not _is_memory_error(e):
                # no user frame: a bug in this worker, not in the user's code
                import traceback

                result = job.result
                result.update(status="error", verdict=None,
                              summary="✗ internal error in the gradlint worker: %s: %s"
                                      % (type(e).__name__, _first_line(_exc_text(e, 300))),
                              message="".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:],
                              exception=info)
            elif _is_memory_error(e):
                result = job.result
                result.update(status="memory", verdict=None, summary=job.memory_summary(e),
                              message=_exc_text(e), exception=info, location=job.location_for("run", info))
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
                    exception=info, location=job.location_for("run", info),
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


# ----------------------------------------------------------------------------
# zygote


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


class Zygote(object):
    def __init__(self, proto_in, proto_out, threads):
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
            _write_all(self.proto_out, (_dumps(ev) + "\n").encode("ascii"))
        except (BrokenPipeError, OSError):
            self.eof = True

    # -- main loop --------------------------------------------------------------

    def serve(self):
        while True:
            if self.eof:
                self.kill_all()
                return
            timeout = self._timeout()
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
            r = _base_result(req)
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
                _child_main(req, res_w, out_w, self.pid, self.threads)
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
        for target in (lambda: os.killpg(run.pid, signal.SIGKILL), lambda: os.kill(run.pid, signal.SIGKILL)):
            try:
                target()
            except OSError:
                pass

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

    def _reap(self):
        while self.by_pid:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            run = self.by_pid.pop(pid, None)
            if run is not None:
                run.exit_status = status
                run.exit_time = time.monotonic()
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
        r["id"] = run.id
        r["stderr_tail"] = tail
        r["output_bytes"] = run.out_bytes
        r.setdefault("timings", {})["child_wall_s"] = time.monotonic() - run.started
        r.setdefault("environment", {})["pid"] = run.pid
        if os.WIFSIGNALED(status):
            r["exit"] = {"signal": os.WTERMSIG(status), "signal_name": _signal_name(os.WTERMSIG(status))[0]}
        elif os.WIFEXITED(status):
            r["exit"] = {"code": os.WEXITSTATUS(status)}
        return r

    def _no_result(self, run, tail, limits):
        req = run.req
        r = _base_result(req)
        roots = _user_roots(req)
        status = run.exit_status
        reason = run.kill_reason
        if reason == "timeout":
            t = limits.get("timeout_s")
            r.update(status="timeout", summary="⏱ timed out after %s s (the run was killed)" % _fmt(float(t)),
                     message="The run did not finish within %s seconds; gradlint killed it. Use smaller inputs "
                             "or a longer timeout." % _fmt(float(t)))
            headline, frames = None, []
        elif reason == "cancelled":
            r.update(status="cancelled", summary="cancelled", message="The run was cancelled and its process killed.")
            headline, frames = None, []
        elif reason == "output_limit":
            cap = limits.get("output_bytes")
            r.update(status="output_limit",
                     summary="✗ stopped: the code wrote more than %s to stdout/stderr" % _bytes(cap),
                     message="The run wrote %s of output (cap %s) and was killed." % (_bytes(run.out_bytes), _bytes(cap)))
            headline, frames = None, []
        else:
            headline, frames = _parse_faulthandler(tail, roots)
            crash = {"faulthandler": headline, "traceback": frames}
            where = ""
            if frames:
                f = frames[0]
                where = " in %s (%s:%d)" % (f["function"], os.path.basename(f["file"]), f["line"])
                r["location"] = {"file": f["file"], "line": f["line"], "function": f["function"],
                                 "reason": "crashed here"}
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                name, desc = _signal_name(sig)
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
            r["crash"] = crash
        return r

    def kill_all(self):
        for run in list(self.runs.values()):
            self._kill(run, "shutdown")
        deadline = time.monotonic() + 2.0
        while self.by_pid and time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.01)
            else:
                self.by_pid.pop(pid, None)


def _bytes(n):
    if not n:
        return "0 B"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if n == int(n) else "%.1f %s") % (n, unit)
        n /= 1024.0


# ----------------------------------------------------------------------------
# entry point


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
        _write_all(proto_out, (_dumps(ev) + "\n").encode("ascii"))

    if not hasattr(os, "fork"):
        announce({"event": "fatal", "reason": "the gradcheck worker needs os.fork (Linux or macOS)"})
        return 3
    try:
        _import_torch()
    except ImportError as e:
        if getattr(e, "name", None) == "torch" or "No module named 'torch'" in str(e):
            reason = "torch is not installed in %s" % sys.executable
        else:
            reason = "importing torch failed in %s: %s: %s" % (sys.executable, type(e).__name__, _first_line(str(e)))
        announce({"event": "fatal", "reason": reason})
        return 3
    except BaseException as e:
        announce({"event": "fatal", "reason": "importing torch failed in %s: %s: %s"
                  % (sys.executable, type(e).__name__, _first_line(str(e)))})
        return 3
    t_import = time.perf_counter() - t0
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # no OpenMP pool in the zygote: forked children would hang on it
    t1 = time.perf_counter()
    try:
        _warm_up()
    except Exception as e:  # an optimisation only
        sys.stderr.write("gradlint worker: warm-up failed: %s: %s\n" % (type(e).__name__, e))
    _gradcheck_refs()
    # children's garbage collections must not touch (and so copy) the zygote's objects
    import gc

    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    t_warm = time.perf_counter() - t1
    zyg = Zygote(proto_in, proto_out, threads)
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


if __name__ == "__main__":
    sys.exit(main())
