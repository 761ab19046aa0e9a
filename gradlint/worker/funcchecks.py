"""torch.func checks for Functions (and custom ops) that declare torch.func support.

A Function with ``setup_context`` and a vmap rule (a ``vmap`` staticmethod, or
``generate_vmap_rule = True``; for a custom op, ``register_vmap``) says it works under
``torch.func``. Two checks hold it to that:

- ``vmap``: vmap over a batch of two input draws equals the two single calls, stacked;
- ``jacrev``: ``torch.func.jacrev`` (which runs backward under functorch) equals the
  Jacobian that plain autograd gets from the same backward.
"""

import torch

from .introspect import defines, uses_setup_context
from .outcome import Outcome
from .tensors import as_tuple, is_tensor, max_abs_diff
from .text import fmt


def declares_func_support(subject):
    fclass, op = subject.fclass, subject.op
    if op is not None:
        return getattr(op, "_vmap_fn", None) is not None
    if fclass is None:
        return False
    vmap_rule = defines(fclass, "vmap") or bool(getattr(fclass, "generate_vmap_rule", False))
    return uses_setup_context(fclass) and vmap_rule


def _tolerance(values):
    scale = 0.0
    for v in values:
        if is_tensor(v) and v.numel() and (v.is_floating_point() or v.is_complex()):
            scale = max(scale, float(v.detach().abs().max()))
    return 1e-7 * (1.0 + scale)


def _fail(subject, verdict, summary, message, details):
    return {"status": "fail", "verdict": verdict, "message": summary, "details": details,
            "_outcome": Outcome("fail", verdict, summary, message,
                                location=subject.reporter.location_for("vmap" if verdict == "vmap_mismatch"
                                                                       else "backward"))}


def two_draws(subject):
    """The inputs, and a second draw of them (the checked tensors scaled by 1..1.2 elementwise)."""
    first = subject.fresh()
    gen = torch.Generator().manual_seed(subject.opts["seed"] + 17)
    second = []
    for j, v in enumerate(subject.fresh()):
        if j in subject.grad_pos:
            factor = 1.0 + 0.2 * torch.rand(v.shape, generator=gen, dtype=torch.float64).to(v.dtype)
            v = (v.detach() * factor).requires_grad_(False)
        second.append(v)
    return first, second


def batched_inputs(subject):
    """(inputs batched over the two draws, in_dims): the checked tensors stacked on dim 0."""
    first, second = two_draws(subject)
    batched, in_dims = [], []
    for j, (a, b) in enumerate(zip(first, second)):
        if j in subject.grad_pos:
            batched.append(torch.stack([a.detach(), b.detach()]))
            in_dims.append(0)
        else:
            batched.append(a)
            in_dims.append(None)
    return batched, in_dims


def check_vmap(subject, result):
    first, second = two_draws(subject)
    batched, in_dims = batched_inputs(subject)
    fn = subject.fn
    torch.manual_seed(subject.opts["seed"])
    mapped = as_tuple(torch.func.vmap(fn, in_dims=tuple(in_dims))(*batched))
    singles = [as_tuple(subject.call(tuple(x.detach() if is_tensor(x) else x for x in inputs)))
               for inputs in (first, second)]
    looped = tuple(torch.stack([a.detach(), b.detach()]) if is_tensor(a) else a
                   for a, b in zip(singles[0], singles[1]))
    diff = max_abs_diff(tuple(m.detach() if is_tensor(m) else m for m in mapped), looped)
    tol = _tolerance(looped)
    details = {"batch": 2, "max_difference": diff, "tolerance": tol}
    if diff <= tol:
        return {"status": "pass", "details": details}
    if diff == float("inf"):
        shapes = lambda outs: ", ".join(str(tuple(o.shape)) for o in outs if is_tensor(o))  # noqa: E731
        summary = ("✗ vmap returns %s where a loop of single calls gives %s: the vmap rule is wrong"
                   % (shapes(mapped), shapes(looped)))
    else:
        summary = "✗ vmap disagrees with a loop of single calls (max |Δ| %s): the vmap rule is wrong" % fmt(diff)
    message = ("torch.func.vmap over a batch of two inputs gave outputs that differ from calling the Function "
               "on each input and stacking the results. Fix the `vmap` staticmethod (its out_dims, or the batch "
               "dim it moves), or use generate_vmap_rule = True.")
    return _fail(subject, "vmap_mismatch", summary, message, details)


def check_jacrev(subject, result):
    inputs = subject.fresh()
    grad_pos = list(subject.grad_pos)
    fn = subject.fn

    def tensors_only(*args):
        outs = as_tuple(fn(*args))
        return tuple(outs[i] for i in subject.diff_out) if subject.diff_out else outs

    torch.manual_seed(subject.opts["seed"])
    jac = torch.func.jacrev(tensors_only, argnums=tuple(grad_pos))(*[x.detach() if is_tensor(x) else x
                                                                      for x in inputs])
    outs = tensors_only(*inputs)
    worst, where = 0.0, None
    for o, out in enumerate(outs):
        for k, j in enumerate(grad_pos):
            functorch = jac[o][k].reshape(out.numel(), -1)
            rows = []
            for e in range(out.numel()):
                g = torch.zeros(out.numel(), dtype=out.dtype)
                g[e] = 1
                grads = torch.autograd.grad(out, inputs[j], g.reshape(out.shape), retain_graph=True,
                                            allow_unused=True)[0]
                rows.append(torch.zeros(inputs[j].numel(), dtype=out.dtype) if grads is None else grads.reshape(-1))
            autograd = torch.stack(rows) if rows else functorch
            diff = max_abs_diff(functorch.detach(), autograd.detach())
            if diff > worst:
                worst, where = diff, (o, j)
    tol = _tolerance(outs)
    details = {"max_difference": worst, "tolerance": tol}
    if worst <= tol:
        return {"status": "pass", "details": details}
    o, j = where
    details.update(output=o, input=subject.in_names[j])
    summary = ("✗ torch.func.jacrev disagrees with autograd for %s (output %d, max |Δ| %s): backward is not "
               "functorch-safe" % (subject.in_names[j], o, fmt(worst)))
    message = ("Under torch.func the same backward gives a different Jacobian: backward probably mutates saved "
               "tensors in place, uses .data/.item(), or keeps tensors on ctx attributes instead of "
               "save_for_backward.")
    return _fail(subject, "jacrev_mismatch", summary, message, details)
