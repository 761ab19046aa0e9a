"""A second opinion for inputs too large for a full Jacobian: signed random directions.

On large inputs only gradcheck's fast mode runs, and fast mode probes the Jacobian with
*non-negative* random vectors u, v: v·J·u. When J's entries alternate in sign (filter banks,
finite differences, anything with a zero mean response) v·J·u nearly cancels, and its
tolerance grows with sum(u)·sum(v): a backward off by a factor 2 then passes (measured on
pytorch-wavelets' INV_J2PLUS with 3×5×64×64 inputs). This probe uses unit *Gaussian* u
(per input) and v (over the outputs), so nothing cancels systematically, compares
v·(backward)·u with the central difference of v·forward along u, and reports a mismatch
only when two independent directions both disagree beyond ``10·atol + rtol·|numerical|``, also
once the step is halved and the two differences extrapolated (Richardson: a forward that curves
sharply on the step's scale agrees then; a wrong backward does not).
"""

import torch

from .outcome import Outcome
from .tensors import as_tuple, is_tensor

PAIRS = 2


def _unit(like, gen):
    v = torch.randn(like.shape, generator=gen, dtype=like.dtype)
    n = v.norm()
    return v / n if float(n) > 0 else v


def _plain(t):
    return is_tensor(t) and t.layout == torch.strided and t.is_floating_point()


def probe(subject, spec):
    """A failure record when backward disagrees with forward along random signed directions, else None."""
    fn = spec["fn"]
    opts = subject.opts
    atol, rtol, eps = float(opts["atol"]), float(opts["rtol"]), float(opts["eps"])
    for j in spec["in_positions"]:
        found = []
        for k in range(PAIRS):
            gen = torch.Generator().manual_seed(int(opts["seed"]) + 101 + k)
            inputs = list(spec["fresh"]())
            x = inputs[j]
            if not _plain(x) or not x.numel():
                break
            outs = as_tuple(fn(*inputs))
            out_pos = [o for o in spec["out_positions"] if o < len(outs) and _plain(outs[o])
                       and outs[o].requires_grad]
            if not out_pos:
                return None
            u = _unit(x, gen)
            vs = [_unit(outs[o], gen) for o in out_pos]
            grads = torch.autograd.grad([outs[o] for o in out_pos], [x], vs, allow_unused=True)
            analytical = 0.0 if grads[0] is None else float((grads[0] * u).sum())
            h = eps * max(1.0, x.numel() ** 0.5)  # about eps per element, as gradcheck steps
            numerical = _central(fn, inputs, j, x, u, h, out_pos, vs, opts)
            if abs(analytical - numerical) <= 10 * atol + rtol * abs(numerical):
                break
            # the central difference's own error shrinks 4x with a step half as long: extrapolated
            # (Richardson), a curving forward agrees, a wrong backward does not
            half = _central(fn, inputs, j, x, u, h / 2, out_pos, vs, opts)
            extrapolated = (4 * half - numerical) / 3
            if abs(analytical - extrapolated) <= 10 * atol + rtol * abs(extrapolated):
                break
            found.append((analytical, extrapolated))
        if len(found) == PAIRS:
            return _failure(subject, spec, j, found)
    return None


def _central(fn, inputs, j, x, u, h, out_pos, vs, opts):
    """v·(forward(x + h·u) - forward(x - h·u)) / 2h, the RNG reseeded for each call."""
    with torch.no_grad():
        plus = list(inputs)
        minus = list(inputs)
        plus[j] = x.detach() + h * u
        minus[j] = x.detach() - h * u
        torch.manual_seed(int(opts["seed"]))
        up = as_tuple(fn(*plus))
        torch.manual_seed(int(opts["seed"]))
        down = as_tuple(fn(*minus))
        return sum(float(((up[o] - down[o]) * v).sum()) for o, v in zip(out_pos, vs)) / (2 * h)


def _failure(subject, spec, j, found):
    name = spec["in_names"][j] if j < len(spec["in_names"]) else "input %d" % j
    ratios = [a / n for a, n in found if n != 0]
    pattern = ""
    if len(ratios) == len(found) and ratios and all(abs(r - ratios[0]) <= 0.01 * abs(ratios[0]) for r in ratios):
        c = ratios[0]
        pattern = ": wrong sign (analytical = -numerical)" if abs(c + 1) < 0.01 else (
            ": analytical = %.3g × numerical (a constant factor)" % c if abs(c) > 1e-6 else
            ": analytical gradient is zero (a detached or missing term)")
    a, n = found[0]
    summary = ("✗ Jacobian mismatch for %s along random directions%s (v·J·u: numerical %.4g, analytical %.4g)"
               % (name, pattern, n, a))
    message = ("The inputs are too large for a full Jacobian, and gradcheck's fast mode (non-negative probes) "
               "passed; along %d random signed directions backward and central differences of forward disagree "
               "for %s beyond atol=%g + rtol=%g·|numerical|." % (len(found), name, subject.opts["atol"],
                                                                 subject.opts["rtol"]))
    details = {"input": name, "directional": [{"analytical": a2, "numerical": n2} for a2, n2 in found]}
    return {"status": "fail", "verdict": "wrong_gradient", "message": summary, "details": details,
            "_outcome": Outcome("fail", "wrong_gradient", summary, message,
                                location=subject.reporter.location_for("backward"))}
