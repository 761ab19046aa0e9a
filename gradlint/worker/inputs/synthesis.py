"""Inputs for a target that has no declaration and no call site: made from its signature.

``params.infer`` says what each parameter takes. The search then tries input sets until
forward accepts one and returns finite values: scalar values (each parameter's candidates,
one change at a time), tensor shapes (2-D with unequal sizes first, so that ``dim=0`` and
``dim=-1`` differ; then matmul chains, 3-D, 1-D, square, scalars...), and value domains
(signed values away from 0 and ±1; positive; in (0, 1); on the simplex; unit norm;
symmetric positive definite) when forward fails on a domain error or returns NaN/inf.

The winning ``Recipe`` can make more draws of the same kind (another seed), or move to
another domain (e.g. small values, when the Jacobian at the first draw is all zero).
"""

import time

import torch

from . import callers, constraints, coo
from .error_hints import choices, float64_refused, gist, learn_domains, looks_like_domain, shape_hints
from .time_limits import TooLong, time_limit
from . import params as P
from ..introspect import value_params
from ..outcome import Outcome, is_memory_error, needs_a_device
from ..tensors import as_tuple, away_from_zero, is_tensor
from ..text import exc_text, first_line
from ..writes import leaf_write_outcome, writes_to_leaf

MAX_ATTEMPTS = 240
MAX_STAR = 8  # values made for a ``*args``, at most
MAX_SECONDS = 20.0
ATTEMPT_SECONDS, MIN_ATTEMPT_SECONDS = 10.0, 2.0  # for one input set (``Search.try_recipe``)
DOMAINS = ("signed", "small", "positive", "unit", "simplex", "unit_norm", "spd")
# when gradcheck fails on general square matrices: inputs the backward may assume
STRUCTURED = ("by_name", "spd", "symmetric", "tril", "triu")
_TRIANGULAR_NAMES = ("chol", "cholesky", "tril", "scale_tril", "l", "lower", "root")
_SPD_NAMES = ("cov", "covar", "covariance", "precision", "gram", "kernel", "k", "sigma", "hessian", "spd")


def structure_by_name(name):
    """The structure a square matrix parameter's name asks for: `chol` lower-triangular,
    `cov` symmetric positive definite, anything else symmetric."""
    low = name.lower()
    parts = set(low.replace("-", "_").split("_"))
    if parts & set(_TRIANGULAR_NAMES) or low.startswith("chol") or low.endswith("_tril"):
        return "tril"
    if parts & set(_SPD_NAMES) or "covar" in low:
        return "spd"
    return "symmetric"


# exceptions no input can avoid: a bug in the code, not a bad guess of inputs
_CODE_BUGS = (NameError, UnboundLocalError, ImportError, SyntaxError, ZeroDivisionError)
# what torch raises, whatever the inputs, about a misused API
_TORCH_SAYS_CODE_BUG = ("custom operator", "is not defined as mutable", "save_for_backward can only save",
                        "Legacy autograd function", "setup_context", "mark_dirty")


def shape_strategies(n):
    """Shapes for n tensor parameters, in the order they are tried."""
    chain = [(3, 4), (4, 5), (5, 2), (2, 3), (3, 6), (6, 2)]
    out = [
        [(3, 4)] * n,
        [chain[i % len(chain)] for i in range(n)],
        [(2, 3, 4)] * n,
        [(4,)] * n,
        [(3, 4)] + [(4,)] * (n - 1),
        [(3, 4)] + [()] * (n - 1),
        [(3, 4)] * (n - 1) + [(1,)] if n > 1 else [(3, 4)],  # a trailing hyperparameter: a lengthscale
        [(3, 4)] * (n - 1) + [()] if n > 1 else [(3, 4)],
        [(4,)] + [(4, 4)] * (n - 1),  # a vector and matrices (natural parameters, covariances)
        [(4, 4)] + [(4,)] * (n - 1),
        [(4, 4)] * n,
        [(2, 4, 4)] * n,
        [(3, 3)] * n,
        [(2, 3, 3)] * n,
        [(2, 3)] * n,
        [(2, 4)] * n,
        [(2, 6)] * n,
        [(2, 7)] * n,
        [(2, 3, 4, 5)] * n,
        [(1, 3, 8, 8)] * n,
        [(2, 3, 8)] * n,
        [()] * n,
    ]
    seen, unique = set(), []
    for s in out:
        key = tuple(s)
        if key not in seen:
            seen.add(key)
            unique.append(s)
    return unique


