"""What each parameter of a target takes: a differentiable tensor, an index, a number, a flag...

Read from the parameter's annotation, its default, how backward answers for it (a literal
``None`` gradient), how forward uses it (``dim=p``, ``range(p)``, ``x.size(p)``,
``p == "mean"``, ``if p:``, ``p.unsqueeze(...)``, ``x.gather(1, p)``, ``p(...)``), and
last its name. The result is a list of ``Param`` with candidate values, tried in order by
``synthesis``.
"""

import ast
import inspect

import torch

from . import callers, coo
from ..introspect import value_params
from .kinds import (BOOL, CALLABLE, DEFAULT, DEVICE, FLOAT, INDEX, INT, INT_TENSOR, MASK, NONE, OBJECT, SEQUENCE,  # noqa: F401
                    SIZE, STR, TENSOR, UNSUPPORTED)
from .param_usage import (Evidence, Usage, ctx_flow, defined_in_user_class, documented_values, none_gradient_positions,
                          optional_factors, block_sizes, source_tree, helpers)


OPTIONAL_FACTOR = 0.3  # an optional factor is also checked at this value (no d ** -0.5 or 1 / d of an integer d)
BLOCK_SIZES = (2, 1)  # a block size is also checked at these: several blocks at any extent of 2 or more
_DIM_NAMES = ("dim", "axis", "dims")
_INT_NAMES = ("k", "n", "n_iter", "niter", "iters", "iterations", "max_iter", "num_iter", "steps",
              "order", "degree", "groups", "stride", "padding", "kernel_size", "size", "num_samples",
              "n_samples", "nsamples", "depth", "level", "levels", "j", "num_classes", "budget", "topk")
_SOLVER_TOLERANCES = ("atol", "rtol", "xtol", "ftol", "gtol", "tolerance", "abstol", "reltol")
_FLOAT_NAMES = ("eps", "tol", "epsilon", "delta", "lr", "temperature", "tau", "temp", "margin", "gamma",
                "lam", "lambd", "lambda_", "beta", "sigma", "gradient_eps", "grad_eps", "smoothing",
                "threshold", "clip", "min_val", "max_val", "momentum") + _SOLVER_TOLERANCES
_BOOL_PREFIXES = ("is_", "use_", "has_", "return_", "enable_", "do_", "with_", "apply_", "compute_",
                  "ensure_", "need_", "needs_", "allow_", "keep", "skip_", "no_")
_BOOL_NAMES = ("training", "train", "inplace", "normalize", "normalized", "keepdim", "transpose",
               "transposed", "causal", "training_mode", "verbose", "debug", "flag", "reverse", "upper",
               "lower", "unbiased", "ceil_mode", "align_corners", "deterministic", "sorted", "largest")
_STR_NAMES = ("mode", "method", "reduction", "padding_mode", "interpolation", "norm_type", "kind", "impl",
              "backend", "algorithm", "variant", "scheme")
_INDEX_NAMES = ("target", "targets", "label", "labels", "index", "indices", "idx", "y_true", "ids", "tokens",
                 "which")
_OBJECT_NAMES = ("process_group", "group", "pg", "stream", "event", "handle", "transport", "portal", "comm",
                 "communicator", "queue", "mesh", "device_mesh", "config", "cfg", "model", "module", "layer",
                 "net", "network", "optimizer", "scaler", "tokenizer", "logger")
_SIZE_NAMES = ("shape", "size", "sample_shape", "batch_shape", "out_shape", "output_shape")
_MASK_NAMES = ("mask", "attention_mask", "attn_mask", "valid", "valid_mask")


class Param(object):
    def __init__(self, name, kind, candidates=None, requires_grad=False, why="", optional=False):
        self.name = name
        self.kind = kind
        self.candidates = list(candidates or [])
        self.requires_grad = requires_grad
        self.why = why
        self.optional = optional  # None is also an accepted value
        self.keyword_only = False
        self.none_grad = False  # backward returns a literal None for it
        self.modes = []  # values that pick branches, named by the code (checked one by one)
        self.constant_why = None  # why it is left undifferentiated (the code shows its None is by design)
        self.refines = False  # an iteration count or a tolerance of an approximation forward iterates
        self.coo = None  # (prefix, role) for a piece of a sparse matrix given in pieces (``coo.group``)

    def __repr__(self):
        return "Param(%s: %s%s)" % (self.name, self.kind, ", grad" if self.requires_grad else "")

    def describe(self):
        return "%s: %s (%s)" % (self.name, self.kind, self.why) if self.why else "%s: %s" % (self.name, self.kind)


