"""Jacobians recomputed in slow mode, to find the worst entries behind a gradcheck failure.

Everything is reduced to real Jacobians ``J[out_real, in_real]``: a complex scalar
contributes two real coordinates (re, then im).
"""

import re

import torch

from .tensors import as_tuple, is_tensor, nparts, real_numel, realize, scalar, unravel
from .text import exc_text

def _snapshot(outputs, out_positions):
    """The outputs' values now: an output may be a view of the input being perturbed (as
    torch's gradcheck does, copy them before the input changes again)."""
    outs = as_tuple(outputs)
    return dict((o, realize(outs[o]).detach().clone()) for o in out_positions)


def numerical_columns(fn, inputs, j, eps, out_positions):
    """Central-difference Jacobian columns for input j: {o: tensor[n_out_real, n_in_real]}."""
    x = inputs[j]
    xd = x.detach()
    parts = nparts(x)
    cols = dict((o, []) for o in out_positions)
    # like torch: no torch.no_grad() here (the gradgradcheck function needs autograd)
    for k in range(x.numel()):
        idx = unravel(k, x.shape)
        orig = xd[idx].clone()
        for p in range(parts):
            d = eps if p == 0 else eps * 1j
            xd[idx] = orig + d
            plus = _snapshot(fn(*inputs), out_positions)
            xd[idx] = orig - d
            minus = _snapshot(fn(*inputs), out_positions)
            xd[idx] = orig
            for o in out_positions:
                cols[o].append((plus[o] - minus[o]) / (2 * eps))
    out = {}
    for o in out_positions:
        if cols[o]:
            out[o] = torch.stack(cols[o], dim=1)
        else:
            out[o] = None
    return out


_DISCONNECTED = ("differentiate twice", "does not require grad", "appears to not have been used")


def analytical_rows(fn, inputs, in_positions, o):
    """Reverse-mode Jacobian rows for output o: ({j: tensor[n_out_real, n_in_real]}, notes)."""
    notes = set()
    outs = as_tuple(fn(*inputs))
    out = outs[o]
    targets = [inputs[j] for j in in_positions]
    parts = nparts(out)
    n = out.numel()
    rows = dict((j, []) for j in in_positions)
    given = set()  # inputs backward returned a gradient for (not None) on some row
    answered = False  # some backward pass returned (rather than raising or being disconnected)
    for k in range(n):
        for p in range(parts):
            grads = None
            if out.requires_grad:
                g = torch.zeros(n, dtype=out.dtype, device=out.device)
                g[k] = 1 if p == 0 else 1j
                g = g.reshape(out.shape)
                try:
                    grads = torch.autograd.grad(out, targets, g, retain_graph=True, allow_unused=True)
                    answered = True
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
                if gr is not None:
                    given.add(j)
                rows[j].append(
                    torch.zeros(real_numel(t), dtype=torch.float64) if gr is None else realize(gr)
                )
    result = {}
    for j in in_positions:
        result[j] = torch.stack(rows[j], dim=0) if rows[j] else None
        if answered and j not in given:
            notes.add("none:%d" % j)  # backward returned None for input j (torch: no gradient at all)
    return result, notes