def domain_values(shape, gen, domain):
    """float64 values of a domain, shaped ``shape``."""
    v = away_from_zero(shape, gen)
    if domain == "signed":
        return v
    if domain == "open_unit":  # inside (-1, 1), away from 0 and ±1: acos, asin, atanh
        return v * (0.8 / 1.7)
    if domain == "sorted":  # strictly increasing along the last dim (a grid: searchsorted)
        if not len(shape):
            return v
        grid = torch.cumsum(v.abs() * 0.5 + 0.2, dim=-1)
        return grid - grid.mean(dim=-1, keepdim=True)
    if isinstance(domain, tuple) and domain[0] == "range":
        # mostly inside a clamp's bounds (where it is not flat), some beyond them: both sides are
        # checked, away from the bounds themselves (kinks)
        lo, hi = domain[1], domain[2]
        if domain[3:] == ("guard",) and None in (lo, hi):  # one side of the Function's domain
            return hi - 0.2 - v.abs() if lo is None else lo + 0.2 + v.abs()
        u = torch.rand(shape, generator=gen, dtype=torch.float64)
        inside = lo + (hi - lo) * (0.1 + 0.8 * u)
        if domain[3:] == ("guard",):  # the Function's domain, kept off the guarded singularity
            return inside
        beyond = torch.where(v > 0, hi + (hi - lo) * (0.2 + 0.3 * u), lo - (hi - lo) * (0.2 + 0.3 * u))
        out = torch.where(torch.rand(shape, generator=gen, dtype=torch.float64) < 0.75, inside, beyond)
        if out.numel() > 1:  # at least one entry on each side
            out.view(-1)[0] = inside.view(-1)[0]
            out.view(-1)[-1] = beyond.view(-1)[-1]
        return out
    if domain == "small":
        return 0.1 * v
    if domain == "negative":  # at most zero: "z must be <= 0"
        return -v.abs()
    if domain == "positive":
        return v.abs()
    if domain == "unit":
        return 0.2 + 0.6 * torch.rand(shape, generator=gen, dtype=torch.float64)
    if domain == "simplex":
        p = v.abs()
        return p / p.sum(dim=-1, keepdim=True) if len(shape) else p
    if domain == "unit_norm":
        return v / v.norm(dim=-1, keepdim=True) if len(shape) else v.sign()
    if domain in ("symmetric", "tril", "triu"):
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            if domain == "symmetric":
                return (v + v.transpose(-1, -2)) / 2
            diagonal = torch.diag_embed(v.diagonal(dim1=-2, dim2=-1).abs() + 1.0)
            return (torch.tril(v, -1) if domain == "tril" else torch.triu(v, 1)) + diagonal
        return v
    if domain == "spd":
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            n = shape[-1]
            a = v / (n ** 0.5)
            return a @ a.transpose(-1, -2) + torch.eye(n, dtype=torch.float64)
        return v.abs()
    raise ValueError(domain)