# -- annotations --------------------------------------------------------------------------


def _annotation_kind(ann):
    """(kind, optional) from an annotation, or (None, False) when it says nothing."""
    if ann is inspect.Parameter.empty:
        return None, False
    if isinstance(ann, str):
        s = ann.replace(" ", "").replace("typing.", "")
        optional = s.startswith("Optional[") or "|None" in s or "None|" in s
        core = s[len("Optional["):-1] if s.startswith("Optional[") else s.replace("|None", "").replace("None|", "")
        table = {"Tensor": TENSOR, "torch.Tensor": TENSOR, "int": INT, "float": FLOAT, "bool": BOOL, "str": STR,
                 "None": NONE}
        if core in table:
            return table[core], optional
        if core.startswith(("List[", "Tuple[", "Sequence[", "list[", "tuple[")):
            return SEQUENCE, optional
        if core.startswith(("Callable", "callable")):
            return CALLABLE, optional
        if core.startswith("Literal["):
            return STR, optional
        return None, optional
    if ann is torch.Tensor:
        return TENSOR, False
    if isinstance(ann, type) and not issubclass(ann, torch.Tensor) and not (ann.__module__ or "").startswith(
            ("builtins", "torch", "numpy", "typing", "collections")):
        return OBJECT, False  # a class of the user's (a Portal, a process group, a kernel object)
    if ann in (int, float, bool, str):
        return {int: INT, float: FLOAT, bool: BOOL, str: STR}[ann], False
    if ann is type(None):
        return NONE, True
    args = getattr(ann, "__args__", None) or ()
    origin = getattr(ann, "__origin__", None)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            kind, _ = _annotation_kind(rest[0])
            return kind, True
    if origin in (list, tuple) or str(origin).endswith(("Sequence", "Iterable")):
        return SEQUENCE, False
    if str(getattr(origin, "__name__", origin)).endswith("Literal") or str(ann).startswith("typing.Literal"):
        return STR, False
    if getattr(origin, "__name__", "") == "Callable" or str(ann).startswith(("typing.Callable", "collections.abc.Callable")):
        return CALLABLE, False
    return None, False


def _literal_values(ann):
    vals = [a for a in (getattr(ann, "__args__", None) or ()) if isinstance(a, str)]
    if vals:
        return vals
    if isinstance(ann, str) and "Literal[" in ann:
        try:
            inner = ast.parse(ann.split("Literal", 1)[1], mode="eval").body
            elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        except Exception:
            return []
    return []


# -- names ------------------------------------------------------------------------------


def _name_kind(name):
    low = name.lower()
    if low in _DIM_NAMES or low.endswith("_dim") or low.endswith("_axis"):
        return INT
    if low in _INDEX_NAMES:
        return INDEX
    if low in _MASK_NAMES or low.endswith("_mask"):
        return MASK
    if low in _INT_NAMES or low.startswith(("num_", "n_")) or low.startswith(("max_iter", "maxiter", "maxit")):
        return INT
    if low in _FLOAT_NAMES or low.endswith(("_eps", "_tol")):
        return FLOAT
    if low in _BOOL_NAMES or low.startswith(_BOOL_PREFIXES):
        return BOOL
    if low in _STR_NAMES or low.endswith("_mode"):
        return STR
    if low in _SIZE_NAMES:
        return SIZE
    if low in _OBJECT_NAMES:
        return OBJECT
    if low == "device" or low.endswith("_device"):
        return DEVICE
    return None


def int_candidates(name):
    low = name.lower()
    if low in _DIM_NAMES or low.endswith(("_dim", "_axis")):
        return [-1, 1, 0]
    if low in ("n_iter", "niter", "iters", "iterations", "max_iter", "num_iter", "steps") or "iter" in low:
        return [50, 10]
    if low in ("groups",):
        return [1]
    if low in ("stride", "dilation"):
        return [1, 2]
    if low in ("padding",):
        return [0, 1]
    return [2, 1, 3]


