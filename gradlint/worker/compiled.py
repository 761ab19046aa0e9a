"""Gradients under torch.compile and torch.func against eager autograd (``options.compile``).

Which Functions break under compilation cannot be told by reading: torch 2.13 keeps a
custom backward when a compiled function is differentiated with autograd, and drops it when
``torch.func.grad``/``vjp``/``jacrev`` is compiled (Dynamo inlines forward and differentiates
its ops: pytorch#193279), and skips a custom vmap rule under a compiled ``vmap`` (#186303).
So each comparison is run:

- ``func.grad``: eager ``torch.func.grad`` against eager autograd (``func_mismatch``);
- ``compile (B)``: ``torch.compile(f, backend=B)`` differentiated by autograd, against eager;
- ``compile func.grad (B)``, ``compile func.vjp (B)``: the compiled transform against the eager
  one; ``compile jacrev (B)``, ``compile vmap (B)`` for Functions that declare a vmap rule.

B is ``aot_eager`` (every comparison) and ``inductor`` (autograd and func.grad; only when a
C++ compiler is found). Each compiles with ``fullgraph=True`` first; a graph break is
``compile_unsupported`` (⚠, with torch's reason), and the comparison is then made with the
graph break, as users run it. A difference is ``compile_mismatch``, with its pattern: the
compiled gradients equal autograd through forward (the custom backward is not used), are
zero, are a constant factor off, or differ elementwise.
"""

import os
import shutil
import time

import torch

from . import funcchecks
from .checks import grad_outputs_for
from .introspect import uses_setup_context
from .outcome import Outcome
from .tensors import as_tuple, is_tensor
from .text import first_line, fmt, idx
from .through_forward import through_forward

BACKENDS = ("aot_eager", "inductor")
# (kind, backends it runs on, what it compares)
KINDS = (
    ("autograd", BACKENDS, "torch.autograd.grad through torch.compile(f)"),
    ("func.grad", BACKENDS, "torch.compile(torch.func.grad(f))"),
    ("func.vjp", ("aot_eager",), "torch.compile(torch.func.vjp(f))"),
    ("jacrev", ("aot_eager",), "torch.compile(torch.func.jacrev(f))"),
    ("vmap", ("aot_eager",), "torch.compile(torch.func.vmap(f))"),
)
COMPARED = dict((kind, what) for kind, _, what in KINDS)
_ISSUES = {"func.grad": "pytorch#193279", "func.vjp": "pytorch#193279", "jacrev": "pytorch#193279",
           "vmap": "pytorch#186303"}


def check_name(kind, backend=None):
    if backend is None:
        return kind
    return "compile (%s)" % backend if kind == "autograd" else "compile %s (%s)" % (kind, backend)


def cxx_compiler():
    """The C++ compiler inductor would use on CPU, or None."""
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def wanted_backends(opts):
    """[(backend, None or why it is skipped)] for ``options.compile``."""
    value = opts.get("compile")
    chosen = list(value) if isinstance(value, (list, tuple)) else list(BACKENDS)
    out = []
    for b in BACKENDS:
        if b not in chosen:
            continue
        skip = None
        if b == "inductor" and cxx_compiler() is None:
            skip = "no C++ compiler found (inductor needs one on CPU; set CXX)"
        out.append((b, skip))
    return out


def func_support(subject):
    """None when torch.func can differentiate the subject, else why not (measured, torch 2.13)."""
    if subject.op is not None:
        return "torch.func does not differentiate custom ops here (torch 2.13: \"must override the " \
               "setup_context staticmethod\" from the op's autograd)"
    if subject.fclass is not None and not uses_setup_context(subject.fclass):
        return ("the Function has no setup_context, so torch.func cannot use it (eager torch.func.grad "
                "raises; torch 2.13's compiled torch.func.grad does not raise and ignores backward)")
    return None