class Recipe(object):
    """One way to make inputs: scalar values, shapes and a domain; ``make(seed)`` draws.
    ``constraints`` (name -> ``constraints.Constraint``) give some tensors a domain or a sparse
    layout of their own (read from the code)."""

    def __init__(self, params, values, shapes, domain, index_variant=0, constraints=None):
        self.params = params
        self.values = values  # name -> value for non-tensor parameters
        self.shapes = shapes  # shapes of the TENSOR parameters, in order
        self.domain = domain
        self.index_variant = index_variant
        self.constraints = constraints or {}
        self.constants = set()  # tensors forward refuses with requires_grad (backward returns None for them)
        self.only = None  # names the domain applies to (None: every differentiated tensor)
        self.overrides = {}  # position -> value that replaces the one made (explore.refined's settings)
        self.dtype = torch.float64  # float32 when forward raises in float64 only (``float64_error`` says how)
        self.float64_error = None

    def _copy(self, shapes, domain):
        recipe = Recipe(self.params, self.values, shapes, domain, self.index_variant, self.constraints)
        recipe.constants = set(self.constants)
        recipe.only = self.only
        recipe.overrides = dict(self.overrides)
        recipe.dtype, recipe.float64_error = self.dtype, self.float64_error
        return recipe

    def with_domain(self, domain, only=None):
        recipe = self._copy(self.shapes, domain)
        recipe.only = only
        return recipe

    def square_names(self):
        """The tensor parameters the recipe makes square matrices (in order)."""
        names, shapes = [], iter(self.shapes)
        for p in self.params:
            if p.kind == P.TENSOR:
                shape = next(shapes, ())
                if len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1] > 1:
                    names.append(p.name)
        return names

    def with_shapes(self, shapes, domain=None):
        return self._copy(shapes, domain or self.domain)

    def _tensor(self, p, shape, gen):
        c = self.constraints.get(p.name)
        domain = self.domain if p.requires_grad and (self.only is None or p.name in self.only) else "signed"
        if c is not None and c.domain is not None and (domain in ("signed", "small", "by_name") or c.insisted):
            domain = c.domain  # the code's own range for this input first (always, when its error named it)
        if domain == "by_name":
            domain = structure_by_name(p.name)
        t = domain_values(shape, gen, domain)
        if self.dtype != torch.float64:
            t = t.to(self.dtype)
        if c is not None and c.layouts and t.dim() >= 2:
            t = sparse_values(t, gen, c.layouts[0])
        return t

    def patterns(self, gen):
        """prefix -> ``coo.Pattern`` for each sparse matrix given in pieces (``coo.group``)."""
        prefixes = []
        for p in self.params:
            prefix = (p.coo or (None,))[0]
            if prefix is not None and prefix not in prefixes:
                prefixes.append(prefix)
        if not prefixes:
            return {}
        others = [s for p, s in zip([p for p in self.params if p.kind == P.TENSOR], self.shapes)
                  if p.coo is None]
        patterns = {}
        for prefix in prefixes:
            values = next(p for p in self.params if p.coo == (prefix, coo.ROLE_VALUES))
            batch, n = coo.sizes_for(others, coo.batched(values))
            patterns[prefix] = coo.Pattern(n, gen, batch)
        return patterns

    def make(self, seed):
        gen = torch.Generator().manual_seed(seed)
        args = []
        shapes = iter(self.shapes)
        first = None
        patterns = self.patterns(gen)
        for p in self.params:
            piece = p.coo
            if piece is not None:
                pattern = patterns[piece[0]]
                if p.kind == P.TENSOR:
                    next(shapes, None)  # the values' shape is the pattern's
                    t = pattern.values(gen, self.dtype).requires_grad_(True)
                    first = t if first is None else first
                    args.append(t)
                else:
                    args.append({coo.ROLE_ROWS: pattern.rows, coo.ROLE_COLS: pattern.cols}.get(piece[1], pattern.shape))
                    if piece[1] != coo.ROLE_SHAPE:
                        args[-1] = args[-1].clone()
                continue
            if p.kind == P.DEFAULT:
                if not p.keyword_only:  # positional: passed explicitly, shown in the report; a mode run sets it
                    args.append(self.values[p.name] if p.name in self.values else p.candidates[0])
                continue
            if p.kind == P.TENSOR:
                t = self._tensor(p, next(shapes), gen)
                if first is None:
                    first = t
                if p.name in self.constants:
                    t.gradlint_constant = "forward refuses it with requires_grad; backward returns None for it"
                args.append(t.requires_grad_(p.requires_grad and p.name not in self.constants))
            elif p.kind == P.INDEX:
                args.append(_index_tensor(first, gen, self.index_variant))
            elif p.kind == P.SIZE:
                given = self.values.get(p.name)
                args.append(torch.Size(given) if given else torch.Size(first.shape if first is not None else (3, 4)))
            elif p.kind == P.INT_TENSOR:
                args.append(torch.tensor(self.values[p.name]))
            elif p.kind == P.DEVICE:
                args.append(torch.device("cpu"))
            elif p.kind == P.MASK:
                base = first if first is not None else torch.zeros(3, 4)
                m = torch.rand(base.shape, generator=gen) < 0.7
                if m.numel():
                    m.view(-1)[0] = True
                args.append(m)
            else:
                args.append(self.values[p.name])
        for position, value in self.overrides.items():
            if position < len(args):
                args[position] = value
        return tuple(args)

    def info(self, seed):
        info = {
            "seed": seed,
            "shapes": [list(s) for s in self.shapes],
            "domain": self.domain,
            "values": dict((k, repr(v)) for k, v in self.values.items()),
            "params": [p.describe() for p in self.params],
        }
        patterns = self.patterns(torch.Generator().manual_seed(seed))
        if patterns:
            info["sparse_in_pieces"] = ["%s: %s%d x %d, %d entries, symmetric, diagonally dominant"
                                        % (", ".join(p.name for p in self.params
                                                     if (p.coo or (None,))[0] == prefix),
                                           "%d matrices " % pattern.batch if pattern.batch else "",
                                           pattern.n, pattern.n, pattern.nnz)
                                        for prefix, pattern in patterns.items()]
        if self.float64_error:
            info["dtype"] = str(self.dtype).replace("torch.", "")
            info["float64_error"] = self.float64_error
        if self.constraints:
            info["constraints"] = [c.describe(n) for n, c in sorted(self.constraints.items())]
            domains = dict((n, c.domain if isinstance(c.domain, str) else "range") for n, c in self.constraints.items()
                           if c.domain is not None)
            if domains:
                info["domains"] = domains  # the code's own range for these inputs
        return info


