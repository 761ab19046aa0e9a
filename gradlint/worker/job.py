"""One run, from request to result: load the target, make its inputs, run the checks.

The plan of checks: forward, which inputs move the outputs, input mutation, randomness,
backward determinism, gradcheck, gradgradcheck, forward AD (when the Function has a jvp),
and for a call site whose inputs were promoted to float64, the call as written. A failing
check skips the checks that depend on it.

gradcheck is then repeated on other input draws (another seed of the synthesized inputs,
or the call's random inputs drawn again), and ``verdict.conclude`` decides from all of it.
"""

import os
import sys
import time
import warnings

import torch

from . import branches, checks, compiled, customops, explore, funcchecks, gradchecks, precision, resolution
from .inputs import caller_inputs, doc_examples, test_callers
from .introspect import defines, is_once_differentiable
from .loading import Loader
from .outcome import Outcome, Reporter, is_users
from .protocol import CALL_SITE_OPTIONS, DEFAULT_OPTIONS, base_result
from .subject import prepare
from .inputs.synthesis import shape_strategies, synthesize
from .tensors import as_tuple, max_abs_diff
from .text import exc_text, first_line
from .userframes import user_roots
from .verdict import apply_outcome, conclude, inputs_unfit

CHECK_LABELS = {
    "forward": "running forward",
    "sensitivity": "checking which inputs move the outputs",
    "input_mutation": "checking that forward leaves its inputs alone",
    "random_op": "checking that forward is deterministic",
    "nondeterminism": "checking that backward is deterministic",
    "gradcheck": "gradcheck",
    "gradgradcheck": "gradgradcheck",
    "forward_ad": "forward-mode gradcheck",
    "as_written": "gradcheck as written (original dtypes)",
    "opcheck": "torch.library.opcheck (schema, autograd registration, fake tensor, AOT dispatch)",
    "vmap": "torch.func.vmap against a loop of single calls",
    "jacrev": "torch.func.jacrev against autograd",
}
CHECKS = {
    "forward": checks.check_forward,
    "sensitivity": checks.check_sensitivity,
    "input_mutation": checks.check_input_mutation,
    "random_op": checks.check_random_op,
    "nondeterminism": checks.check_nondeterminism,
    "gradcheck": gradchecks.check_gradcheck,
    "gradgradcheck": gradchecks.check_gradgradcheck,
    "forward_ad": gradchecks.check_forward_ad,
    "as_written": gradchecks.check_as_written,
    "opcheck": customops.check_opcheck,
    "vmap": funcchecks.check_vmap,
    "jacrev": funcchecks.check_jacrev,
}
# asked for with options.compile / options.dtype: compiled.py, precision.py
CHECKS.update(compiled.CHECKS)
CHECKS.update(precision.CHECKS)
CHECK_LABELS.update(compiled.LABELS)
CHECK_LABELS.update(precision.LABELS)
# a failure of one of these makes forward AD meaningless too
_FORWARD_CHECKS = ("forward", "input_mutation", "random_op", "nondeterminism")
# checks that need only forward to work: a failing gradcheck does not skip them, nor do they skip others
_FORWARD_ONLY = ("forward_ad", "opcheck", "vmap", "jacrev") + tuple(compiled.CHECKS)
_DOMAIN_NAMES = {"spd": "symmetric positive definite", "symmetric": "symmetric", "tril": "lower-triangular",
                 "triu": "upper-triangular",
                 "by_name": "structured (by parameter name: Cholesky factors lower-triangular, covariances "
                            "positive definite, other square matrices symmetric)"}


