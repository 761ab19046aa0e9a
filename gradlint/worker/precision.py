"""The precision-relative verdict (``options.dtype``): gradients at bfloat16/float16/float32
measured against float64, relative to PyTorch's own error at that dtype.

gradcheck proves the formula in float64 and says nothing about a bfloat16 kernel; a fixed
tolerance at bfloat16 is either flaky or blind. Kernel libraries compare against the error
of the same reference computed at the low precision (FlashAttention's tests: the kernel's
error at most 2× PyTorch's). This check does that for a Function:

- the **reference**: a declared plain-PyTorch function (``options.reference``), else autograd
  through the Function's forward (its custom backward bypassed) when that agrees with the
  Function's float64 gradients, else the Function's own float64 gradients;
- its **float64** gradients are the truth; the **same reference computed at the dtype** gives
  PyTorch's own error there (for the last kind, the float64 gradients at the rounded inputs,
  rounded: the error of an exactly rounded computation);
- the Function at the dtype **passes** when, for every output and every checked input,
  its max error ≤ k × the reference's + one unit of the dtype at the gradient's size
  (``finfo(dtype).eps × max|reference|``, the tolerance derived from the dtype);
- three **probes**, each pooled over up to four input draws: the inputs as drawn; small
  grad_outputs (× 2^-20, a mean over a million elements: float16 underflows there); large inputs
  (× 2^7, activation outliers: float16 overflows there). Powers of two keep the scaling
  exact. A probe where the float64 reference is not finite (off the domain), or the reference
  at the dtype is not finite (beyond the dtype's range), is skipped.

No finite differences are taken at the low precision: a fixed eps there is below the
dtype's resolution (jax-ml/jax#39821), and the float64 reference does not need one.
"""

import torch

from .checks import grad_outputs_for
from .outcome import Outcome
from .tensors import as_tuple, is_tensor
from .text import fmt
from .through_forward import through_forward

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
PROBES = (
    ("inputs as drawn", 1.0, 1.0),
    ("small grad_outputs (×2^-20)", 1.0, 2.0 ** -20),
    ("large inputs (×2^7)", 2.0 ** 7, 1.0),
)
DRAWS = 4
# exact rounding is a stricter yardstick than a PyTorch computation (a backward that rounds its
# saved tensors and a few intermediates is honest): four units of slack instead of one
EXACT_ROUNDING_UNITS = 4
_AGREE_ATOL, _AGREE_RTOL = 1e-5, 1e-3  # gradcheck's defaults: the reference computes the same gradient


def check_name(dtype_name):
    return "precision (%s)" % dtype_name


def plan(subject, opts):
    name = opts.get("dtype")
    return [(check_name(name), None)] if name else []


class Reference(object):
    """The computation whose own low-precision error is the yardstick."""

    def __init__(self, kind, fn, label):
        self.kind = kind  # "declared", "through_forward", "exact_rounding"
        self.fn = fn
        self.label = label


def choose_reference(subject, setup):
    """The declared reference, else autograd through forward when it computes the Function's
    gradients, else exact rounding of the Function's own float64 gradients."""
    declared = getattr(subject, "reference_fn", None)
    candidates = []
    if declared is not None:
        candidates.append(Reference("declared", declared, "the declared reference %s" % _name_of(declared)))
    through = through_forward(subject.fn, subject.op)
    if through is not None:
        candidates.append(Reference("through_forward", through, "autograd through forward"))
    notes = []
    for ref in candidates:
        try:
            outs, grads = setup.evaluate(ref.fn, setup.base, 1.0, None)
        except Exception as e:  # noqa: BLE001 - a forward autograd cannot go through
            notes.append("%s raised at float64 (%s)" % (ref.label, type(e).__name__))
            continue
        bad = _disagreement(grads, setup.truth_grads) or _disagreement(outs, setup.truth_outs)
        if bad is None:
            return ref, notes
        notes.append("%s differs from the Function at float64 (max |Δ| %s)" % (ref.label, fmt(bad)))
    return Reference("exact_rounding", None, "the Function's float64 gradients, exactly rounded"), notes


def _name_of(fn):
    return "`%s`" % (getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)


def _disagreement(got, want):
    """None when got ≈ want (gradcheck's tolerances), else the max |Δ|."""
    worst = 0.0
    bad = False
    for a, b in zip(got, want):
        if not (is_tensor(a) and is_tensor(b)):
            continue
        if a.shape != b.shape:
            return float("inf")
        d = (a.double() - b.double()).abs()
        if d.numel():
            worst = max(worst, float(d.max()))
            if bool((d > _AGREE_ATOL + _AGREE_RTOL * b.double().abs()).any()) or bool(torch.isnan(d).any()):
                bad = True
    return worst if bad else None