def sparse_values(dense, gen, layout):
    """``dense`` with about 40% of its entries zeroed (a square matrix keeps its diagonal), as a
    coalesced COO tensor or a CSR tensor (2-D, or a batch of them)."""
    keep = torch.rand(dense.shape, generator=gen, dtype=torch.float64) > 0.4
    if dense.shape[-1] == dense.shape[-2]:
        keep = keep | torch.eye(dense.shape[-1], dtype=torch.bool)
    t = dense * keep
    if layout == "csr" and t.dim() in (2, 3):
        return t.to_sparse_csr()
    return t.to_sparse_coo().coalesce()


def _index_tensor(first, gen, variant):
    """Indices into the first tensor's last dim: one per row (variant 0, nll_loss-style), one per
    row kept as a column (variant 1, ``x.gather(1, t.unsqueeze(1))``), one per element (variant 2)."""
    if first is None or first.dim() == 0:
        return torch.randint(0, 3, (3,), generator=gen)
    n = first.shape[-1]
    shape = {0: tuple(first.shape[:-1]), 1: tuple(first.shape[:-1]) + (1,)}.get(variant, tuple(first.shape))
    return torch.randint(0, n, shape, generator=gen)


def _scalar_assignments(params):
    """Values for the non-tensor parameters: the first candidates, then one change at a time."""
    chosen = [p for p in params if p.kind in (P.INT, P.FLOAT, P.BOOL, P.STR, P.NONE, P.INT_TENSOR)
              or (p.kind == P.SIZE and p.candidates)]
    base = dict((p.name, p.candidates[0]) for p in chosen if p.candidates)
    yield dict(base)
    for p in chosen:
        for value in p.candidates[1:]:
            alt = dict(base)
            alt[p.name] = value
            yield alt