def forward_columns(fn, inputs, j, out_positions):
    """Forward-mode (jvp) Jacobian columns for input j."""
    import torch.autograd.forward_ad as fwAD

    x = inputs[j]
    parts = nparts(x)
    cols = dict((o, []) for o in out_positions)
    base = [t.detach() if is_tensor(t) else t for t in inputs]
    for k in range(x.numel()):
        for p in range(parts):
            tangent = torch.zeros(x.numel(), dtype=x.dtype, device=x.device)
            tangent[k] = 1 if p == 0 else 1j
            tangent = tangent.reshape(x.shape)
            with fwAD.dual_level():
                args = list(base)
                args[j] = fwAD.make_dual(base[j], tangent)
                outs = as_tuple(fn(*args))
                for o in out_positions:
                    tan = fwAD.unpack_dual(outs[o]).tangent
                    primal = outs[o]
                    if tan is None:
                        cols[o].append(torch.zeros(real_numel(primal), dtype=torch.float64))
                    else:
                        cols[o].append(realize(tan))
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
        self.blocks = {}
        self.too_large = False  # set by analyse: the failing block costs more than max_recompute_evals

    def cost(self, ins, outs):
        n = 0
        for j in ins:
            n += 2 * real_numel(self.inputs[j])
        if self.mode == "reverse":
            outs_t = as_tuple(self.fn(*self.inputs))
            for o in outs:
                n += real_numel(outs_t[o])
        else:
            for j in ins:
                n += real_numel(self.inputs[j])
        return n

    def pairs(self, ins, outs):
        """Returns {(o, j): (analytical, numerical)} real Jacobian blocks."""
        eps = self.opts["eps"]
        numerical = {}
        for j in ins:
            cols = numerical_columns(self.fn, self.inputs, j, eps, outs)
            for o in outs:
                numerical[(o, j)] = cols[o]
        analytical = {}
        if self.mode == "reverse":
            for o in outs:
                rows, notes = analytical_rows(self.fn, self.inputs, ins, o)
                self.notes |= notes
                for j in ins:
                    analytical[(o, j)] = rows[j]
        else:
            for j in ins:
                cols = forward_columns(self.fn, self.inputs, j, outs)
                for o in outs:
                    analytical[(o, j)] = cols[o]
        return dict((key, (analytical[key], numerical[key])) for key in numerical)

    def analyse(self, hint=None):
        """hint: (o, j) positions named by torch, or None. Returns (primary, failing_pairs)."""
        cap = self.opts["max_recompute_evals"]
        ins, outs = self.in_positions, self.out_positions
        if self.cost(ins, outs) > cap:
            if hint is None:
                self.too_large = True
                return None, []
            ins, outs = [hint[1]], [hint[0]]
            if self.cost(ins, outs) > cap:
                self.too_large = True
                return None, []
        blocks = self.pairs(ins, outs)
        self.blocks = blocks
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
        out0 = as_tuple(self.fn(*self.inputs))[o]
        err = torch.where(f["err"].isnan(), torch.full_like(f["err"], float("inf")), f["err"])
        err = torch.where(f["bad"], err, torch.full_like(err, -1.0))
        k = max(1, int(self.opts["worst_k"]))
        flat = err.reshape(-1)
        order = torch.argsort(flat, descending=True)[: min(k, f["failing_elements"])]
        n_in = f["a"].shape[1]
        worst = []
        for pos in order.tolist():
            r, c = divmod(pos, n_in)
            out_k, out_part = divmod(r, nparts(out0))
            in_k, in_part = divmod(c, nparts(x))
            in_index = unravel(in_k, x.shape)
            a = float(f["a"][r, c])
            n = float(f["n"][r, c])
            abs_err = abs(a - n)
            entry = {
                "input": self.in_names[j],
                "input_position": j,
                "input_index": list(in_index),
                "output": o,
                "output_name": self.out_names[o],
                "output_index": list(unravel(out_k, out0.shape)),
                "numerical": n,
                "analytical": a,
                "abs_error": abs_err,
                "rel_error": (abs_err / abs(n)) if n not in (0.0,) and n == n else None,
                "input_value": scalar(x.detach()[in_index]),
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
                    entry["kink_error"] = exc_text(e, 200)
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
                return float(realize(as_tuple(self.fn(*self.inputs))[o])[r])
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


_PAIR_RE = re.compile(
    r"Jacobian (computed with forward mode )?mismatch for output (\d+) "
    r"with respect to input (\d+)"
)


def parse_gradcheck_message(msg):
    """(output_idx, input_idx, part, forward_mode) from a GradcheckError, or None."""
    m = _PAIR_RE.search(msg)
    if not m:
        return None
    part = None
    if "imaginary part of complex" in msg:
        part = "imaginary"
    elif "real part of complex" in msg:
        part = "real"
    return int(m.group(2)), int(m.group(3)), part, bool(m.group(1))
