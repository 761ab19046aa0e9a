"""Inputs for a target that has no declaration and no call site: made from its signature."""

import inspect

import torch

from .introspect import ann_name, value_params
from .outcome import Outcome, is_memory_error
from .tensors import away_from_zero
from .text import exc_text, first_line


def is_tensor_annotation(ann):
    """True for Tensor, None for Optional[Tensor]-like, False otherwise (or no annotation)."""
    if ann is inspect.Parameter.empty:
        return False
    if ann is torch.Tensor:
        return True
    if isinstance(ann, str):
        s = ann.replace(" ", "")
        if s in ("Tensor", "torch.Tensor"):
            return True
        if "Tensor" in s and ("Optional" in s or "None" in s):
            return None
        return False
    args = getattr(ann, "__args__", None)
    if args and torch.Tensor in args:
        return None
    return False


def synthesize(fn, fclass, spec, opts, reporter):
    """(args, info) for ``fn``: tensors for its tensor parameters, defaults for the rest."""
    params = value_params(fn, fclass)
    if params is None:
        raise Outcome("no_inputs", None,
                      "cannot read the signature of the target; declare inputs with `# gradlint: inputs=...`")
    plan = []  # ("tensor", name) | ("value", name, value)
    for p in params:
        if p.kind == p.VAR_POSITIONAL or p.kind == p.VAR_KEYWORD:
            continue
        ann = p.annotation
        tensor_ann = is_tensor_annotation(ann)
        if p.kind == p.KEYWORD_ONLY:
            if p.default is p.empty:
                raise Outcome("no_inputs", None,
                              "cannot make a value for keyword-only `%s`; declare inputs with "
                              "`# gradlint: inputs=...`" % p.name)
            continue
        if p.default is p.empty:
            if ann is not p.empty and not tensor_ann:
                raise Outcome("no_inputs", None,
                              "cannot make a value for `%s` (%s, no default); declare inputs with "
                              "`# gradlint: inputs=...`" % (p.name, ann_name(ann)))
            plan.append(("tensor", p.name))
        elif tensor_ann is True:
            plan.append(("tensor", p.name))
        else:
            plan.append(("value", p.name, p.default))
    seed = int(spec.get("seed", opts["seed"]))
    n_t = sum(1 for e in plan if e[0] == "tensor")
    shapes = spec.get("shapes")
    if shapes:
        if len(shapes) != n_t:
            raise Outcome("error", "bad_request",
                          "✗ bad request: %d shapes given for %d tensor parameters" % (len(shapes), n_t))
        strategies = [[tuple(s) for s in shapes]]
    else:
        strategies = [[s] * n_t for s in ((3,), (3, 3), (2, 3, 3), ())]
    tried = []
    first_exc = None
    for strat in strategies:
        gen = torch.Generator().manual_seed(seed)
        args = []
        it = iter(strat)
        for e in plan:
            if e[0] == "tensor":
                args.append(away_from_zero(next(it), gen).requires_grad_(True))
            else:
                args.append(e[2])
        args = tuple(args)
        try:
            torch.manual_seed(opts["seed"])
            fn(*args)
        except Exception as e:
            if is_memory_error(e):
                raise reporter.user_exception(e, "forward")
            if first_exc is None:
                first_exc = e
            tried.append({"shapes": [list(s) for s in strat], "error": "%s: %s" % (
                type(e).__name__, first_line(exc_text(e, 300)))})
            if n_t == 0:
                break
            continue
        info = {"seed": seed, "shapes": [list(s) for s in strat], "tried": tried,
                "plan": [e[0] for e in plan]}
        return args, info
    # the same error for every shape is a bug in the code, not a shape problem
    same_everywhere = len(tried) > 1 and len(set(t["error"] for t in tried)) == 1
    if first_exc is not None and (same_everywhere or not isinstance(first_exc, (RuntimeError, ValueError, IndexError))):
        oc = reporter.user_exception(first_exc, "forward")
        oc.extra["synthesis"] = {"tried": tried}
        raise oc
    raise Outcome(
        "no_inputs", None,
        "forward failed for every synthesized input shape (%s); declare inputs with "
        "`# gradlint: inputs=...`" % ", ".join(str(tuple(s["shapes"][0])) if s["shapes"] else "()" for s in tried),
        "\n".join("%s: %s" % (s["shapes"], s["error"]) for s in tried),
        synthesis={"tried": tried},
    )