def finite(out):
    for o in as_tuple(out):
        if is_tensor(o) and (o.is_floating_point() or o.is_complex()) and o.numel():
            if not bool(torch.isfinite(o.detach() if o.layout == torch.strided else o.detach().to_dense()).all()):
                return False
    return True


def _responds(fn, args, out, seed):
    """Do the outputs move when every differentiable input moves a little?"""
    moved = []
    for a in args:
        if is_tensor(a) and a.requires_grad and a.layout == torch.strided:
            with torch.no_grad():
                step = 1e-3 * max(float(a.abs().max()) if a.numel() else 1.0, 1e-3)
                moved.append(a.detach() + step * torch.linspace(0.5, 1.5, a.numel(), dtype=a.dtype).reshape(a.shape))
        else:
            moved.append(a)
    if len(moved) == len(args) and all(m is a for m, a in zip(moved, args)):
        return True
    torch.manual_seed(seed)
    again = as_tuple(fn(*moved))
    before = as_tuple(out)
    for x, y in zip(before, again):
        if is_tensor(x) and is_tensor(y) and x.shape == y.shape and (x.is_floating_point() or x.is_complex()):
            if bool(((x.detach() - y.detach()).abs() > 1e-12).any()):
                return True
    return False


def backward_error(args, out):
    """The exception one backward pass through ``out`` raises, or None (also when nothing
    requires grad)."""
    inputs = [a for a in args if is_tensor(a) and a.requires_grad]
    outs = [o for o in as_tuple(out) if is_tensor(o) and o.requires_grad and o.grad_fn is not None
            and o.layout == torch.strided]
    if not inputs or not outs:
        return None
    try:
        torch.autograd.grad(outs, inputs, [torch.ones_like(o) for o in outs], allow_unused=True)
    except Exception as e:  # noqa: BLE001 - the user's backward: any error
        if is_memory_error(e):
            return None
        return e
    return None


def _unsupported(params):
    for p in params:
        if p.kind in P.UNSUPPORTED or (p.kind == P.STR and not p.candidates):
            what = {P.CALLABLE: "it is called in forward", P.OBJECT: "forward uses attributes a tensor does not have",
                    P.SEQUENCE: "forward iterates over it", P.STR: "a string, compared with no literal"}[p.kind]
            if p.kind == P.OBJECT and p.why in ("its name", "annotation"):
                what = "an object, by its %s" % ("name" if p.why == "its name" else "annotation")
            return p, what
    return None, None