class Setup(object):
    """Evaluations of one subject at a dtype: fixed grad_outputs, the float64 truth."""

    def __init__(self, subject, base):
        self.subject = subject
        self.base = base
        outs = as_tuple(subject.call(subject.fresh()))
        self.diff_out = list(subject.diff_out)
        gen = torch.Generator().manual_seed(subject.opts["seed"] + 29)
        self.gos = grad_outputs_for([outs[i] for i in self.diff_out], gen)
        self.truth_outs, self.truth_grads = self.evaluate(subject.fn, base, 1.0, None)

    def evaluate(self, fn, inputs, go_scale, dtype, input_scale=1.0):
        """(differentiable outputs, gradients of the checked inputs) as float64, with the
        floating-point inputs and grad_outputs rounded to dtype (None: float64)."""
        s = self.subject
        args = []
        for j, v in enumerate(inputs):
            if is_tensor(v) and v.is_floating_point():
                v = v.detach() * input_scale if j in s.grad_pos else v.detach()
                if dtype is not None:
                    v = v.to(dtype)
                v = v.clone().requires_grad_(j in s.grad_pos)
            elif is_tensor(v):
                v = v.clone()
            args.append(v)
        torch.manual_seed(s.opts["seed"])
        outs = as_tuple(fn(*args))
        douts = [outs[i] for i in self.diff_out]
        gos = []
        for o, g in zip(douts, self.gos):
            g = g * go_scale
            if dtype is not None:
                g = g.to(dtype)
            gos.append(g.to(o.dtype))
        targets = [args[j] for j in s.grad_pos]
        grads = torch.autograd.grad(douts, targets, gos, allow_unused=True) if douts else [None] * len(targets)
        grads = tuple(torch.zeros(t.shape, dtype=torch.float64) if g is None else g.detach().double()
                      for t, g in zip(targets, grads))
        return tuple(o.detach().double() for o in douts), grads

    def exact_rounding(self, inputs, go_scale, dtype, input_scale):
        """The float64 Function at the inputs rounded to dtype, its results rounded to dtype."""
        rounded = tuple(v.detach().mul(input_scale if j in self.subject.grad_pos else 1.0).to(dtype).double()
                        if is_tensor(v) and v.is_floating_point() else v for j, v in enumerate(inputs))
        saved = self.gos
        # the grad_outputs the low-precision run sees are rounded too
        self.gos = [(g * go_scale).to(dtype).double() / go_scale for g in saved]
        try:
            outs, grads = self.evaluate(self.subject.fn, rounded, go_scale, None)
        finally:
            self.gos = saved
        return tuple(o.to(dtype).double() for o in outs), tuple(g.to(dtype).double() for g in grads)


