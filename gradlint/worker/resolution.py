"""A forward that computes at a lower precision than the float64 it is checked in.

gradcheck's finite differences take a step of 1e-6 on float64 inputs. A Function that casts its
inputs to float32 inside (``q.float()``, a mixed-precision kernel ported to CPU) returns values
on float32's grid, about 6e-8 of their size apart: a step of 1e-6 then moves the output by a few
grid points, and the central difference is noise of ~5% (a gradcheck that fails on a correct
backward, with left and right slopes that disagree like at a kink, though no kink is there).

- ``output_grain``: the coarsest floating dtype whose grid every output value lies on, when the
  inputs do not (float64 arithmetic lands on float32's grid about once in 2**29 values);
- ``step_for_precision`` (before the checks) and ``coarser_step`` (after a failed gradcheck, on
  inputs found since): such a forward is checked with finite differences that float32 resolves
  (a step of 1e-3 of the inputs' size, tolerances from forward's measured rounding), with a note
  saying why. A wrong backward fails
  there too (its error is of the gradient's size, not of the grid's). A forward on float16's or
  bfloat16's grid cannot be checked by finite differences at all: the failed gradcheck is set
  aside (the run is inconclusive, with the reason), never reported as a wrong gradient;
- ``noise``: a float64 forward whose output strays from a straight line at gradcheck's own step
  (a root finder, a bisection, a spike-time solver that resolves its output to ~1e-7) is checked at
  the step that noise allows (eps = noise^(1/3), atol ten times the noise over the step, rtol 5%),
  unless an argument sets the solver's tolerance (then ``explore.refined`` tightens it instead).
"""

import torch

from .explore import strip_mark
from .inputs import params as P
from .inputs.synthesis import float64_refused
from .tensors import as_tuple, is_tensor

FLOAT32_UNIT = 2.0 ** -24  # float32's unit roundoff
STEP = 1e-3  # relative to the inputs' size: float32 resolves a difference of 1e-3 to ~1e-4 of itself
RTOL = 1e-2
ROUNDING_FACTOR = 10.0  # atol: ten times the rounding noise forward shows, over the step
SLOW_INPUTS = 4096  # slow mode (the full Jacobian) up to this many input elements ...
SLOW_ENTRIES = 1_000_000  # ... and Jacobian entries: fast mode's projections pass errors below a coarse atol
JITTER_TRIES = 4
NOISE_DIRECTIONS = 3
NOISE_KEPT = 0.6  # of the second difference, left at half the step: noise (a curvature keeps a quarter)
NOISE_FLOOR = 1e-9  # of the outputs' size: a smooth curvature at eps=1e-6 is ~1e-12 of it, a solver's tolerance far above
MAX_NOISY_STEP = 1e-2  # of the inputs' size
NOISY_RTOL = 0.05  # a solver's root is its tolerance away from the exact one: so are its derivatives (diffcb
# checks with rtol 0.2 in its own tests); a wrong factor, sign or dropped term is off by far more
MIN_VALUES = 4  # fewer output values than this say nothing about a grid
GRIDS = (("bfloat16", torch.bfloat16), ("float16", torch.float16), ("float32", torch.float32))


def output_grain(subject):
    """"bfloat16", "float16" or "float32" when every finite non-zero value forward returns lies on
    that dtype's grid (integers excepted) while the inputs, nudged off every grid, do not; else None."""
    nudged = []
    for i, v in enumerate(subject.fresh()):
        if i in subject.grad_pos and v.dtype == torch.float64:
            v = (v.detach() * (1.0 + 2.0 ** -35)).requires_grad_(v.requires_grad)  # off float32's grid
        nudged.append(v)
    if not subject.grad_pos:
        return None
    with torch.no_grad():
        outs = as_tuple(subject.call(tuple(nudged)))
    values = []
    for k, o in enumerate(outs):
        if (subject.diff_out and k not in subject.diff_out) or not is_tensor(o) or o.dtype != torch.float64:
            continue
        flat = o.detach().reshape(-1)
        values.append(flat[torch.isfinite(flat) & (flat != 0) & (flat != flat.round())])
    if not values:
        return None
    values = torch.cat(values)
    if values.numel() < MIN_VALUES:
        return None
    for name, dtype in GRIDS:
        if bool((values.to(dtype).to(torch.float64) == values).all()):
            return name
    return None


