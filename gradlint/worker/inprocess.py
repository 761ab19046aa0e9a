"""The runner's checks in the caller's own process, without the fork server.

``check(fn, inputs, options)`` runs the runner's plan (forward, input mutation,
randomness, backward determinism, gradcheck, gradgradcheck, forward AD) on a callable and
inputs given directly; ``run_request(req)`` runs a worker request (docs/run-result-schema.md)
the way a forked child would. Both return a run result and leave the process as they
found it: working directory, ``sys.argv``, ``sys.path``, the torch RNG, the torch thread
count and the modules already imported.

This is the seam ``gradlint.testing`` (``check_gradients``, the pytest plugin) uses; the
fork server never imports it. Like the rest of the worker it needs torch only.
"""

import contextlib
import os
import sys

import torch

from .introspect import def_of, param_names
from .job import Job
from .loading import Loaded
from .subject import prepare
from .torch_setup import remember_real_gradcheck


def _ignore(event):
    pass


class DirectJob(Job):
    """The runner's plan on a callable and its inputs, with no module to load.

    ``raw`` are the inputs as the caller passed them; their ``requires_grad`` says which
    are checked (``prepare`` copies them, promoted to float64 unless ``promote`` is off).
    ``raw=None`` synthesizes inputs from the signature, as the runner does.
    """

    def __init__(self, fn, fclass, raw, options, name=None, source="argument"):
        where = def_of(fclass.forward if fclass is not None else fn) or {}
        target = {"kind": "function_class" if fclass is not None else "callable",
                  "qualname": name or _name(fn, fclass)}
        if where.get("file"):
            target["file"] = where["file"]
            target["line"] = where.get("line")
        roots = [os.path.dirname(where["file"])] if where.get("file") else []
        Job.__init__(self, {"target": target, "options": options, "user_roots": roots + [os.getcwd()]},
                     _ignore)
        self.fn = fn
        self.fclass = fclass
        self.raw = None if raw is None else tuple(raw)
        self.source = source
        self.tests_may_run = False  # in the user's own process (a test session): never other tests

    def _run(self):
        self._read_options()
        self.reporter.path = self.target.get("file")
        self.reporter.fclass = self.fclass
        torch.manual_seed(self.opts["seed"])
        loaded = Loaded(self.fn, self.fclass, param_names(self.fn, self.fclass))
        raw, synth = self.raw, None
        if raw is None:
            raw, synth, self.source = self.synthesize_or_borrow(loaded, {"kind": "synthesize"})
            self.result["synthesis"] = synth
        subject = prepare(self.fn, self.fclass, loaded.names, raw, self.source,
                          self.opts, self.reporter, synth=synth, notes=self.result["notes"])
        subject.captured = None
        subject.raw = raw
        self.precision_hooks(subject, None)
        self.result["inputs"] = subject.infos
        self.result["options"] = dict(self.opts)
        self.run_checks(subject)
        self.other_draws(subject)


def _name(fn, fclass):
    if fclass is not None:
        return fclass.__qualname__
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def check(fn, raw, options=None, name=None):
    """The run result of the runner's plan on ``fn`` at ``raw`` inputs, in this process."""
    remember_real_gradcheck()
    fclass = getattr(fn, "__self__", None)
    if not (isinstance(fclass, type) and issubclass(fclass, torch.autograd.Function)):
        fclass = None
    with preserved_process(modules=False):
        return DirectJob(fn, fclass, raw, dict(options or {}), name).run()


def run_request(req):
    """The result of a worker request run in this process.

    The target's module is imported the way this process imports it, and reused when it
    already is (a second copy would have its own classes and registrations); a call site
    is captured by running its file afresh, as the worker does.
    """
    remember_real_gradcheck()
    req = dict(req)
    req["module"] = dict(req.get("module") or {}, reuse=True)
    job = Job(req, _ignore)
    job.tests_may_run = False  # in the user's own test session: never run other tests for inputs
    with preserved_process():
        return job.run()


@contextlib.contextmanager
def preserved_process(modules=True):
    """Put back what a run changes in the process: the torch RNG and thread count, and
    (``modules``: runs that import the user's code) cwd, argv, sys.path and sys.modules.

    While it runs, ``torch.manual_seed`` skips queueing seeds for device backends that
    are not initialized (see ``cheap_manual_seed``)."""
    cwd = os.getcwd()
    argv = list(sys.argv)
    path = list(sys.path)
    imported = dict(sys.modules) if modules else {}
    threads = torch.get_num_threads()
    devices = []
    if torch.cuda.is_initialized():
        devices = list(range(torch.cuda.device_count()))
    manual_seed = torch.manual_seed
    torch.manual_seed = cheap_manual_seed
    try:
        with torch.random.fork_rng(devices=devices):
            yield
    finally:
        torch.manual_seed = manual_seed
        if modules:
            if os.getcwd() != cwd:
                os.chdir(cwd)
            sys.argv[:] = argv
            sys.path[:] = path
            for name, module in imported.items():
                if sys.modules.get(name) is not module:
                    sys.modules[name] = module
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


_manual_seed = torch.manual_seed


def cheap_manual_seed(seed):
    """``torch.manual_seed`` for runs in this process: the checks seed before every
    forward, and torch's version costs about 1.5 ms a call when CUDA/XPU are not
    initialized (it formats the call stack to queue a seed for their lazy start). Here
    the CPU generator is seeded, and the devices only when already initialized; the RNG
    state is put back after the run anyway."""
    if torch.cuda.is_initialized() or getattr(torch, "xpu", None) is not None and torch.xpu.is_initialized():
        return _manual_seed(seed)
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return _manual_seed(seed)
    return torch.default_generator.manual_seed(int(seed))