def plan(subject, opts):
    """[(check name, None or why it is skipped)] in order."""
    steps = []
    no_func = func_support(subject)
    vmap_declared = funcchecks.declares_func_support(subject)
    if subject.op is None:
        steps.append(("func.grad", no_func))
    for backend, skip in wanted_backends(opts):
        for kind, backends, _ in KINDS:
            if backend not in backends:
                continue
            why = skip
            if kind != "autograd":
                why = why or no_func
            if kind in ("jacrev", "vmap") and not vmap_declared:
                continue
            steps.append((check_name(kind, backend), why))
    return steps


# -- the eager references -----------------------------------------------------------------


class Setup(object):
    """What every comparison of one subject shares: fixed grad_outputs, eager results."""

    def __init__(self, subject):
        self.subject = subject
        inputs = subject.fresh()
        outs = as_tuple(subject.call(inputs))
        self.diff_out = list(subject.diff_out)
        gen = torch.Generator().manual_seed(subject.opts["seed"] + 23)
        self.gos = grad_outputs_for([outs[i] for i in self.diff_out], gen)
        self.outs = tuple(o.detach() if is_tensor(o) else o for o in outs)
        self.grads = self.autograd(subject.fn, inputs, outs)
        self._through = "unset"
        self._eager = {}

    def autograd(self, fn, inputs=None, outs=None):
        """Gradients of sum(out * go) by torch.autograd.grad, zeros where unused."""
        s = self.subject
        if outs is None:
            inputs = s.fresh()
            torch.manual_seed(s.opts["seed"])
            outs = as_tuple(fn(*inputs))
        targets = [inputs[j] for j in s.grad_pos]
        # an output that does not require grad here (forward through comparisons, where, sign:
        # a step function autograd sees as constant) has a zero gradient
        pairs = [(outs[i], g) for i, g in zip(self.diff_out, self.gos)
                 if is_tensor(outs[i]) and outs[i].requires_grad]
        if not pairs:
            return tuple(torch.zeros_like(t) for t in targets)
        grads = torch.autograd.grad([o for o, _ in pairs], targets, [g for _, g in pairs], allow_unused=True)
        return tuple(torch.zeros_like(t) if g is None else g.detach() for t, g in zip(targets, grads))

    def through(self):
        """Autograd through forward (the custom backward bypassed), or None."""
        if self._through == "unset":
            self._through = None
            fn = through_forward(self.subject.fn, self.subject.op)
            if fn is not None:
                try:
                    self._through = self.autograd(fn)
                except Exception:
                    pass
        return self._through

    def loss(self, fn):
        """fn turned into the scalar torch.func.grad differentiates: sum(out * go)."""
        gos, diff_out = self.gos, self.diff_out

        def loss(*args):
            outs = as_tuple(fn(*args))
            total = None
            for i, g in zip(diff_out, gos):
                term = (outs[i] * g).sum()
                total = term if total is None else total + term
            return total

        return loss

    def transform(self, kind, fn):
        """The torch.func transform of ``kind`` applied to fn: a callable of the inputs."""
        s = self.subject
        pos = tuple(s.grad_pos)
        if kind == "func.grad":
            grad_fn = torch.func.grad(self.loss(fn), argnums=pos)
            return lambda *args: tuple(grad_fn(*args))
        if kind == "func.vjp":
            gos, diff_out = tuple(self.gos), self.diff_out

            def vjp(*args):
                def restricted(*xs):
                    full = list(args)
                    for j, x in zip(pos, xs):
                        full[j] = x
                    outs = as_tuple(fn(*full))
                    return tuple(outs[i] for i in diff_out)

                _, pullback = torch.func.vjp(restricted, *[args[j] for j in pos])
                return tuple(pullback(gos))

            return vjp
        if kind == "jacrev":
            diff_out = self.diff_out

            def tensors_only(*args):
                outs = as_tuple(fn(*args))
                return tuple(outs[i] for i in diff_out)

            jac = torch.func.jacrev(tensors_only, argnums=pos)
            return lambda *args: tuple(t for row in jac(*args) for t in row)
        if kind == "vmap":
            _, in_dims = funcchecks.batched_inputs(s)
            mapped = torch.func.vmap(fn, in_dims=tuple(in_dims))
            return lambda *args: as_tuple(mapped(*args))
        raise ValueError(kind)

    def transform_inputs(self, kind):
        s = self.subject
        if kind == "vmap":
            return tuple(funcchecks.batched_inputs(s)[0])
        return tuple(x.detach() if is_tensor(x) else x for x in s.fresh())

    def eager(self, kind):
        """The eager result of a transform (cached): a tuple of tensors."""
        if kind not in self._eager:
            torch.manual_seed(self.subject.opts["seed"])
            self._eager[kind] = _detached(self.transform(kind, self.subject.fn)(*self.transform_inputs(kind)))
        return self._eager[kind]