def step_for_precision(job, subject):
    """Before the checks: a forward that returns float32's grid on float64 inputs is checked with
    finite differences float32 resolves from the start (no gradcheck at a step it cannot resolve,
    and no ✗ sent for one); so is a float64 forward whose output is noisy at gradcheck's step (it
    resolves its output only to a solver's tolerance: ``noise``), at a step chosen for that noise."""
    if job.float64_error:
        if _may_change_step(job, subject, torch.float32):
            _use_coarse(job, subject, "float32", None,
                        "forward raises in float64 (%s), so its inputs are float32" % job.float64_error)
        return
    if not _may_change_step(job, subject):
        return
    grain = _grain(subject)
    if grain == "float32":
        _use_coarse(job, subject, grain, None)
        return
    if grain is None and not job.refining:
        try:
            level = noise(subject)
        except Exception:  # noqa: BLE001 - forward raised: the checks will say so
            return
        if level is not None:
            _use_noisy(job, subject, level)


def noise(subject, directions=NOISE_DIRECTIONS):
    """The noise forward's outputs carry at gradcheck's step, or None when they carry none worth
    the name. Along random directions (each input element moved by eps), the second difference
    f(x+δ) + f(x-δ) - 2f(x) of a smooth forward is its curvature, ~eps² and small beside the first
    difference f(x+δ) - f(x-δ); a root finder's or a bisection's output moves in steps of its
    tolerance, and there the second difference is as large as the first. Curvature and noise are
    told apart by halving the step: a curvature's second difference shrinks 4×, noise's does not
    (sin(1e5·x) curves, and a finer step is its remedy, not a coarser one). The level is the
    largest second difference where it exceeds 1% of the first and ``NOISE_FLOOR`` of the outputs'
    size, when at half the step it is still more than ``NOISE_KEPT`` of it."""
    eps = float(subject.opts["eps"])
    with torch.no_grad():
        centre = as_tuple(subject.call(subject.fresh()))
    size = _largest(subject, centre)
    if size is None:
        return None
    level = _second_differences(subject, centre, size, eps, directions)
    if not level:
        return None
    half = _second_differences(subject, centre, size, eps / 2, directions, rough_only=False)
    return level if half > NOISE_KEPT * level else None


def _second_differences(subject, centre, size, step, directions, rough_only=True):
    """The largest |f(x+δ) + f(x-δ) - 2f(x)| along ``directions`` random sign directions of
    per-element length ``step`` (with ``rough_only``, only where it exceeds 1% of the first
    difference and ``NOISE_FLOOR`` of the outputs' size)."""
    gen = torch.Generator().manual_seed(int(subject.opts["seed"]) + 29)  # the same directions at each step
    found = 0.0
    for _ in range(directions):
        moved = {}
        base = subject.fresh()
        signs = {j: torch.randint(0, 2, base[j].shape, generator=gen).to(base[j].dtype) * 2 - 1
                 for j in subject.grad_pos}
        for direction in (1.0, -1.0):
            inputs = list(subject.fresh())
            for j in subject.grad_pos:
                v = inputs[j].detach()
                inputs[j] = (v + direction * signs[j] * step).requires_grad_(inputs[j].requires_grad)
            with torch.no_grad():
                moved[direction] = as_tuple(subject.call(tuple(inputs)))
        for k, c in enumerate(centre):
            if not _differentiable_output(subject, k, c):
                continue
            up, down = moved[1.0][k].detach(), moved[-1.0][k].detach()
            second = (up + down - 2 * c.detach()).abs()
            first = (up - down).abs()
            rough = torch.isfinite(second) & torch.isfinite(first)
            if rough_only:
                rough &= (second > 0.01 * first) & (second > NOISE_FLOOR * max(1.0, size))
            if bool(rough.any()):
                found = max(found, float(second[rough].max()))
    return found