def float_candidates(name):
    low = name.lower()
    if low in _SOLVER_TOLERANCES:  # a solver's: solved to round-off, then a looser one
        return [1e-10, 1e-6]
    if low in ("eps", "epsilon", "tol", "gradient_eps", "grad_eps") or low.endswith(("_eps", "_tol")):
        return [1e-6, 1e-3]
    if low in ("alpha",):
        return [1.5, 0.5, 2.0]
    if low in ("temperature", "tau", "temp", "sigma", "scale"):
        return [0.7, 1.0]
    if low in ("p",):
        return [2.0]
    return [0.7, 1.5, 0.3, 2.0]


# -- putting it together ------------------------------------------------------------------


def infer(fn, fclass):
    """[Param] for the positional parameters of ``fn`` (keyword-only ones keep defaults)."""
    params = value_params(fn, fclass)
    if params is None:
        return None
    forward = fclass.forward if fclass is not None else fn
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in params]
    evidence = Evidence()
    tree = source_tree(forward)
    if tree is not None:
        usage = Usage(names, evidence, tree)
        usage.visit(tree)
        helpers(forward, usage.calls, evidence)
        for name, values in documented_values(forward, names).items():  # `mode : {"a", "b"}` in its docstring
            evidence.literals.setdefault(name, []).extend(v for v in values if v not in evidence.literals.get(name, []))
        evidence.unused.update(usage.overwritten_unread())
        evidence.optional_factors.update(optional_factors(tree, names))
        evidence.block_sizes.update(block_sizes(tree, names))
    if fclass is not None and positional:
        ctx_flow(fclass, forward, names, evidence)
    for name, values in callers.values_from_callers(fn, fclass).items():
        evidence.called_with.setdefault(name, []).extend(values)
    no_grad = set()
    if fclass is not None and defined_in_user_class(fclass, "backward"):
        none_at, _width = none_gradient_positions(fclass.backward)
        no_grad = set(positional[i].name for i in none_at if i < len(positional))
    out = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append(_decide(p, evidence, p.name in no_grad))
    coo.group(out)  # a sparse matrix in pieces: values, rows, columns, shape
    return out


def _value_kind(values):
    """The kind every value a caller passes has in common (None: no common scalar kind)."""
    kinds = set()
    for v in values:
        if v is None:
            continue
        kinds.add(BOOL if isinstance(v, bool) else INT if isinstance(v, int) else FLOAT if isinstance(v, float)
                  else STR if isinstance(v, str) else SIZE if isinstance(v, tuple) else OBJECT)
    return kinds.pop() if len(kinds) == 1 else None


def _decide(p, evidence, no_grad):
    param = _kind_of(p, evidence, no_grad)
    param.modes = _modes(p, evidence, param)
    param.refines = p.name in evidence.refines
    return param


def _modes(p, evidence, param):
    """The values of a branch-picking parameter the code itself names: literals forward compares it
    with (``mode == "bilinear"``, ``order == 3``), values the module's own calls pass, and both truth
    values of a flag it tests (``if training:``). A mode run checks each; guessed values are not modes."""
    if param.kind not in (STR, INT, BOOL, DEFAULT, NONE):
        return []
    if p.default is None and p.name in evidence.optional_factors:
        floats = [v for v in evidence.called_with.get(p.name, []) if isinstance(v, float) and v > 0]
        return floats[:2] or [OPTIONAL_FACTOR]
    if param.kind == INT and p.name in evidence.block_sizes:
        called = [v for v in evidence.called_with.get(p.name, []) if isinstance(v, int) and not isinstance(v, bool)]
        return _unique(called + list(BLOCK_SIZES))
    values = []
    for v in evidence.literals.get(p.name, []) + evidence.called_with.get(p.name, []) + _literal_values(p.annotation):
        if isinstance(v, (str, int, bool)) and v not in values and not (isinstance(v, str) and len(v) > 40):
            values.append(v)
    ev = evidence.votes.get(p.name) or {}
    default = p.default if p.default is not p.empty else None
    if (ev.get(BOOL) and param.kind != INT) or isinstance(default, bool) or param.kind == BOOL:  # `if dim:` is no flag
        values += [v for v in (False, True) if v not in values]
    kinds = set(type(v) for v in values + ([default] if default is not None else []))
    if len(kinds) > 1 and not kinds <= {int, bool}:
        return []  # mixed kinds: not one parameter's modes
    return values if len(values) >= 2 or (values and default is not None and values[0] != default) else []