def setup_for(subject):
    setup = getattr(subject, "compile_setup", None)
    if setup is None:
        setup = Setup(subject)
        subject.compile_setup = setup
    return setup


def _detached(values):
    return tuple(v.detach() if is_tensor(v) else v for v in as_tuple(values))


# -- comparing ------------------------------------------------------------------------------


def tolerance(values):
    scale = 0.0
    for v in values:
        if is_tensor(v) and v.numel() and (v.is_floating_point() or v.is_complex()):
            scale = max(scale, float(v.detach().abs().max()))
    return 1e-7 * (1.0 + scale)


def worst_difference(got, want):
    """(max |Δ|, position of the worst pair, flat index) over pairs of tensors."""
    worst, where, flat = 0.0, None, None
    for k, (a, b) in enumerate(zip(got, want)):
        if not (is_tensor(a) and is_tensor(b)):
            continue
        if a.shape != b.shape:
            return float("inf"), k, None
        d = (a.double() - b.double()).abs().reshape(-1) if a.numel() else torch.zeros(1, dtype=torch.float64)
        if d.numel() and bool(torch.isnan(d).any()):
            return float("nan"), k, int(torch.isnan(d).nonzero()[0])
        m = float(d.max())
        if m > worst:
            worst, where, flat = m, k, int(d.argmax())
    return worst, where, flat


def agree(got, want):
    diff, _, _ = worst_difference(got, want)
    return diff == diff and diff <= tolerance(want)


def pattern(setup, kind, got, want):
    """How compiled gradients differ from eager ones: {kind, text, ...}."""
    if kind in ("autograd", "func.grad", "func.vjp"):
        through = setup.through()
        if through is not None and agree(got, through) and not agree(through, want):
            return {"kind": "backward_dropped",
                    "text": "compiled gradients equal autograd through forward: your custom backward is not used"}
    if any(is_tensor(w) and bool(w.abs().max() > 0) for w in want if is_tensor(w) and w.numel()) \
            and all(not is_tensor(g) or not g.numel() or float(g.abs().max()) == 0.0 for g in got):
        return {"kind": "zero", "text": "the compiled gradients are all zero"}
    num = sum(float((g.double() * w.double()).sum()) for g, w in zip(got, want) if is_tensor(g) and is_tensor(w)
              and g.shape == w.shape)
    den = sum(float((w.double() * w.double()).sum()) for w in want if is_tensor(w))
    if den > 0:
        c = num / den
        scaled = tuple(w * c if is_tensor(w) else w for w in want)
        if abs(c - 1.0) > 1e-6 and agree(got, scaled):
            return {"kind": "scale", "factor": c,
                    "text": "compiled = %s × eager (a constant factor)" % fmt(c)}
    return None


# -- the checks -----------------------------------------------------------------------------


def _names(setup, kind):
    """Names of the compared tensors, in order."""
    s = setup.subject
    ins = [s.in_names[j] for j in s.grad_pos]
    if kind == "vmap":
        return ["output %d" % i for i in range(len(setup.outs))]
    if kind == "jacrev":
        return ["d(output %d)/d(%s)" % (o, n) for o in setup.diff_out for n in ins]
    return ins