def _use_noisy(job, subject, level):
    """Steps and tolerances for a forward with noise ``level``: the central difference's error is
    ~ level / eps from the noise and ~ eps² from the curvature, least near eps = level^(1/3); atol
    ten times the noise over the step, rtol ``NOISY_RTOL``."""
    eps = min(MAX_NOISY_STEP, max(float(job.opts["eps"]), level ** (1.0 / 3.0))) * _input_scale(subject)
    settings = {"eps": eps, "atol": max(float(job.opts["atol"]), ROUNDING_FACTOR * level / eps),
                "rtol": max(float(job.opts["rtol"]), NOISY_RTOL)}
    saved = _switch(job, settings)
    job.result["notes"].append(
        "forward's output is noisy at gradcheck's step (it strays %.2g from a straight line when its inputs move by "
        "eps: an iterative solver's tolerance?), so the run checks with eps=%.3g, atol=%.2g, rtol=%.2g; second order "
        "is not checked" % (level, settings["eps"], settings["atol"], settings["rtol"]))
    job.result["coarser_step"] = {"grain": "noise", "noise": level, "from": saved, "to": settings}


def _switch(job, settings):
    """The run's options become ``settings``, gradgradcheck off unless asked for (second
    differences of a rounded or noisy forward are rounding or noise again); the options replaced."""
    if job.opts.get("gradgradcheck") == "auto" and "gradgradcheck" not in job.explicit:
        settings["gradgradcheck"] = False
    saved = dict((k, job.opts[k]) for k in settings)
    job.opts.update(settings)
    return saved


def _input_scale(subject):
    """The largest |value| of the checked inputs, at least 1: steps are relative to it."""
    scale = 1.0
    for j in subject.grad_pos:
        v = subject.base[j].detach()
        if v.numel():
            scale = max(scale, float(v.abs().max()))
    return scale


def refines(job, loaded):
    """Does an argument set the approximation's extent (a tolerance, an iteration count)? Then
    ``explore.refined`` tightens it after a failure: a proof at full precision, not a looser one."""
    params = job.recipe.params if job.recipe is not None else None
    if params is None and loaded is not None:
        try:
            params = P.infer(loaded.fn, loaded.fclass)
        except Exception:  # noqa: BLE001 - a signature the inference cannot read
            params = None
    return any(getattr(p, "refines", False) for p in params or [])


def _differentiable_output(subject, k, o):
    return (is_tensor(o) and o.dtype == _checked_dtype(subject) and o.layout == torch.strided
            and (not subject.diff_out or k in subject.diff_out))


def _checked_dtype(subject):
    """float32 when the checked inputs are (a forward that refuses float64), else float64."""
    if subject.grad_pos and all(subject.base[j].dtype == torch.float32 for j in subject.grad_pos):
        return torch.float32
    return torch.float64


def _largest(subject, outs):
    sizes = [float(o.detach()[torch.isfinite(o.detach())].abs().max()) for k, o in enumerate(outs)
             if _differentiable_output(subject, k, o) and bool(torch.isfinite(o.detach()).any())]
    return max(sizes) if sizes else None