def synthesize(fn, fclass, spec, opts, reporter):
    """(args, info, recipe) for ``fn``, or an Outcome (no_inputs, or the code's own bug)."""
    from .. import customops

    params = customops.schema_params(fn) if customops.is_op(fn) else P.infer(fn, fclass)
    if params is None:
        raise Outcome("no_inputs", None,
                      "cannot read the signature of the target; declare inputs with `# gradlint: inputs=...`")
    star = next((p for p in (value_params(fn, fclass) or []) if p.kind == p.VAR_POSITIONAL), None)
    if star is not None and not customops.is_op(fn):
        found = callers.star_arity(fn, fclass)
        if found is None or found[0] > MAX_STAR or any(p.kind == P.DEFAULT and not p.keyword_only for p in params):
            raise Outcome("no_inputs", None,
                          "cannot make values for `*%s` (the signature does not say how many); declare inputs with "
                          "`# gradlint: inputs=...`" % star.name, synthesis={"params": [p.describe() for p in params]})
        arity, source = found  # as many tensors as the module's own calls pass (or backward's gradients)
        for i in range(arity):
            extra = P.Param("%s[%d]" % (star.name, i), P.TENSOR, requires_grad=True,
                            why="*%s: %d value%s, %s" % (star.name, arity, "" if arity == 1 else "s", source))
            params.append(extra)
    bad, what = _unsupported(params)
    if bad is not None:
        raise Outcome("no_inputs", None,
                      "cannot make a value for `%s` (%s); declare inputs with `# gradlint: inputs=...`"
                      % (bad.name, what), synthesis={"params": [p.describe() for p in params]})
    seed = int(spec.get("seed", opts["seed"]))
    n_t = sum(1 for p in params if p.kind == P.TENSOR)
    tensor_names = [p.name for p in params if p.kind == P.TENSOR]
    try:
        found = {} if customops.is_op(fn) else constraints.infer(fn, fclass, tensor_names)
    except Exception:  # noqa: BLE001 - reading the code is best effort
        found = {}
    if n_t and not any(p.requires_grad for p in params):
        for p in params:  # every tensor gets None from backward: still check the first
            if p.kind == P.TENSOR:
                p.requires_grad = True
                break
    shapes = spec.get("shapes")
    if shapes:
        if len(shapes) != n_t:
            raise Outcome("error", "bad_request",
                          "✗ bad request: %d shapes given for %d tensor parameters" % (len(shapes), n_t))
        strategies = [[tuple(s) for s in shapes]]
    else:
        strategies = shape_strategies(n_t) if n_t else [[]]
        constrained = constraints.shapes_for(tensor_names, found) if n_t else None
        if constrained is not None:  # the shapes the code asks for first
            strategies = [constrained] + [x for x in strategies if x != constrained]
    search = Search(fn, params, opts, reporter)
    search.constraints = found
    recipe = search.run(strategies, seed)
    if recipe is None:
        raise search.failure()
    args = recipe.make(seed)
    info = recipe.info(seed)
    info["attempts"] = search.attempts
    if recipe is search.backward_fails:  # no shape tried made a Function whose backward runs
        info["backward_rejected"] = sorted(set(t for e, t in search.errors if " in backward: " in t))[:3]
    return args, info, recipe