def check_func_grad(subject, result):
    """Eager torch.func.grad against eager autograd: does backward behave the same under torch.func?"""
    setup = setup_for(subject)
    try:
        got = setup.eager("func.grad")
    except RuntimeError as e:
        if "setup_context" in str(e):
            return {"status": "skipped", "message": "torch.func cannot use this code: " + first_line(str(e))[:300]}
        raise
    want = setup.grads
    details = {"compared": "torch.func.grad(f) vs torch.autograd.grad", "tolerance": tolerance(want)}
    diff, k, flat = worst_difference(got, want)
    details["max_difference"] = diff
    if diff == diff and diff <= details["tolerance"]:
        return {"status": "pass", "details": details}
    name = _names(setup, "func.grad")[k] if k is not None else "an input"
    summary = ("✗ torch.func.grad gives a different gradient for %s than autograd (max |Δ| %s): backward is not "
               "torch.func-safe" % (name, fmt(diff)))
    message = ("Under torch.func the same backward gives a different gradient: backward probably reads tensors "
               "kept on ctx attributes instead of save_for_backward (or saved in forward instead of setup_context), "
               "mutates saved tensors in place, or uses .data/.item().")
    details["input"] = name
    return _fail(subject, "func_mismatch", summary, message, details)


def check_compiled(subject, result, kind, backend):
    setup = setup_for(subject)
    details = {"backend": backend, "compared": "%s vs eager" % COMPARED[kind]}
    if kind == "autograd":
        want = setup.grads
    else:
        try:
            want = setup.eager(kind)
        except RuntimeError as e:
            return {"status": "skipped", "message": "eager %s raises: %s" % (kind, first_line(str(e))[:300])}
    unsupported = None
    try:
        got, seconds = _run_compiled(setup, kind, backend, fullgraph=True)
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 - eager ran this code: what fails here is compiling it
        unsupported = _reason(e)
        details["graph_break"] = unsupported
        try:
            got, seconds = _run_compiled(setup, kind, backend, fullgraph=False)
        except MemoryError:
            raise
        except Exception as e2:  # noqa: BLE001
            details["torch_message"] = _reason(e2, 800)
            return _unsupported(subject, kind, backend, details, _reason(e2), fails=True)
    details["compile_seconds"] = seconds
    details["tolerance"] = tolerance(want)
    diff, k, flat = worst_difference(got, want)
    details["max_difference"] = diff
    if diff == diff and diff <= details["tolerance"]:
        if unsupported is not None:
            return _unsupported(subject, kind, backend, details, unsupported, fails=False)
        return {"status": "pass", "details": details}
    return _mismatch(subject, setup, kind, backend, details, got, want, k, flat)


def _run_compiled(setup, kind, backend, fullgraph):
    """(results, seconds of the first call: compilation included)."""
    s = setup.subject
    torch._dynamo.reset()
    if backend == "inductor":
        _quiet_inductor()
    t = time.perf_counter()
    if kind == "autograd":
        compiled = torch.compile(s.fn, backend=backend, fullgraph=fullgraph, dynamic=False)
        got = setup.autograd(compiled)
    else:
        compiled = torch.compile(setup.transform(kind, s.fn), backend=backend, fullgraph=fullgraph, dynamic=False)
        torch.manual_seed(s.opts["seed"])
        got = _detached(compiled(*setup.transform_inputs(kind)))
    seconds = time.perf_counter() - t
    torch._dynamo.reset()
    return got, seconds


def _quiet_inductor():
    """Compile in this process: no pool of compile workers forked from a run."""
    try:
        import torch._inductor.config as config

        config.compile_threads = 1
    except Exception:
        pass


def _reason(e, limit=300):
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    head = lines[0] if lines else type(e).__name__
    explanation = next((ln for ln in lines if ln.startswith("Explanation:")), None)
    reason = "%s: %s" % (type(e).__name__, head)
    if explanation and explanation not in head:
        reason += " (%s)" % explanation[len("Explanation:"):].strip()
    return reason[:limit]