def check_precision(subject, result, dtype_name):
    dtype = DTYPES[dtype_name]
    k = float(subject.opts.get("precision_factor") or 2.0)
    draws = [subject.base] + list(_other_draws(subject))
    setup = Setup(subject, tuple(x.detach() if is_tensor(x) else x for x in subject.fresh()))
    ref, notes = choose_reference(subject, setup)
    eps = float(torch.finfo(dtype).eps)
    names = ["output %d" % i for i in setup.diff_out] + [subject.in_names[j] for j in subject.grad_pos]
    probes, worst = [], None
    for label, in_scale, go_scale in PROBES:
        rows = [{"name": n, "error": 0.0, "reference_error": 0.0, "scale": 0.0} for n in names]
        used, skipped = 0, None
        for inputs in draws:
            try:
                truth = setup.evaluate(subject.fn, inputs, go_scale, None, in_scale)
            except Exception as e:  # noqa: BLE001 - off the Function's domain at this scale
                skipped = "the Function raises at float64 (%s)" % type(e).__name__
                continue
            if not _finite(truth):
                skipped = "the float64 results are not finite (off the domain)"
                continue
            if ref.kind == "exact_rounding":
                base = setup.exact_rounding(inputs, go_scale, dtype, in_scale)
                want = truth
            else:
                want = setup.evaluate(ref.fn, inputs, go_scale, None, in_scale)
                base = setup.evaluate(ref.fn, inputs, go_scale, dtype, in_scale)
            if not _finite(base):
                skipped = "the reference is not finite at %s (beyond its range)" % dtype_name
                continue
            got = setup.evaluate(subject.fn, inputs, go_scale, dtype, in_scale)
            for row, g, b, w in zip(rows, _flat(got), _flat(base), _flat(want)):
                row["error"] = max(row["error"], _max_err(g, w))
                row["reference_error"] = max(row["reference_error"], _max_err(b, w))
                row["scale"] = max(row["scale"], float(w.abs().max()) if w.numel() else 0.0)
            used += 1
        if not used:
            probes.append({"probe": label, "skipped": skipped})
            continue
        for row in rows:
            unit = eps * row["scale"] * (EXACT_ROUNDING_UNITS if ref.kind == "exact_rounding" else 1)
            row["allowed"] = k * row["reference_error"] + unit
            row["ratio"] = _ratio(row["error"], row["reference_error"], unit)
            row["passed"] = row["error"] <= row["allowed"]
            if worst is None or _badness(row) > _badness(worst[1]):
                worst = (label, row)
        probes.append({"probe": label, "draws": used, "input_scale": in_scale, "grad_output_scale": go_scale,
                       "tensors": rows})
    details = {"dtype": dtype_name, "factor": k, "reference": ref.kind, "reference_label": ref.label,
               "unit": eps, "probes": probes, "device": _device(subject), "tf32": _tf32()}
    if notes:
        details["reference_notes"] = notes
    if worst is None:
        return {"status": "skipped", "message": "no probe could be evaluated: %s" % probes[-1].get("skipped"),
                "details": details}
    label, row = worst
    details["worst_tensor"] = dict(row, probe=label)
    is_grad = row["name"] in [subject.in_names[j] for j in subject.grad_pos]
    what = ("gradient of %s" if is_grad else "value of %s") % row["name"]
    against = ("PyTorch's own %s computation" % dtype_name if ref.kind != "exact_rounding"
               else "an exactly rounded %s result" % dtype_name)
    if all(r["passed"] for p in probes for r in p.get("tensors", ())):
        message = "%s: every output and gradient within %s× the error of %s (worst: the %s, %s×, %s)" % (
            dtype_name, fmt(k), against, what, fmt(round(row["ratio"], 2)), label)
        return {"status": "pass", "message": message, "details": details}
    summary = ("✗ at %s the %s is %s× less accurate than %s (max |Δ| %s vs %s against float64, allowed %s×; %s)"
               % (dtype_name, what, fmt(row["ratio"]), against, fmt(row["error"]), fmt(row["reference_error"]),
                  fmt(k), label))
    message = ("The Function computed at %s differs from the float64 truth by more than %s× the error of %s "
               "(the reference: %s), plus one %s unit at the gradient's size. A backward that computes through "
               "lower-precision intermediates (float16 underflows below 6e-5 and overflows above 65504), or "
               "accumulates in the input dtype, does this: compute in float32 and cast the result."
               % (dtype_name, fmt(k), against, ref.label, dtype_name))
    loc = subject.reporter.location_for("backward" if is_grad else "forward")
    return {"status": "fail", "verdict": "precision_loss", "message": summary, "details": details,
            "_outcome": Outcome("fail", "precision_loss", summary, message, location=loc)}


def _other_draws(subject):
    draw = getattr(subject, "draw_inputs", None)
    if draw is None:
        return
    for k in range(1, DRAWS):
        try:
            inputs = draw(k)
        except Exception:  # noqa: BLE001 - a redraw that fails: fewer draws
            return
        if inputs is None:
            return
        yield inputs


def _flat(pair):
    outs, grads = pair
    return list(outs) + list(grads)


def _finite(pair):
    return all(bool(torch.isfinite(t).all()) for t in _flat(pair))


def _max_err(got, want):
    if got.shape != want.shape:
        return float("inf")
    if not got.numel():
        return 0.0
    d = (got - want).abs()
    if bool(torch.isnan(d).any()):
        return float("inf")
    return float(d.max())


def _ratio(error, reference_error, unit):
    if reference_error > 0:
        return error / reference_error
    return 0.0 if error == 0 else (error / unit if unit > 0 else float("inf"))


def _badness(row):
    return (not row["passed"], row["error"] / row["allowed"] if row["allowed"] > 0 else float("inf"))


def _device(subject):
    for v in subject.base:
        if is_tensor(v):
            return str(v.device)
    return "cpu"


def _tf32():
    """TF32 settings: on an Ampere+ GPU they make float32 matmuls and convolutions round
    inputs to 10 mantissa bits (float64 is never affected)."""
    try:
        return {"cuda_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                "cudnn": bool(torch.backends.cudnn.allow_tf32),
                "float32_matmul_precision": torch.get_float32_matmul_precision()}
    except Exception:  # noqa: BLE001
        return None


def _checks():
    return dict((check_name(name), (lambda subject, result, name=name: check_precision(subject, result, name)))
                for name in DTYPES)


CHECKS = _checks()
LABELS = dict((check_name(name), "%s gradients against float64, relative to PyTorch's own %s error" % (name, name))
              for name in DTYPES)