def coarser_step(job, subject):
    """After a failed gradcheck (the inputs changed since the first look, or the grain is coarser
    than float32): see the module docstring."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    if first is None or first["status"] != "fail" or not _may_change_step(job, subject):
        return subject
    grain = _grain(subject)
    if grain is None or first.get("verdict") == "surrogate_gradient":
        return subject  # a quantizer's flat steps are named as such already
    failed = strip_mark(first.get("message") or "")
    if grain != "float32":
        first.update(status="skipped", verdict=None,
                     message="gradcheck cannot check this forward: it returns values on %s's grid (it computes in "
                             "%s inside), so finite differences at any step are rounding (%s); check it at its "
                             "precision with `--dtype %s`" % (grain, grain, failed, grain))
        job.result["notes"].append("forward computes in %s inside: finite differences cannot resolve its gradient"
                                   % grain)
        job.result["coarser_step"] = {"grain": grain}
        return subject
    if _use_coarse(job, subject, grain, failed):
        job.checks = []
        job.run_checks(subject)
    return subject


def _may_change_step(job, subject, dtype=torch.float64):
    return (job.kind != "call_site" and not job.result.get("coarser_step") and job.time_left(8.0)
            and not any(k in job.explicit for k in ("eps", "atol", "rtol"))
            and subject.grad_pos and all(subject.base[j].dtype == dtype for j in subject.grad_pos))


def in_float32(job, subject, loader, loaded):
    """Inputs a test or a caller made in float32, which the run promotes to float64: when forward
    raises on the float64 copies with an error that says it does not take float64 (a float32
    buffer filled with float64's max, a dtype mismatch with a float32 weight) and runs on the
    inputs as they were made, those are checked (at float32's resolution: ``step_for_precision``)."""
    promoted = [i for i in subject.infos if i.get("promoted_from") == "float32" and i.get("requires_grad")]
    if job.kind == "call_site" or job.float64_error or not promoted or not job.opts.get("promote"):
        return subject
    error = _forward_error(subject)
    if error is None or not float64_refused(error):
        return subject
    job.opts["promote"] = False
    trial = job.prepare_subject(loaded.with_inputs(subject.raw), loader)
    if _forward_error(trial) is not None:
        job.opts["promote"] = True
        job.result["inputs"] = subject.infos  # the report's inputs again
        return subject
    job.float64_error = "%s: %s" % (type(error).__name__, str(error).strip().splitlines()[0][:200])
    return trial


def _forward_error(subject):
    try:
        with torch.no_grad():
            subject.call(subject.fresh())
    except Exception as e:  # noqa: BLE001 - the user's forward
        return e
    return None


def _grain(subject):
    try:
        return output_grain(subject)
    except Exception:  # noqa: BLE001 - forward raised on the nudged inputs: no claim
        return None


def _use_coarse(job, subject, grain, failed, why=None):
    """Switch the run's options to ``coarse_settings`` (with a note); False when forward raised."""
    try:
        settings = coarse_settings(subject)
    except Exception:  # noqa: BLE001 - forward raised here: the checks will say so
        return False
    saved = _switch(job, settings)
    shown = "eps=%g, atol=%.2g, rtol=%g%s" % (settings["eps"], settings["atol"], settings["rtol"],
                                             " in slow mode" if settings.get("fast_mode") is False else "")
    job.result["notes"].append(
        "%s: at eps=%g gradcheck's finite differences would be rounding noise%s, so the run checks with %s, the "
        "finest float32 resolves%s"
        % (why or "forward computes in float32 inside (every value it returns lies on float32's grid)",
           saved["eps"], " (%s)" % failed if failed else "", shown,
           "; second order is not checked (its differences round too)" if settings.get("gradgradcheck") is False
           else ""))
    job.result["coarser_step"] = {"grain": grain, "from": saved, "to": settings}
    if job.float64_error:
        job.result["coarser_step"]["float64_error"] = job.float64_error
    return True


def coarse_settings(subject):
    """A step float32 resolves (1e-3 of the inputs' size); tolerances of 1% relative and, absolute,
    ten times the rounding noise forward's outputs show over that step (``jitter``: an ill-conditioned
    forward, a row sum near zero, rounds far coarser than its output's grid); slow mode where the
    Jacobian is small enough (fast mode's normalised projections are smaller than such an atol)."""
    eps = STEP * _input_scale(subject)
    with torch.no_grad():
        outs = as_tuple(subject.call(subject.fresh()))
    atol = max(STEP, ROUNDING_FACTOR * jitter(subject, outs) / eps)
    ins = sum(subject.base[j].numel() for j in subject.grad_pos)
    entries = ins * sum(o.numel() for o in outs if is_tensor(o) and o.is_floating_point())
    settings = {"eps": eps, "atol": atol, "rtol": RTOL}
    if subject.opts.get("fast_mode") == "auto" and ins <= SLOW_INPUTS and entries <= SLOW_ENTRIES:
        settings["fast_mode"] = False
    return settings


def jitter(subject, outs, tries=JITTER_TRIES):
    """The largest change of any output when every input moves by a relative 2⁻³⁰ in random
    directions: far below any real change, so what moves is forward's own rounding (at least one
    grid step of the largest output)."""
    gen = torch.Generator().manual_seed(int(subject.opts["seed"]) + 7)
    found = 2 * FLOAT32_UNIT * (_largest(subject, outs) or 0.0)
    for _ in range(tries):
        nudged = []
        for i, v in enumerate(subject.fresh()):
            if i in subject.grad_pos:
                sign = torch.randint(0, 2, v.shape, generator=gen).to(v.dtype) * 2 - 1
                v = (v.detach() * (1.0 + sign * 2.0 ** -30)).requires_grad_(v.requires_grad)
            nudged.append(v)
        with torch.no_grad():
            moved = as_tuple(subject.call(tuple(nudged)))
        for k, (a, b) in enumerate(zip(outs, moved)):
            if _differentiable_output(subject, k, a):
                both = torch.isfinite(a) & torch.isfinite(b)
                if bool(both.any()):
                    found = max(found, float((a.detach() - b.detach())[both].abs().max()))
    return found