class Search(object):
    def __init__(self, fn, params, opts, reporter):
        self.fn = fn
        self.params = params
        self.opts = opts
        self.reporter = reporter
        self.attempts = 0
        self.errors = []  # (exception, "Type: first line")
        self.nonfinite = 0
        self.vacuous = None  # the first recipe forward accepts, though its outputs do not move
        self.backward_fails = None  # the first recipe forward accepts and backward raises on
        self.hints = []  # shapes named by error messages ("Bx3x3", "last dim should be 4")
        self.started = time.monotonic()
        self.constraints = {}  # name -> constraints.Constraint read from the code
        self.float32_failed = set()  # float64 errors whose float32 retry failed too (``_gist``)
        self.named_choices = False  # an error listed the values a string parameter takes (``choices``)

    def exhausted(self):
        return self.attempts >= MAX_ATTEMPTS or time.monotonic() - self.started > MAX_SECONDS

    def run(self, strategies, seed):
        variants = (0, 1, 2) if any(p.kind == P.INDEX for p in self.params) else (0,)
        n = len(strategies[0]) if strategies else 0
        for values in _scalar_assignments(self.params):
            queue = list(strategies)
            position = 0
            while position < len(queue):
                for hinted in reversed(self.hinted_shapes(n)):  # shapes an error message asked for: next
                    if hinted not in queue[:position]:
                        if hinted in queue:
                            queue.remove(hinted)
                        queue.insert(position, hinted)
                shapes = queue[position]
                position += 1
                for variant in variants:
                    recipe = self.try_domains(values, shapes, variant, seed)
                    if recipe is not None:
                        return recipe
                    if self.exhausted():
                        return self.vacuous or self.backward_fails
                if self.named_choices:  # forward named the values a string takes: try them, not more shapes
                    self.named_choices = False
                    break
        # inputs whole Function takes, though nothing moves, before inputs backward rejects
        return self.vacuous or self.backward_fails

    def learn_choices(self, message, values):
        """A string parameter whose value forward refused with the values it takes ("Unknown
        method: auto. Available: cg, bicgstab, gmres"; "must be one of ['sum', 'mean']") gets them
        as candidates. True when some were new, or the value tried is not among them (no other shape
        makes forward take it: the search moves on to the other values)."""
        named = choices(message)
        learned = False
        for p in self.params:
            value = values.get(p.name)
            if p.kind != P.STR or not isinstance(value, str) or not named or value not in message:
                continue
            new = [c for c in named if c not in p.candidates]
            p.candidates.extend(new)
            p.modes = [m for m in p.modes if m in named] + [c for c in named if c not in p.modes]  # each is checked
            learned = learned or bool(new) or value not in named  # this value is refused: move on to others
        return learned

    def hinted_shapes(self, n):
        out = []
        while self.hints and n:
            shape = self.hints.pop(0)
            out.append([shape] * n)
        return out

    def try_domains(self, values, shapes, variant, seed):
        for domain in DOMAINS:
            recipe = Recipe(self.params, values, shapes, domain, variant, self.constraints)
            verdict = self.try_recipe(recipe, seed)
            if verdict == "ok":
                return recipe
            if verdict == "vacuous" and self.vacuous is None:
                self.vacuous = recipe._copy(recipe.shapes, recipe.domain)  # nothing moves: keep looking
            if verdict == "shape" or self.exhausted():
                return None
        return None

    def try_recipe(self, recipe, seed):
        """ "ok", "domain" (try another domain) or "shape" (try another shape). Forward and one
        backward on one input set get ``ATTEMPT_SECONDS`` at most (less when the search's time is
        nearly up): inputs of a shape forward takes nearly forever on (a batch it loops over, a
        solver that does not converge) are passed over, not waited for until the run's limit."""
        seconds = max(MIN_ATTEMPT_SECONDS, min(ATTEMPT_SECONDS, MAX_SECONDS - (time.monotonic() - self.started)))
        try:
            with time_limit(seconds):
                return self.try_inputs(recipe, seed)
        except TooLong:
            self.errors.append((TimeoutError(), "forward and backward ran longer than %.0f s on these inputs" % seconds))
            return "shape"

    def try_inputs(self, recipe, seed):
        self.attempts += 1
        try:
            args = recipe.make(seed)
            torch.manual_seed(self.opts["seed"])
            out = self.fn(*args)
        except Exception as e:
            if is_memory_error(e) or needs_a_device(e):  # no other input helps
                raise self.reporter.user_exception(e, "forward")
            refusing = [p.name for p in self.params if p.kind == P.TENSOR and p.none_grad and p.requires_grad]
            if recipe.dtype == torch.float64 and float64_refused(e) and gist(e) not in self.float32_failed:
                # forward made for float32 (a buffer of torch's default dtype filled with float64's
                # max, a kernel typed for float): the same inputs in float32, checked at its resolution
                recipe.dtype, recipe.float64_error = torch.float32, "%s: %s" % (type(e).__name__,
                                                                                first_line(exc_text(e, 200)))
                recorded = len(self.errors)
                if self.try_inputs(recipe, seed) == "ok":
                    return "ok"
                recipe.dtype, recipe.float64_error = torch.float64, None
                del self.errors[recorded:]  # the float32 attempt's: this one's error is recorded below
                self.float32_failed.add(gist(e))  # the same error again: not retried in float32
            if refusing and not recipe.constants:
                # forward may refuse inputs that require grad (`if x1.requires_grad: raise`) for which
                # backward returns None: those are constants by design, left undifferentiated
                recipe.constants = set(refusing)
                verdict = self.try_inputs(recipe, seed)
                if verdict in ("ok", "vacuous"):
                    return verdict
                recipe.constants = set()
            self.errors.append((e, "%s: %s" % (type(e).__name__, first_line(exc_text(e, 300)))))
            self.hints.extend(s for s in shape_hints(str(e)) if s not in self.hints)
            self.named_choices = self.learn_choices(str(e), recipe.values) or self.named_choices
            if learn_domains(str(e), self.params, self.constraints):
                return "domain"  # the next domain's recipe has it
            return "domain" if looks_like_domain(e) else "shape"
        if not finite(out):
            self.nonfinite += 1
            return "domain"
        try:
            flat = not _responds(self.fn, args, out, self.opts["seed"])
        except Exception:
            flat = False  # forward failed on perturbed inputs: keep this input set, the checks will tell
        error = backward_error(args, out)
        if flat and error is None:
            return "vacuous"
        if error is not None:
            # forward accepts these shapes (broadcasting, a vector where a matrix is meant) but
            # backward does not: look for shapes the whole Function takes; if none, these
            # inputs are used and the checks report backward's error
            self.errors.append((error, "%s in backward: %s" % (type(error).__name__, first_line(exc_text(error, 300)))))
            if self.backward_fails is None:
                self.backward_fails = recipe._copy(recipe.shapes, recipe.domain)
            return "shape"
        return "ok"

    def failure(self):
        """The Outcome when no input set worked."""
        if self.errors:
            texts = [t for _e, t in self.errors]
            first_exc = self.errors[0][0]
            same = len(set(texts)) == 1 and len(texts) > 1
            code_bug = isinstance(first_exc, _CODE_BUGS + (AttributeError,)) or any(
                phrase in texts[0] for phrase in _TORCH_SAYS_CODE_BUG)
            if _no_kernel(first_exc):
                text = str(first_exc)
                op = text.split("'")[1]
                device = text.split("from the '", 1)[1].split("'", 1)[0] if "from the '" in text else "CPU"
                locations = getattr(self.reporter, "op_locations", None) or {}
                return Outcome("error", "exception",
                               "✗ the op `%s` has no kernel for the %s backend: register one "
                               "(torch.library.impl, Library.impl, register_kernel)" % (op, device),
                               first_line(text).split(". ")[0] + ".", location=locations.get("op"))
            if same and writes_to_leaf(first_exc):  # the code writes to its input: no input helps
                return leaf_write_outcome(first_exc, self.reporter, self.attempts)
            if same and code_bug and not _abstract(first_exc):
                oc = self.reporter.user_exception(first_exc, "forward")
                oc.extra["synthesis"] = {"attempts": self.attempts, "params": [p.describe() for p in self.params]}
                return oc
            if _abstract(first_exc):
                return Outcome("no_inputs", None,
                               "abstract Function: forward needs `%s`, which only subclasses define"
                               % _missing_attribute(first_exc))
            last = texts[-1]
        else:
            last = "forward returned NaN or inf for every input set"
        return Outcome(
            "no_inputs", None,
            "no synthesized inputs worked (%d tried; last: %s); declare inputs with `# gradlint: inputs=...`"
            % (self.attempts, last[:160]),
            "\n".join(sorted(set(t for _e, t in self.errors)))[:4000] or None,
            synthesis={"attempts": self.attempts, "params": [p.describe() for p in self.params]},
        )


def _abstract(exc):
    return isinstance(exc, (AttributeError, NotImplementedError)) and (
        "type object" in str(exc) or isinstance(exc, NotImplementedError)) and not _no_kernel(exc)


def _no_kernel(exc):
    """A custom op with no kernel for the inputs' device: torch's own message says which."""
    return isinstance(exc, NotImplementedError) and str(exc).startswith("Could not run '")


def _missing_attribute(exc):
    text = str(exc)
    if "attribute '" in text:
        return text.split("attribute '", 1)[1].split("'", 1)[0]
    return "an implementation"