class Job(object):
    def __init__(self, req, emit):
        self.req = req
        self.emit = emit
        self.result = base_result(req)
        self.target = dict(req.get("target") or {})
        self.kind = self.target.get("kind")
        self.reporter = Reporter(user_roots(req), self.result["target"], req.get("limits") or {})
        self.provisional_sent = False
        self.checks = []
        self.timings = self.result["timings"]
        self.warnings = []
        self.opts = dict(DEFAULT_OPTIONS)
        self.explicit = {}
        self.once_differentiable = False
        self.redraw = None  # seed -> another draw of the inputs (a Loaded), or None when they cannot differ
        self.recipe = None  # how synthesized inputs are made
        self.mode_trials = []  # the subjects of the modes whose gradcheck passed (explore.other_modes)
        self.structure = None  # a structure square inputs keep (symmetric, tril) once a retry found one
        self.borrowed = None  # the Borrowed the inputs come from, when a caller of the project gave them
        self.tests_may_run = True  # a worker may run the project's tests to find inputs
        self.float64_error = None  # forward's error in float64, when it is checked in float32 instead
        self.refining = False  # an argument sets how far forward's approximation goes (``resolution.refines``)
        limit = (req.get("limits") or {}).get("timeout_s")
        # the time the run may spend before it must stop looking further (its verdict is kept)
        self.deadline = time.monotonic() + 0.8 * float(limit) if limit else None

    def progress(self, message, percentage=None):
        ev = {"event": "progress", "message": message}
        if percentage is not None:
            ev["percentage"] = int(max(0, min(100, percentage)))
        self.emit(ev)

    # -- the pipeline -----------------------------------------------------------------

    def run(self):
        t0 = time.perf_counter()
        try:
            # sparse tensors are checked where they are built: one a backward builds from
            # values of the wrong size (a reduction over the wrong dim) then raises there,
            # instead of crashing torch's engine later (SIGSEGV, with no line to point at)
            with torch.sparse.check_sparse_tensor_invariants():
                self._run()
        except Outcome as oc:
            apply_outcome(self.result, oc)
        finally:
            self.timings["total_s"] = time.perf_counter() - t0
        self.result["checks"] = self.checks
        self.result["warnings"] = self.warnings[:20]
        compile_s = sum(c["details"].get("compile_seconds", 0.0) for c in self.checks if c["name"] in compiled.CHECKS)
        if compile_s:
            self.timings["compile_s"] = compile_s
        if self.result["status"] is None:
            conclude(self.result, self.checks, self.opts)
            if self.source == "synthesized":
                inputs_unfit(self.result)
        self.result["notes"] = list(dict.fromkeys(self.result["notes"]))  # each note once
        for rec in self.checks:
            rec.pop("_outcome", None)
        return self.result

    def _run(self):
        req = self.req
        self._read_options()
        path = (req.get("module") or {}).get("path")
        if not path or not isinstance(path, str):
            raise Outcome("error", "bad_request", "✗ bad request: module.path is missing")
        path = os.path.abspath(path)
        self.reporter.path = path
        if not os.path.isfile(path):
            raise Outcome("error", "bad_request", "✗ no such file: %s" % path)
        if self.kind not in ("function_class", "callable", "call_site", "custom_op"):
            raise Outcome("error", "bad_request", "✗ bad request: unknown target kind %r" % (self.kind,))
        if req.get("cwd"):
            os.chdir(req["cwd"])
        sys.argv = [path]
        self._set_sys_path()

        torch.manual_seed(self.opts["seed"])
        loader = Loader(req, self.result, self.reporter)
        t = time.perf_counter()
        self.progress("importing %s" % os.path.basename(path), 2)
        try:
            loaded = loader.load()
        finally:
            self.timings["import_s"] = time.perf_counter() - t
        self.reporter.fclass = loaded.fclass
        t = time.perf_counter()
        subject = resolution.in_float32(self, self._subject(loader, loaded), loader, loaded)
        self.timings["inputs_s"] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            # an argument sets a solver's tolerance: ``explore.refined`` may overturn a first ✗ (send none early)
            self.refining = resolution.refines(self, loaded)
            resolution.step_for_precision(self, subject)
            self.run_checks(subject)
            subject = explore.callers_instead(self, subject, loader, loaded)
            subject = explore.refined(self, subject, loader, loaded)
            subject = explore.finer_step(self, subject)
            subject = resolution.coarser_step(self, subject)
            subject = self.next_cases(subject, loader, loaded)
            subject = self.structured_inputs(subject, loader, loaded)
            self.other_draws(subject)
            explore.tie_draws(self, subject, loader, loaded)
            self.other_shapes(loader, loaded)
            explore.more_inputs(self, subject, loader, loaded)
            branches.other_inputs(self, subject, loaded)
            explore.other_modes(self, subject, loader, loaded)
            branches.taken_in_modes(self, loaded, self.mode_trials)
            self.result["inputs"] = subject.infos  # the retries' trial inputs are not the report's
            self.progress("done", 100)
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
        validate_options(self.opts)
        n = self.opts.get("num_threads")
        if n:
            torch.set_num_threads(int(n))

    def _set_sys_path(self):
        entries = [os.path.abspath(p) for p in (self.req.get("sys_path") or []) if isinstance(p, str)]
        for p in reversed(entries):
            while p in sys.path:
                sys.path.remove(p)
            sys.path.insert(0, p)

    # -- inputs -----------------------------------------------------------------------

    def _subject(self, loader, loaded):
        spec = self.req.get("inputs")
        seed = self.opts["seed"]
        if loaded.raw_inputs is not None:
            self._call_site_options(loaded.call_kwargs)
        if loaded.raw_inputs is not None and (not spec or spec.get("kind") == "call_site"):
            raw, source, synth = loaded.raw_inputs, "call_site", None
            self.redraw = loader.recapture
        else:
            spec = spec or {"kind": "synthesize"}
            kind = spec.get("kind")
            if kind == "expression":
                raw = as_tuple(loader.evaluate(spec.get("source"), seed))
                source, synth = "expression", None
                self.redraw = lambda s: loaded.with_inputs(as_tuple(loader.evaluate(spec.get("source"), s)))
            elif kind == "synthesize":
                raw, synth, source = self.synthesize_or_borrow(loaded, spec)
            elif kind == "call_site":
                raise Outcome("error", "bad_request", "✗ bad request: call_site inputs need a call_site target")
            else:
                raise Outcome("error", "bad_request", "✗ bad request: unknown inputs kind %r" % (kind,))
        self.source = source
        subject = self.prepare_subject(loaded.with_inputs(raw), loader, synth)
        self.result["inputs"] = subject.infos
        self.result["options"] = dict(self.opts)
        if synth is not None:
            self.result["synthesis"] = synth
        return subject

    def synthesize_or_borrow(self, loaded, spec):
        """(inputs, synthesis info, source): synthesized from the signature; failing that,
        captured from the package's own code that calls the Function."""
        try:
            raw, synth, recipe = synthesize(loaded.fn, loaded.fclass, spec, self.opts, self.reporter)
        except Outcome as oc:
            if oc.status != "no_inputs" or loaded.fclass is None or oc.summary.startswith("abstract"):
                raise
            tried = []
            borrowed = self.borrow(loaded, tried)
            if borrowed is None:
                if tried:
                    self.result["notes"].append("no caller in the package gave inputs: " + "; ".join(tried)[:600])
                raise
            seed = self.opts["seed"]
            self.borrowed = borrowed
            self.redraw = lambda s: loaded.with_inputs(borrowed.make(s))
            self.result["notes"].append("inputs captured from %s, which calls %s.apply (no synthesized "
                                        "input worked: %s)" % (borrowed.where, loaded.fclass.__name__,
                                                               oc.summary.split(" (", 1)[0].split(";")[0]))
            return borrowed.make(seed), borrowed.info(seed), "caller"
        self.recipe = recipe
        self.redraw = lambda s: loaded.with_inputs(self.recipe.make(s))
        if recipe.float64_error:  # forward takes float32 only: its inputs stay float32
            self.float64_error = recipe.float64_error
            self.opts["promote"] = False
        return raw, synth, "synthesized"

    def borrow(self, loaded, tried, tests_first=False):
        """Inputs from the project's code that calls the Function (its callers, then its tests, then
        the examples in its docstrings; the tests first with ``tests_first``: a caller is run on
        synthesized values, which a question about values does not get past; and the tests and
        examples first when the caller is a thin wrapper that hands its made-up tensors on unchanged):
        a ``Borrowed``, or None (``tried`` gets why each caller did not)."""
        name = loaded.fclass.__name__
        self.progress("looking for inputs in the code that calls %s" % name, 10)
        seen = {}
        borrowed = caller_inputs.capture(loaded.fn, loaded.fclass, self.opts, tried, seen)
        thin = borrowed if borrowed is not None and borrowed.passes_through else None
        if (borrowed is None or tests_first or thin) and seen.get("root") and self.tests_may_run:
            self.progress("looking for inputs in the tests that reach %s" % name, 12)
            borrowed = test_callers.capture(loaded.fn, loaded.fclass, seen["params"], seen["root"], seen["names"],
                                            self.opts, time.monotonic() + 20.0, tried) or borrowed
        if (borrowed is None or borrowed is thin) and seen.get("root") and self.tests_may_run:
            self.progress("looking for inputs in the examples of docstrings that reach %s" % name, 14)
            borrowed = doc_examples.capture(loaded.fn, loaded.fclass, seen["params"], seen["names"], self.opts,
                                            time.monotonic() + 15.0, tried) or borrowed
        return borrowed

    @property
    def checks(self):
        return self._checks

    @checks.setter
    def checks(self, records):
        """The run's check records. Starting them again (other inputs, another step, a mode) takes
        back a provisional ✗ sent for the old ones: a run stopped later ends as a timeout, not
        with a verdict its own next steps were overturning (float32 rounding, unfit inputs)."""
        if not records and self.provisional_sent:
            self.emit({"event": "result", "result": None, "provisional": True})
            self.provisional_sent = False
        self._checks = records

    def time_left(self, needed=0.0):
        """Whether the run may start a step expected to take ``needed`` seconds."""
        return self.deadline is None or time.monotonic() + needed < self.deadline

    def provisional(self, rec):
        """gradcheck failed: the verdict is known now, before the failure is analysed. It is sent at
        once, so that a run stopped at its time limit while localising still says ✗ (the final
        result replaces it) — unless an argument sets a solver's tolerance: then the failure may be
        the solver's, which ``explore.refined`` finds out only later (a run stopped before that is a
        timeout, not a ✗: torch-sla's batched solve at its docstring's singular matrix)."""
        if self.refining:
            return
        result = dict(self.result)
        rec = dict({"seconds": 0.0, "verdict": None}, **rec)
        result["checks"] = [dict((k, v) for k, v in c.items() if k != "_outcome") for c in self.checks] + [rec]
        result.update(status="fail", verdict=rec.get("verdict") or "gradcheck_failed", failed_check=rec["name"],
                      summary=rec["message"], message=rec.get("details", {}).get("torch_message"),
                      notes=list(self.result["notes"]) + ["the run ended before this failure was analysed: "
                                                          "torch's report only"])
        self.emit({"event": "result", "result": result, "provisional": True})
        self.provisional_sent = True

    def prepare_subject(self, loaded, loader, synth=None):
        subject = prepare(loaded.fn, loaded.fclass, loaded.names, loaded.raw_inputs, self.source, self.opts,
                          self.reporter, synth=synth, grad_outputs=loaded.grad_outputs, notes=self.result["notes"])
        subject.on_failure = self.provisional
        if self.structure:
            explore.keep_structure(subject, *self.structure)
        subject.captured = loader.captured
        subject.raw = loaded.raw_inputs
        subject.op = loaded.op
        self.precision_hooks(subject, getattr(loader, "module", None))
        # a sampler is checked with its random numbers fixed; a call site is checked as written
        subject.may_reseed = self.source != "call_site"
        self.result["inputs"] = subject.infos
        return subject

    def precision_hooks(self, subject, module):
        """What the precision verdict needs beyond the subject: the declared reference and
        other draws of the inputs (float64 copies, as the subject's)."""
        ref = self.opts.get("reference")
        if isinstance(ref, str) and self.opts.get("dtype"):
            if module is None or not callable(_resolve(module, ref)):
                raise Outcome("error", "bad_request", "✗ bad request: the reference `%s` is not a function of the "
                                                      "checked module" % ref)
            ref = _resolve(module, ref)
        subject.reference_fn = ref if callable(ref) else None

        def draw_inputs(k):
            if self.redraw is None:
                return None
            drawn = self.redraw(self.opts["seed"] + k)
            if drawn is None or _same_inputs(drawn.raw_inputs, subject.raw):
                return None
            return prepare(drawn.fn, drawn.fclass, drawn.names, drawn.raw_inputs, self.source, self.opts,
                           self.reporter).base

        subject.draw_inputs = draw_inputs

    def _call_site_options(self, kwargs):
        ignored = []
        for k, v in kwargs.items():
            if k == "raise_exception":
                continue
            if k in CALL_SITE_OPTIONS and k not in self.explicit:
                self.opts[k] = v
            elif k not in CALL_SITE_OPTIONS:
                ignored.append(k)
        if ignored:
            self.result["notes"].append("call options not re-checked: " + ", ".join(sorted(ignored)))

    # -- checks -----------------------------------------------------------------------

    def plan(self, subject):
        """[(check name, None or why it is skipped)] in order."""
        opts = self.opts
        variant = self.result["target"].get("variant")
        once = subject.fclass is not None and is_once_differentiable(subject.fclass)
        want_gg = opts["gradgradcheck"]
        if want_gg == "auto":
            if self.kind == "call_site":
                gg_skip = None if variant == "gradgradcheck" else "not requested by this gradcheck call"
            else:
                gg_skip = "backward is @once_differentiable" if once else None
        else:
            gg_skip = None if want_gg else "disabled by options"
        want_fw = opts["check_forward_ad"]
        run_fw = (subject.fclass is not None and defines(subject.fclass, "jvp")) if want_fw == "auto" else bool(want_fw)
        plan = [("forward", None), ("sensitivity", None)]
        no_autograd = None
        if subject.op is not None and not customops.has_autograd(subject.op):
            no_autograd = "the op registers no gradient formula (register_autograd): only opcheck runs"
        # a custom op declares what it mutates: opcheck's schema test checks that, not this
        if opts["check_input_mutation"] and subject.op is None:
            plan.append(("input_mutation", None))
        if opts["check_random"]:
            plan.append(("random_op", None))
        if opts["check_nondeterminism"]:
            plan.append(("nondeterminism", no_autograd))
        plan.append(("gradcheck", no_autograd))
        plan.append(("gradgradcheck", no_autograd or gg_skip))
        if run_fw:
            plan.append(("forward_ad", None))
        if funcchecks.declares_func_support(subject):
            plan += [("vmap", None), ("jacrev", None)]
        if subject.op is not None and opts["opcheck"]:
            plan.append(("opcheck", None))
        promoted = any(i.get("promoted_from") and i.get("requires_grad") for i in subject.infos)
        if promoted and self.kind == "call_site" and opts["check_low_precision"]:
            plan.append(("as_written", None))
        plan += precision.plan(subject, opts)
        if opts["compile"]:
            plan += compiled.plan(subject, opts)
        self.once_differentiable = once
        return plan

    def run_checks(self, subject):
        plan = self.plan(subject)
        blocked = None  # why the remaining checks are skipped
        fw_blocked = None  # forward_ad only depends on forward
        first_blocked = None  # the precision verdict depends on first-order gradients only
        for step, (name, skip) in enumerate(plan):
            # forward AD and opcheck depend only on forward, not on backward's results
            reason = fw_blocked if name in _FORWARD_ONLY else first_blocked if name in precision.CHECKS \
                else blocked
            if reason or skip:
                rec = self._skip(name, reason or skip)
                if name == "gradgradcheck" and not reason and self.once_differentiable \
                        and self.opts["gradgradcheck"] == "auto":
                    rec["verdict"] = "not_twice_differentiable"
                continue
            self.progress(CHECK_LABELS.get(name, name), 5 + 80.0 * step / len(plan))
            rec = self.run_check(name, subject)
            if rec["status"] in ("fail", "error") and name not in _FORWARD_ONLY:
                blocked = "skipped: %s %s" % (name.replace("_", " "), "failed" if rec["status"] == "fail" else "raised")
                if name in _FORWARD_CHECKS:
                    fw_blocked = blocked
                if name in _FORWARD_CHECKS or name == "gradcheck":
                    first_blocked = blocked

    def next_cases(self, subject, loader, loaded):
        """A parametrized test whose case proves nothing here (the Jacobian is zero, e.g.
        ``k=0``) is checked on its next case instead, up to a few."""
        for _ in range(6):
            sensitivity = next((c for c in self.checks if c["name"] == "sensitivity"), None)
            if self.source != "call_site" or sensitivity is None or sensitivity["status"] != "pass" \
                    or sensitivity["details"].get("responds_to"):
                return subject
            case = dict(self.result["target"].get("case") or {})
            loaded = loader.recapture(self.opts["seed"], loader.case_index + 1) if case else None
            if loaded is None:
                return subject
            self.result["notes"].append("the case %s proves nothing (no output moves with the inputs); "
                                        "checked the next case" % ", ".join("%s=%s" % kv for kv in case.items()))
            self.checks = []
            subject = self.prepare_subject(loaded, loader)
            self.result["inputs"] = subject.infos
            self.run_checks(subject)
        return subject

    def structured_inputs(self, subject, loader, loaded):
        """gradcheck failed on general square matrices: does it pass on symmetric positive definite,
        symmetric or lower-triangular ones? Then the backward assumes that structure (a covariance,
        a Cholesky factor); the run is checked on such inputs, and says so. The structured values come
        from the run's own recipe when it made the inputs, from the caller's when a caller of the
        project was run on made-up values (``sqrtm(a)``), and are read from the project's own values
        otherwise (``kept_structure``)."""
        first = next((c for c in self.checks if c["name"] == "gradcheck"), None)
        if first is None or first["status"] != "fail" \
                or first.get("verdict") != "wrong_gradient" or (first["details"].get("pattern") or {}).get("kind") \
                in ("scale", "sign", "zero", "swap", "transposed", "dropped"):
            return subject
        if self.recipe is not None:
            if not any(len(s) >= 2 and s[-1] == s[-2] for s in self.recipe.shapes):
                return subject
            # synthesized: structured recipes of the run's own
            sources = [(domain, recipe, recipe.only) for domain, recipe in explore.structured_recipes(self.recipe)]
            given = "general square matrix inputs"
        elif self.borrowed is not None and self.borrowed.recipe is not None:
            # a caller run on made-up values of its own (``sqrtm(a)`` with a general square ``a``): the
            # caller runs again on structured matrices of its own; the target's square inputs keep it
            sources = [(domain, self.borrowed.with_recipe(recipe), None)
                       for domain, recipe in explore.structured_recipes(self.borrowed.recipe)]
            given = "general square matrices given to %s" % self.borrowed.where
        else:
            return self.kept_structure(subject, loader, loaded, first)
        for domain, source, only in sources:  # a Recipe or a Borrowed: ``make(seed)`` draws the inputs
            if not self.time_left(5.0):
                break
            try:
                trial = self.prepare_subject(loaded.with_inputs(source.make(self.opts["seed"])), loader)
            except Exception:  # noqa: BLE001 - the values do not fit (the caller or the target refuses them)
                continue
            if subject.reseeded:
                trial.reseed()
            structured = explore.keep_structure(trial, domain, only)
            self.run_check("forward", trial, record=False)
            if self.run_check("gradcheck", trial, record=False)["status"] != "pass":
                continue
            self.result["notes"].append(
                "gradcheck fails for %s (%s) and passes for %s ones%s: the backward assumes that structure, so "
                "the check uses such inputs" % (given, (first.get("message") or "").lstrip("✗ "),
                                                _DOMAIN_NAMES[domain], " (%s)" % structured if structured else ""))
            if self.recipe is not None:
                self.recipe = source  # (self.redraw draws from self.recipe)
                if self.result.get("synthesis"):
                    self.result["synthesis"]["domain"] = domain
            else:
                self.borrowed = source
                self.redraw = lambda s: loaded.with_inputs(source.make(s))
            self.checks = []
            self.structure = (domain, only)
            subject = self.prepare_subject(loaded.with_inputs(source.make(self.opts["seed"])), loader)
            self.run_checks(subject)
            return subject
        self.result["inputs"] = subject.infos
        return subject

    def kept_structure(self, subject, loader, loaded, first):
        """gradcheck failed on the project's own inputs, where its square matrices are symmetric
        (or triangular): gradcheck moves each entry on its own and leaves that structure, which a
        backward written for it need not follow (an eigensolver's gradient under the symmetric
        convention). Checked again with the structure the project's values have kept on every
        call; the run goes on with it when that passes, and says so."""
        found = {}
        for j in subject.grad_pos:
            x = subject.base[j].detach()
            if x.layout != torch.strided or x.dim() < 2 or x.shape[-1] != x.shape[-2] or x.shape[-1] < 2:
                continue
            if torch.equal(x, x.mT):
                found.setdefault("symmetric", set()).add(subject.in_names[j])
            elif torch.equal(x, x.tril()):
                found.setdefault("tril", set()).add(subject.in_names[j])
            elif torch.equal(x, x.triu()):
                found.setdefault("triu", set()).add(subject.in_names[j])
        for domain, names in found.items():
            if not self.time_left(5.0):
                break
            trial = self.prepare_subject(loaded.with_inputs(subject.raw), loader)
            if subject.reseeded:
                trial.reseed()
            done = explore.keep_structure(trial, domain, names)
            if self.run_check("gradcheck", trial, record=False)["status"] != "pass":
                continue
            self.result["notes"].append(
                "gradcheck fails when %s moves entry by entry (%s) and passes with %s kept %s, as the project's "
                "own values are%s: the backward assumes that structure, so the check keeps it" % (
                    ", ".join(sorted(names)), (first.get("message") or "").lstrip("✗ "), ", ".join(sorted(names)),
                    _DOMAIN_NAMES[domain], " (%s)" % done if done else ""))
            self.checks = []
            self.structure = (domain, names)
            subject = self.prepare_subject(loaded.with_inputs(subject.raw), loader)
            self.run_checks(subject)
            return subject
        return subject

    def other_shapes(self, loader, loaded):
        """gradcheck failed on synthesized inputs with no clear pattern (not a factor, a sign, a
        zero, a swap or a transpose): does it pass at other shapes forward takes? Then the
        failure belongs to these shapes (broadcasting or batching a caller never uses, or a
        backward that mishandles them): inconclusive, with both shapes, never a plain pass."""
        first = next((c for c in self.checks if c["name"] == "gradcheck"), None)
        if self.recipe is None or first is None or first["status"] != "fail" \
                or first.get("verdict") != "wrong_gradient" or (first["details"].get("pattern") or {}).get("kind"):
            return
        started, tried = time.monotonic(), [list(self.recipe.shapes)]
        base = [tuple(x) for x in self.recipe.shapes]
        # first the same shapes with one input un-batched (a vector where a batch of them broadcast)
        unbatched = [base[:i] + [base[i][1:]] + base[i + 1:] for i in range(len(base)) if len(base[i]) >= 2]
        for shapes in unbatched + shape_strategies(len(base)):
            if shapes in tried or len(tried) > 4 or time.monotonic() - started > 15.0:
                continue
            square = any(len(x) >= 2 and x[-1] == x[-2] for x in shapes)
            domains = [self.recipe.domain] + (["by_name"] if square and self.recipe.domain != "by_name" else [])
            for domain in domains:  # with the structure square matrices' names ask for, too
                recipe = self.recipe.with_shapes(shapes, domain)
                try:
                    trial = self.prepare_subject(loaded.with_inputs(recipe.make(self.opts["seed"])), loader)
                except Exception:  # noqa: BLE001 - shapes forward or prepare rejects
                    break
                if self.run_check("forward", trial, record=False)["status"] != "pass":
                    break
                if shapes not in tried:
                    tried.append(shapes)
                rec = self.run_check("gradcheck", trial, label="gradcheck (other shapes)", record=False)
                if rec["status"] == "pass":
                    rec["details"]["shapes"] = [list(x) for x in shapes]
                    rec["details"]["failing_shapes"] = [list(x) for x in self.recipe.shapes]
                    self.checks.append(rec)
                    return
        self.result["notes"].append("gradcheck fails at %d shape set%s forward takes" % (
            len(tried), "" if len(tried) == 1 else "s"))
        if loaded.fclass is None:
            return
        try:  # the inputs the project's own code passes: the domain it was written for
            borrowed = self.borrow(loaded, [])
            trial = self.prepare_subject(loaded.with_inputs(borrowed.make(self.opts["seed"])), loader) if borrowed else None
        except Exception:  # noqa: BLE001 - a caller that does not reach it again
            trial = None
        if trial is None or self.run_check("forward", trial, record=False)["status"] != "pass":
            return
        rec = self.run_check("gradcheck", trial, label="gradcheck (callers' inputs)", record=False)
        if rec["status"] == "pass":
            rec["details"]["caller"] = borrowed.where
            rec["details"]["failing_shapes"] = [list(x) for x in self.recipe.shapes]
            self.checks.append(rec)

    def other_draws(self, subject):
        """gradcheck again on other draws of the inputs: the first draw may sit on a kink.

        Synthesized inputs get a second draw always (and a third when the two disagree);
        a call's or a declaration's own inputs only when gradcheck failed on them, to tell a
        wrong gradient from an unlucky point.
        """
        first = next((c for c in self.checks if c["name"] == "gradcheck"), None)
        if first is None or first["status"] not in ("pass", "fail") or self.redraw is None:
            return
        wanted = int(self.opts.get("draws") or 1)
        if wanted < 2 or (first["status"] == "pass" and self.source not in ("synthesized", "caller")):
            return
        seed = self.opts["seed"]
        outcomes = [first["status"]]
        for k in range(1, 3):
            if k == 2 and outcomes[0] == outcomes[1]:
                break
            self.progress("gradcheck on draw %d" % (k + 1), 88 + 5 * k)
            try:
                drawn = self.redraw(seed + k)
            except Outcome as oc:
                self.result["notes"].append("no other draw of the inputs: %s" % oc.summary)
                return
            except Exception as e:
                self.result["notes"].append("no other draw of the inputs: %s: %s"
                                            % (type(e).__name__, first_line(exc_text(e, 200))))
                return
            if drawn is None or _same_inputs(drawn.raw_inputs, subject.raw):
                if k == 1:
                    self.result["notes"].append("the inputs are the same on every draw (not random): one draw")
                return
            other = prepare(drawn.fn, drawn.fclass, drawn.names, drawn.raw_inputs, self.source, self.opts,
                            self.reporter, grad_outputs=drawn.grad_outputs)
            other.captured = subject.captured
            if self.structure:
                explore.keep_structure(other, *self.structure)
            if subject.reseeded:
                other.reseed()
            self.run_check("forward", other, record=False)
            rec = self.run_check("gradcheck", other, label="gradcheck (draw %d)" % (k + 1))
            rec["details"]["draw"] = {"seed": seed + k, "inputs": other.infos}
            outcomes.append(rec["status"])

    def _skip(self, name, reason):
        rec = {"name": name, "status": "skipped", "verdict": None, "seconds": 0.0, "message": reason, "details": {}}
        self.checks.append(rec)
        return rec

    def run_check(self, name, subject, label=None, record=True):
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\..*")
            warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*")
            try:
                rec = CHECKS[name](subject, self.result)
            except Outcome as oc:
                if oc.status not in ("fail", "error"):
                    raise  # memory, no_inputs: the run ends here
                rec = {"status": oc.status, "verdict": oc.verdict, "message": oc.summary,
                       "details": dict(oc.extra), "_outcome": oc}
            except Exception as e:
                rec = self._exception_record(e, name)
        self._keep_warnings(caught, name)
        rec["name"] = label or name
        rec["seconds"] = time.perf_counter() - t
        rec.setdefault("verdict", None)
        rec.setdefault("message", None)
        rec.setdefault("details", {})
        out = dict((k, rec[k]) for k in ("name", "status", "verdict", "seconds", "message", "details"))
        if "_outcome" in rec:
            out["_outcome"] = rec["_outcome"]
        if record:
            self.checks.append(out)
        return out

    def _exception_record(self, e, name):
        """The user's exception fails the check; gradlint's own skips it (the others run)."""
        if is_users(e, self.reporter):
            oc = self.reporter.user_exception(e, "check", name.replace("_", " "))
            return {"status": "error", "verdict": "exception", "message": oc.summary,
                    "details": {"exception": oc.extra.get("exception")}, "_outcome": oc}
        import traceback

        text = "%s: %s" % (type(e).__name__, first_line(exc_text(e, 300)))
        self.result["notes"].append("gradlint could not run the %s check here (%s); the other checks ran"
                                    % (name.replace("_", " "), text))
        return {"status": "skipped", "message": "gradlint could not run this check: " + text,
                "details": {"internal_error": "".join(traceback.format_exception(type(e), e, e.__traceback__))[-3000:]}}

    def _keep_warnings(self, caught, check):
        seen = set((w["message"], w["category"]) for w in self.warnings)
        for w in caught:
            key = (str(w.message)[:500], w.category.__name__)
            if key in seen:
                continue
            seen.add(key)
            self.warnings.append({"category": key[1], "message": key[0], "file": w.filename, "line": w.lineno,
                                  "check": check})


