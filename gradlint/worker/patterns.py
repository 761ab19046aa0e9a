"""What a Jacobian mismatch looks like, in one line: the pattern behind a wrong backward.

From the analytical (A) and numerical (N) Jacobian blocks already recomputed for the
report: a None from backward for an input the output depends on (a dropped gradient), A = c·N
for one constant c (a missing factor; c = -1 is a sign flip), A = 0 (a detached or missing term), two inputs' gradients swapped, a transposed gradient, or
a reduction over the wrong dim (backward links elements along one dim, forward along another),
a missing term (only the elementwise part of the derivative, only the cross-element part, or a
rank-one difference: a term through a mean, norm or normaliser). ``None`` when no simple pattern
explains the mismatch.
"""

import torch

from .tensors import unravel


# a "factor" within 1% of 1 is what an approximation's error looks like (an iteration cut off, a series
# truncated: gradchecks' APPROXIMATE), not a factor missing from a formula
NEAR_ONE = 1e-2


def _close(a, b, atol, rtol):
    if a is None or b is None or a.shape != b.shape:
        return False
    return bool(((a - b).abs() <= 10 * atol + 10 * rtol * b.abs()).all())


def _factor_text(c):
    if abs(c - 1.0) < 0.01:
        return "%.4g" % c  # (a factor this near 1 shown as "1" says nothing)
    for whole in (2, 3, 4, 0.5, 0.25, 1.5):
        if abs(c - whole) <= 1e-3 * abs(whole):
            return ("%g" % whole)
    if abs(c - round(c)) < 1e-3 and abs(c) < 1e6:
        return "%d" % round(c)
    return "%.3g" % c


def dropped(name):
    """The pattern of an input backward returns None for while the output depends on it."""
    return {"kind": "dropped", "input": name,
            "short": "backward returns None for `%s`, but the output depends on `%s`" % (name, name),
            "text": "backward returns None for `%s` (no gradient), but the output depends on `%s`: its "
                    "gradient is dropped" % (name, name)}


def classify(primary, blocks, in_names, inputs, atol, rtol, none_inputs=()):
    """A dict ``{"kind", "text", ...}`` for the failing pair ``primary``, or None. ``none_inputs``:
    positions backward returned None for."""
    o, j = primary["o"], primary["j"]
    a, n = primary["a"], primary["n"]
    name = in_names[j]
    n_scale = float(n.abs().max()) if n.numel() else 0.0
    if n_scale <= 10 * atol:
        return None  # numerical is zero: the analytical side is simply wrong
    if j in none_inputs:
        return dropped(name)
    if float(a.abs().max()) <= atol:
        return {"kind": "zero", "short": "analytical gradient is zero (a detached or missing term)",
                "text": "the gradient of %s is zero: a detached or missing term in backward" % name}
    swapped = _swapped(o, j, blocks, in_names, atol, rtol)
    if swapped is not None:
        return swapped
    denom = float((n * n).sum())
    if denom > 0:
        c = float((a * n).sum()) / denom
        if _close(a, c * n, atol, rtol) and abs(c - 1.0) > NEAR_ONE:
            if abs(c + 1.0) <= 1e-3:
                return {"kind": "sign", "factor": -1.0, "short": "wrong sign (analytical = -numerical)",
                        "text": "the gradient of %s has the wrong sign (analytical = -numerical)" % name}
            return {"kind": "scale", "factor": c,
                    "short": "analytical = %s × numerical (a constant factor)" % _factor_text(c),
                    "text": "analytical = %s × numerical for %s: a constant factor is missing or extra"
                            % (_factor_text(c), name)}
    transposed = _transposed(a, n, inputs[j], atol, rtol)
    if transposed:
        return {"kind": "transposed", "short": "the gradient is transposed",
                "text": "the gradient of %s is transposed" % name}
    x = inputs[j]
    if a.shape[0] == a.shape[1] and a.shape[0] > 1 and is_same_numel(x, a):
        wrong_dim = _wrong_dim(a, n, tuple(x.shape), atol)
        if wrong_dim is not None:
            used, meant = wrong_dim
            return {"kind": "wrong_dim", "dims": [used, meant],
                    "short": "a reduction over the wrong dim (backward couples elements along dim %d, forward "
                             "along dim %d)" % (used, meant),
                    "text": "backward combines the elements of %s along dim %d, but the output depends on them "
                            "along dim %d: a sum, mean or softmax over the wrong dim" % (name, used, meant)}
    term = _missing_term(a, n, primary["bad"], name, atol, rtol,
                         tuple(x.shape) if is_same_numel(x, a) and x.dim() >= 1 else None)
    if term is not None:
        return term
    return None


def is_same_numel(x, block):
    return hasattr(x, "numel") and not x.is_complex() and x.numel() == block.shape[1]


