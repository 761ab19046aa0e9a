"""Small tensor helpers: real views, promotion, previews, comparisons, test values."""

import copy

import torch


def is_tensor(x):
    return isinstance(x, torch.Tensor)


def fresh_containers(values):
    """``values`` with each dict, list and set among them copied (one level): a forward that pops
    from an options dict or appends to a list changes its own copy, never the next call's."""
    return tuple(copy.copy(v) if isinstance(v, (dict, list, set)) else v for v in values)


def as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def unravel(k, shape):
    idx = []
    for s in reversed(tuple(shape)):
        idx.append(k % s)
        k //= s
    return tuple(reversed(idx))


def realize(t):
    """A float64 vector of a tensor's real scalars (complex: re, im interleaved)."""
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj().contiguous())
    return t.reshape(-1).to(torch.float64)


def nparts(t):
    return 2 if t.is_complex() else 1


def real_numel(t):
    return t.numel() * nparts(t)


def is_differentiable_dtype(t):
    return t.is_floating_point() or t.is_complex()


_PROMOTE = {}


def promotion_map():
    if not _PROMOTE:
        _PROMOTE.update({
            torch.float16: torch.float64,
            torch.bfloat16: torch.float64,
            torch.float32: torch.float64,
            torch.complex64: torch.complex128,
        })
        c32 = getattr(torch, "complex32", None)
        if c32 is not None:
            _PROMOTE[c32] = torch.complex128
    return _PROMOTE


def preview(t, n=6):
    try:
        flat = t.detach()
        if flat.layout != torch.strided:
            flat = flat.to_dense()
        flat = flat.reshape(-1)[:n].cpu()
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


def max_abs_diff(a, b):
    """Max |a-b| over two tuples of outputs; inf on a structural difference, 0 if equal (NaN-aware)."""
    a, b = as_tuple(a), as_tuple(b)
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b):
        if is_tensor(x) != is_tensor(y):
            return float("inf")
        if not is_tensor(x):
            try:
                if x != y:
                    return float("inf")
            except Exception:
                return float("inf")
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return float("inf")
        if x.numel() == 0:
            continue
        xd, yd = x.detach(), y.detach()
        if xd.layout != torch.strided or yd.layout != torch.strided:
            xd, yd = xd.to_dense(), yd.to_dense()
        if xd.is_floating_point() or xd.is_complex():
            both_nan = xd.isnan() & yd.isnan()
            d = (xd - yd).abs().to(torch.float64)
            d = torch.where(both_nan, torch.zeros_like(d), d)
            d = torch.where(d.isnan(), torch.full_like(d, float("inf")), d)
            worst = max(worst, float(d.max()))
        elif not torch.equal(xd, yd):
            return float("inf")
    return worst


def away_from_zero(shape, gen, dtype=None):
    """Values with |v| in [0.3, 0.7] or [1.3, 1.7], random sign: away from 0, ±1 and ties."""
    dtype = dtype or torch.float64
    real = torch.float64
    u = torch.rand(shape, generator=gen, dtype=real)
    band = (torch.rand(shape, generator=gen, dtype=real) < 0.5).to(real)
    sign = torch.where(torch.rand(shape, generator=gen, dtype=real) < 0.5, -1.0, 1.0).to(real)
    v = sign * (0.3 + 0.4 * u + band)
    if dtype.is_complex:
        w = away_from_zero(shape, gen)
        return torch.complex(v, w).to(dtype)
    return v.to(dtype)


def scalar(t):
    try:
        v = t.item()
    except Exception:
        return None
    if isinstance(v, complex):
        return [v.real, v.imag]
    return v


def nan_max(t):
    if t.numel() == 0:
        return 0.0
    if bool(t.isnan().any()):
        return float("nan")
    return float(t.max())