def _resolve(module, qualname):
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _same_inputs(a, b):
    try:
        return len(a) == len(b) and max_abs_diff(tuple(a), tuple(b)) == 0
    except Exception:
        return False


def validate_options(o):
    for k in ("eps", "atol", "rtol", "nondet_tol"):
        if isinstance(o[k], bool) or not isinstance(o[k], (int, float)) or not o[k] >= 0 or o[k] == float("inf"):
            raise Outcome("error", "bad_request", "✗ bad request: option %s must be a non-negative number" % k)
    if o["eps"] == 0:  # finite differences with a zero step are 0/0: every entry would "differ"
        raise Outcome("error", "bad_request", "✗ bad request: option eps must be a positive number")
    for k in ("seed", "worst_k", "slow_confirm_max_elements", "max_recompute_evals", "draws"):
        if isinstance(o[k], bool) or not isinstance(o[k], int):
            raise Outcome("error", "bad_request", "✗ bad request: option %s must be an integer" % k)
    for k in ("fast_mode", "gradgradcheck", "check_forward_ad"):
        if o[k] not in ("auto", True, False):
            raise Outcome("error", "bad_request", "✗ bad request: option %s must be \"auto\", true or false" % k)
    for k in ("strict", "opcheck", "opcheck_layouts"):
        if not isinstance(o[k], bool):
            raise Outcome("error", "bad_request", "✗ bad request: option %s must be true or false" % k)
    ref = o["reference"]
    if ref is not None and not isinstance(ref, str) and not callable(ref):
        raise Outcome("error", "bad_request", "✗ bad request: option reference must name a function")
    comp = o["compile"]
    if not isinstance(comp, bool) and not (isinstance(comp, list) and comp and set(comp) <= set(compiled.BACKENDS)):
        raise Outcome("error", "bad_request", "✗ bad request: option compile must be true, false or a list of %s"
                      % ", ".join(compiled.BACKENDS))
    if o["dtype"] is not None and o["dtype"] not in precision.DTYPES:
        raise Outcome("error", "bad_request", "✗ bad request: option dtype must be one of %s"
                      % ", ".join(precision.DTYPES))
    k = o["precision_factor"]
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not k >= 1:
        raise Outcome("error", "bad_request", "✗ bad request: option precision_factor must be a number ≥ 1")
    tests = o["opcheck_tests"]
    if tests is not None and (not isinstance(tests, list) or not set(tests) <= set(customops.OPCHECK_TESTS)):
        raise Outcome("error", "bad_request", "✗ bad request: option opcheck_tests must list some of %s"
                      % ", ".join(customops.OPCHECK_TESTS))