def _unsupported(subject, kind, backend, details, reason, fails):
    what = COMPARED[kind]
    if fails:
        summary = "⚠ torch.compile cannot run %s with backend=%s: %s" % (kind if kind != "autograd" else "f",
                                                                       backend, reason)
        message = ("%s raised inside torch.compile, with and without fullgraph; eager runs it. The gradients "
                   "under compilation are not checked." % what)
    else:
        summary = ("⚠ torch.compile breaks the graph (%s, backend=%s): %s; with the graph break the gradients "
                   "match" % (kind, backend, reason))
        message = ("With fullgraph=True torch.compile refuses the code; without it the code around the break runs "
                   "eagerly, and the gradients then match eager ones. The part that breaks is not compiled.")
    details["reason"] = reason
    return {"status": "fail", "verdict": "compile_unsupported", "message": summary, "details": details,
            "_outcome": Outcome("fail", "compile_unsupported", summary, message,
                                location=subject.reporter.location_for("forward"))}


def _mismatch(subject, setup, kind, backend, details, got, want, k, flat):
    names = _names(setup, kind)
    name = names[k] if k is not None and k < len(names) else "an output"
    found = pattern(setup, kind, got, want)
    what = ("outputs" if kind == "vmap" else "gradients")
    if found is not None:
        details["pattern"] = found
        how = found["text"]
    elif flat is not None and is_tensor(want[k]):
        shape = tuple(want[k].shape)
        where = _unravel(flat, shape)
        details["worst_element"] = {"tensor": name, "index": list(where),
                            "eager": float(want[k].reshape(-1)[flat]), "compiled": float(got[k].reshape(-1)[flat])}
        how = "worst |Δ| %s at %s%s (eager %s, compiled %s)" % (
            fmt(details["max_difference"]), name, idx(where), fmt(details["worst_element"]["eager"]),
            fmt(details["worst_element"]["compiled"]))
    else:
        how = "max |Δ| %s" % fmt(details["max_difference"])
    label = "torch.compile" if kind == "autograd" else "torch.compile(torch.func.%s(f))" % kind.split(".")[-1]
    summary = "✗ %s changes the %s of %s (backend=%s): %s" % (label, what, name, backend, how)
    fix = {"autograd": "Compare with torch.compile(..., backend=\"eager\") to find whether Dynamo or the backend "
                       "changes them, and report it to PyTorch with this Function.",
           "vmap": "torch.compile does not use the Function's vmap staticmethod (%s): keep vmap of this Function "
                   "outside the compiled region, or call it through a @torch._dynamo.disable wrapper."
                   % _ISSUES["vmap"]}.get(kind, "Under a compiled torch.func transform Dynamo inlines forward and "
                                                "differentiates its ops (%s). Call the Function through a "
                                                "@torch._dynamo.disable wrapper inside the compiled region (the "
                                                "gradients then match), or differentiate the compiled function "
                                                "with torch.autograd.grad, which keeps the custom backward."
                                                % _ISSUES.get(kind, "torch"))
    message = "%s gives %s that differ from eager %s. %s" % (
        COMPARED[kind], what, "autograd" if kind == "autograd" else kind, fix)
    if details.get("graph_break"):
        message += " (With fullgraph=True it breaks the graph: %s.)" % details["graph_break"]
    location = subject.reporter.location_for("vmap" if kind == "vmap" else "backward")
    return {"status": "fail", "verdict": "compile_mismatch", "message": summary, "details": details,
            "_outcome": Outcome("fail", "compile_mismatch", summary, message, location=location)}


def _unravel(flat, shape):
    out = []
    for s in reversed(shape):
        out.append(flat % s if s else 0)
        flat = flat // s if s else 0
    return tuple(reversed(out))


def _fail(subject, verdict, summary, message, details):
    return {"status": "fail", "verdict": verdict, "message": summary, "details": details,
            "_outcome": Outcome("fail", verdict, summary, message,
                                location=subject.reporter.location_for("backward"))}


def _checks():
    table = {"func.grad": check_func_grad}
    for kind, backends, _ in KINDS:
        for backend in backends:
            table[check_name(kind, backend)] = (
                lambda subject, result, kind=kind, backend=backend: check_compiled(subject, result, kind, backend))
    return table


CHECKS = _checks()
LABELS = dict((name, "comparing %s with eager" % name) for name in CHECKS)