def _kind_of(p, evidence, no_grad):
    ann_kind, optional = _annotation_kind(p.annotation)
    ev_kind, strength = evidence.best(p.name)
    literals = evidence.literals.get(p.name, []) + _literal_values(p.annotation)
    called = evidence.called_with.get(p.name, [])  # what the module's own calls pass
    has_default = p.default is not p.empty
    if p.kind == p.KEYWORD_ONLY:
        param = Param(p.name, DEFAULT, [p.default], why="keyword-only, default")
        param.keyword_only = True
        if not has_default:
            param.kind, param.why = OBJECT, "keyword-only without a default"
        return param
    if has_default and not (ann_kind == TENSOR or (p.default is None and ev_kind in (TENSOR, INDEX, MASK)
                                                    and strength >= 3 and not no_grad)):
        return Param(p.name, DEFAULT, [p.default], why="default %r" % (p.default,))
    if p.name in evidence.unused and ann_kind in (None, NONE) and not called:
        return Param(p.name, NONE, [None], why="forward overwrites it before reading it")
    kind, why = None, ""
    named = _name_kind(p.name)
    called_kind = _value_kind(called)
    if ann_kind in (None, TENSOR) and no_grad and named in (INDEX, MASK) and ev_kind in (None, TENSOR, INDEX, MASK):
        kind, why = named, "its name; backward returns None for it"
    elif ann_kind == TENSOR and ev_kind in (INDEX, MASK) and strength >= 3:
        kind, why = ev_kind, "a tensor used as %s in forward" % ("a mask" if ev_kind == MASK else "indices")
    elif ann_kind is not None:
        kind, why = ann_kind, "annotation"
    elif called_kind is not None and not (ev_kind == TENSOR and strength >= 3):
        kind, why = called_kind, "the module calls it with %s" % ", ".join(repr(v) for v in called[:3])
    elif ev_kind in UNSUPPORTED + (STR, INDEX, SIZE) and strength >= 2:
        kind, why = ev_kind, "used as %s in forward" % ev_kind
    elif ev_kind in (INT, FLOAT, BOOL) and strength >= 3:
        kind, why = ev_kind, "used as %s in forward" % ev_kind
    elif ev_kind == TENSOR and strength >= 2:
        kind, why = TENSOR, "used as a tensor in forward"
        if no_grad and named == INT:  # `ctx.save_for_backward(x, dim)`, then `dim.item()`
            kind, why = INT_TENSOR, "a tensor (saved for backward) holding an int, by its name"
    if kind is None and literals and _value_kind(literals) in (INT, STR) and ev_kind in (None, INT, STR):
        kind = _value_kind(literals)  # `kind == 2`, `kind : {1, 2}`: the values it is compared with, not its name
        why = "compared with %s" % ", ".join(repr(v) for v in literals[:3])
    if kind is None:
        if named is not None and not (named in (INT, FLOAT, BOOL, STR) and ev_kind == TENSOR and strength >= 2):
            kind, why = named, "its name"
        elif ev_kind is not None and strength >= 1 and ev_kind != NONE:
            kind, why = ev_kind, "used as %s in forward" % ev_kind
        else:
            kind, why = TENSOR, "no other evidence"
    if kind == TENSOR and no_grad:
        why += "; backward returns None for it"
    param = Param(p.name, kind, why=why, optional=optional or (ev_kind == NONE) or None in called)
    # every floating tensor input is differentiated, also when backward returns None for it: a None
    # is checked (the output may depend on it: a dropped gradient), never trusted
    param.requires_grad = kind == TENSOR
    param.none_grad = no_grad
    known = called + literals
    if kind in (INT, INT_TENSOR):
        param.candidates = _unique([v for v in known if isinstance(v, int) and not isinstance(v, bool)]
                                   + int_candidates(p.name))
    elif kind == FLOAT:
        param.candidates = _unique([float(v) for v in known if isinstance(v, (int, float)) and not isinstance(v, bool)]
                                   + float_candidates(p.name))
    elif kind == BOOL:
        param.candidates = _unique([v for v in called if isinstance(v, bool)] + [False, True])
    elif kind == STR:
        param.candidates = _unique([v for v in known if isinstance(v, str)] + evidence.helper_defaults.get(p.name, []))
    elif kind == SIZE:
        param.candidates = _unique([v for v in called if isinstance(v, tuple)])
    elif kind == NONE:
        param.candidates = [None]
    if param.optional and kind not in (NONE,):
        param.candidates.append(None)
    return param


def _unique(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out