def _couplings(block, shape, atol):
    """The dims along which a square block (output shaped like the input) links an output element
    to *other* input elements: {dim} when every such link differs from the diagonal in that dim
    only; None when there are none or they mix dims."""
    eye = torch.eye(block.shape[0], dtype=torch.bool)
    rows, cols = torch.nonzero((block.abs() > 100 * atol) & ~eye, as_tuple=True)
    if not rows.numel():
        return None
    dims = set()
    for r, c in zip(rows.tolist()[:2000], cols.tolist()[:2000]):
        ir, ic = unravel(r, shape), unravel(c, shape)
        differ = [d for d in range(len(shape)) if ir[d] != ic[d]]
        if len(differ) != 1:
            return None
        dims.add(differ[0])
    return dims if len(dims) == 1 else None


def _wrong_dim(a, n, shape, atol):
    """(dim backward couples along, dim forward couples along) when they differ: a reduction over
    the wrong dim; else None."""
    if len(shape) < 2:
        return None
    meant, used = _couplings(n, shape, atol), _couplings(a, shape, atol)
    if meant is None or used is None or meant == used:
        return None
    return next(iter(used)) - len(shape), next(iter(meant)) - len(shape)


def _missing_term(a, n, bad, name, atol, rtol, shape=None):
    """A term of the derivative missing (or wrong): backward keeps only the elementwise part, only
    the cross-element part, or differs from it by a rank-one term (one through a reduction of the
    input: a mean, a norm, a normaliser)."""
    if a.shape[0] == a.shape[1] and a.shape[0] > 1:
        eye = torch.eye(a.shape[0], dtype=torch.bool)
        cross = bool((n[~eye].abs() > 100 * atol).any())
        a_cross = bool((a[~eye].abs() > 10 * atol).any())
        if cross and not a_cross:
            along = _couplings(n, shape, atol) if shape is not None else None
            where = " along dim %d" % (next(iter(along)) - len(shape)) if along else ""
            return {"kind": "missing_term", "part": "cross",
                    "short": "a missing term: backward has no term through the other elements%s (the derivative "
                             "of a sum, mean or norm over them)" % where,
                    "text": "backward's gradient of %s is elementwise, but each output depends on the other "
                            "elements%s too: the term through them (a sum, mean, norm or normaliser) is missing"
                            % (name, where)}
        if cross and not bool((bad & ~eye).any()) and bool((bad & eye).any()):
            return {"kind": "missing_term", "part": "elementwise",
                    "short": "a missing or wrong elementwise term (only d out[i] / d %s[i] is wrong)" % name,
                    "text": "only the elementwise entries of d(out)/d(%s) are wrong, the cross-element ones "
                            "match: an elementwise term is missing or wrong" % name}
        if not bool((bad & eye).any()) and bool((bad & ~eye).any()):
            return {"kind": "offdiag", "short": "only cross-element entries are wrong (a reduction over the wrong dim?)",
                    "text": "only cross-element entries of d(out)/d(%s) are wrong, the elementwise ones match: "
                            "a reduction over the wrong dim?" % name}
    diff = n - a
    if min(diff.shape) >= 2 and float(a.abs().max()) > 10 * atol:
        try:
            sv = torch.linalg.svdvals(diff)
        except Exception:  # noqa: BLE001 - not decisive
            return None
        if sv.numel() >= 2 and float(sv[0]) > 100 * atol and float(sv[1]) <= 1e-6 * float(sv[0]) + atol:
            return {"kind": "missing_term", "part": "rank_one",
                    "short": "a missing term: the difference is a rank-one term (one through a reduction of the "
                             "input: a mean, a norm, a normaliser)",
                    "text": "backward's gradient of %s differs from the derivative by a rank-one term: a term "
                            "through a reduction of the input (a mean, a norm, a normaliser) is missing or wrong"
                            % name}
    return None


def _swapped(o, j, blocks, in_names, atol, rtol):
    a_j, n_j = blocks.get((o, j), (None, None))
    for (o2, j2), (a_k, n_k) in blocks.items():
        if o2 != o or j2 == j or a_k is None or n_k is None or a_k.shape != n_j.shape:
            continue
        if _close(a_j, n_k, atol, rtol) and _close(a_k, n_j, atol, rtol) and not _close(n_j, n_k, atol, rtol):
            first, second = sorted((j, j2))
            return {"kind": "swap", "inputs": [in_names[first], in_names[second]],
                    "short": "the gradients of %s and %s are swapped" % (in_names[first], in_names[second]),
                    "text": "the gradients of %s and %s are swapped (each is returned in the other's slot)"
                            % (in_names[first], in_names[second])}
    return None


def _transposed(a, n, x, atol, rtol):
    if x.is_complex() or x.dim() < 2 or x.shape[-1] != x.shape[-2] or x.shape[-1] < 2:
        return False
    shape = tuple(x.shape)
    perm = []
    for k in range(x.numel()):
        idx = list(unravel(k, shape))
        idx[-1], idx[-2] = idx[-2], idx[-1]
        flat = 0
        for size, i in zip(shape, idx):
            flat = flat * size + i
        perm.append(flat)
    permuted = a[:, torch.tensor(perm)]
    return _close(permuted, n, atol, rtol) and not _close(a, n, atol, rtol)
