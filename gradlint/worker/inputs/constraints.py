"""What a target's tensor inputs must look like, read from its code before inputs are synthesized.

Random inputs that ignore the code's own assumptions make forward raise, or make the check
vacuous (query points outside an interpolation grid, an unsorted grid, a dense matrix where a
sparse one is meant). Before synthesis, the target's forward, its backward, the module's helpers
forward passes the tensor to, and the module's wrappers that call ``Cls.apply`` (their argument
names mapped to the target's parameters) are read for:

- **shapes**: ``assert x.ndim == 2``, ``if A.dim() != 2: raise``, ``assert x.shape[-1] == 3``,
  ``B, T = x.shape``, ``x.view(-1, 3)``, indexing ``x[..., 0]``/``x[..., 1]`` (a last dim of 2), and the
  docstrings' shapes (``x : (N,) or (D, N)``, ``D : Tensor, shape=[b, m, n]``, ``- a: (B, T, order)``),
  whose named sizes are shared between inputs (``B`` is one size everywhere);
- **layouts**: ``x.layout``, ``x.is_sparse``, ``x.indices()``, ``x.coalesce()`` (COO),
  ``x.crow_indices()``, ``x.col_indices()``, ``torch.sparse_csr`` (CSR);
- **values**: ``log``/``sqrt``/``rsqrt``/``lgamma`` (positive), ``acos``/``asin``/``atanh``
  (inside (-1, 1)), ``clamp(x, a, b)`` with literal bounds (inside them, where it is not flat; a
  bound a hair off a whole number, ``1 - 1e-15``, guards a singularity: inside only),
  ``searchsorted(x, ...)``/``bucketize(v, x)`` (sorted along its last dim).

Each finding says where it comes from; ``synthesis`` tries the constrained inputs first.
"""

import ast
import inspect
import re
import sys
import textwrap

from .param_usage import helper_named

_POSITIVE = frozenset(("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma", "polygamma", "reciprocal"))
_OPEN_UNIT = frozenset(("acos", "asin", "atanh", "arccos", "arcsin", "arctanh"))
_COO = frozenset(("indices", "_indices", "coalesce", "is_coalesced", "_values"))
_CSR = frozenset(("crow_indices", "col_indices", "ccol_indices", "row_indices"))
_SPARSE = frozenset(("is_sparse", "is_sparse_csr", "to_dense", "values"))
_SIZE_NAMES = (3, 4, 2, 5, 6, 7)  # the sizes named dims get, in order of first appearance


class Constraint(object):
    def __init__(self):
        self.ndim = None  # exact rank
        self.ndims = []  # ranks a docstring offers, most specific first
        self.dims = {}  # axis (may be negative) -> size
        self.min_last = None  # the last dim is at least this (x[..., k] indexing)
        self.symbols = None  # docstring shape: [symbol or int], shared sizes across inputs
        self.layouts = []  # "coo", "csr", most likely first
        self.layout_scores = {}  # layout -> how specific the evidence is
        self.domain = None  # "positive", "open_unit", "sorted", ("range", lo, hi), ("range", lo, hi, "guard")
        self.insisted = False  # the domain came from forward's own error: it overrides the recipe's
        self.why = []

    def describe(self, name):
        return "%s: %s" % (name, "; ".join(self.why))

    def empty(self):
        return not (self.ndim or self.ndims or self.dims or self.min_last or self.symbols or self.layouts
                    or self.domain)


def say(found, name, why):
    c = found.setdefault(name, Constraint())
    if why not in c.why:
        c.why.append(why)
    return c


def _int(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    return None


def _subject(node, names):
    """(parameter, what) for ``p.ndim``, ``p.dim()``, ``len(p.shape)`` (what "ndim"), ``p.shape[i]``,
    ``p.size(i)`` (what i), else (None, None)."""
    if isinstance(node, ast.Attribute) and node.attr == "ndim" and isinstance(node.value, ast.Name):
        return node.value.id if node.value.id in names else None, "ndim"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id in names:
        if node.func.attr == "dim" and not node.args:
            return node.func.value.id, "ndim"
        if node.func.attr == "size" and len(node.args) == 1 and _int(node.args[0]) is not None:
            return node.func.value.id, _int(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        inner = node.args[0]
        if isinstance(inner, ast.Attribute) and inner.attr == "shape" and isinstance(inner.value, ast.Name) \
                and inner.value.id in names:
            return inner.value.id, "ndim"
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and isinstance(node.value.value, ast.Name) and node.value.value.id in names and _int(node.slice) is not None:
        return node.value.value.id, _int(node.slice)
    return None, None


class _Reader(ast.NodeVisitor):
    """Collects constraints on ``mapping``'s local names (each mapped to a target parameter)."""

    def __init__(self, mapping, found, where):
        self.mapping = mapping
        self.found = found
        self.where = where

    def _name(self, node):
        node = _base(node)
        return self.mapping.get(node.id) if isinstance(node, ast.Name) else None

    def _condition(self, test, negated):
        """A condition that must hold (an assert: negated False) or must not (``if ...: raise``)."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if not negated else ast.Or):
            for value in test.values:
                self._condition(value, negated)
            return
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return
        local, what = _subject(test.left, self.mapping)
        op, right = test.ops[0], test.comparators[0]
        if local is None:
            return
        param = self.mapping[local]
        equal = (isinstance(op, ast.Eq) and not negated) or (isinstance(op, ast.NotEq) and negated)
        value = _int(right)
        if equal and value is not None:
            c = say(self.found, param, "%s %s (%s)" % ("ndim ==" if what == "ndim" else "shape[%d] ==" % what,
                                                         value, self.where))
            if what == "ndim":
                c.ndim = value
            else:
                c.dims[what] = value
        elif what == "ndim" and isinstance(right, (ast.Tuple, ast.List)) and (
                isinstance(op, ast.In) and not negated or isinstance(op, ast.NotIn) and negated):
            ranks = [_int(e) for e in right.elts if _int(e) is not None]
            if ranks:
                c = say(self.found, param, "ndim in %s (%s)" % (tuple(ranks), self.where))
                c.ndims = sorted(ranks, reverse=True)
        elif what == "ndim" and value is not None and (
                isinstance(op, ast.LtE) and not negated or isinstance(op, ast.Gt) and negated):
            c = say(self.found, param, "ndim <= %d (%s)" % (value, self.where))
            c.ndims = c.ndims or list(range(value, 0, -1))

    def visit_Assert(self, node):
        self._condition(node.test, False)
        self.generic_visit(node)

    def visit_If(self, node):
        if node.body and isinstance(node.body[0], ast.Raise):
            self._condition(node.test, True)
        self.generic_visit(node)

    def visit_Assign(self, node):
        # `B, T = x.shape` / `n, _ = x.size()`: the rank
        value = node.value
        shaped = None
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            shaped = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size" \
                and not value.args:
            shaped = value.func.value
        param = self._name(shaped) if shaped is not None else None
        if param and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)):
            elts = node.targets[0].elts
            if not any(isinstance(e, ast.Starred) for e in elts):
                c = say(self.found, param, "ndim == %d (unpacked shape, %s)" % (len(elts), self.where))
                c.ndim = c.ndim or len(elts)
        self.generic_visit(node)

    def visit_Subscript(self, node):
        param = self._name(node.value)
        slices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if param and len(slices) >= 2 and isinstance(slices[0], ast.Constant) and slices[0].value is Ellipsis:
            k = _int(slices[-1])
            if k is not None and k >= 0:
                c = say(self.found, param, "last dim > %d (%s[..., %d], %s)" % (k, param, k, self.where))
                c.min_last = max(c.min_last or 0, k + 1)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        param = self._name(node.value)
        if param:
            if node.attr in _CSR or node.attr == "is_sparse_csr":
                self._layout(param, "csr", node.attr, 2)
            elif node.attr in _COO:
                self._layout(param, "coo", node.attr, 2)
            elif node.attr in ("layout", "is_sparse"):
                self._layout(param, "coo", node.attr, 0)
        self.generic_visit(node)

    def visit_Compare(self, node):
        # `A.layout == torch.sparse_csr`, `A.layout not in (torch.sparse_coo, torch.sparse_csr)`: the layouts named
        left = node.left
        param = self._name(left.value) if isinstance(left, ast.Attribute) and left.attr == "layout" else None
        if param:
            named = [n.attr for c in node.comparators for n in ast.walk(c) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id == "torch" and n.attr.startswith("sparse_")]
            for attr in named:
                self._layout(param, "coo" if attr == "sparse_coo" else "csr", "layout == torch.%s" % attr, 3)
        self.generic_visit(node)

    def _layout(self, param, kind, attr, strength):
        c = say(self.found, param, "sparse (%s.%s, %s)" % (param, attr, self.where) if "torch." not in attr
                 else "sparse (%s, %s)" % (attr, self.where))
        scores = c.layout_scores
        scores[kind] = max(scores.get(kind, 0), strength)
        c.layouts = sorted(scores, key=lambda k: (-scores[k], k))

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        method_of = self._name(func.value) if isinstance(func, ast.Attribute) else None
        first = self._name(node.args[0]) if node.args else None
        target = method_of or (first if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                               and func.value.id in ("torch", "np", "numpy", "math", "F", "special") else None)
        if name in _POSITIVE and target:
            say(self.found, target, "positive (%s, %s)" % (name, self.where)).domain = "positive"
        elif name in _OPEN_UNIT and target:
            say(self.found, target, "inside (-1, 1) (%s, %s)" % (name, self.where)).domain = "open_unit"
        elif name in ("clamp", "clip", "clamp_min", "clamp_max") and target:
            lo, hi = _clamp_bounds(name, node, bool(method_of))
            if (_guard(lo) or _guard(hi)) and (lo is None or hi is None or lo < hi):
                # x.clamp(-1 + 1e-15, 1 - 1e-15), x.clamp(min=1 + 1e-15): bounds a hair inside a
                # round number keep x off a singularity there (atanh at ±1, acosh at 1): a guard of
                # the Function's domain, not a clamp it models; outside it the Function is not meant
                # to be differentiated, so inputs are drawn inside only
                say(self.found, target, "inside %s (a clamp guarding a singularity, %s)" % (
                    _interval(lo, hi), self.where)).domain = ("range", lo, hi, "guard")
            elif lo is not None and hi is not None and lo < hi:
                say(self.found, target, "inside [%g, %g] (clamp, %s)" % (lo, hi, self.where)).domain = \
                    ("range", lo, hi)
        elif name in ("view", "reshape") and method_of and len(node.args) >= 2:
            sizes = [_int(a) for a in node.args]
            if sizes[0] == -1 and all(k is not None and k > 0 for k in sizes[1:]):
                # x.view(-1, 3): rows of 3 (a point, a triple); x.view(-1, 2, 2): 2×2 blocks
                c = say(self.found, method_of, "trailing dims %s (%s.%s(-1, %s), %s)" % (
                    tuple(sizes[1:]), method_of, name, ", ".join(str(k) for k in sizes[1:]), self.where))
                for back, k in enumerate(reversed(sizes[1:])):
                    c.dims.setdefault(-1 - back, k)
        elif name == "searchsorted" and node.args:
            grid = self._name(node.args[0])
            if grid:
                say(self.found, grid, "sorted along its last dim (searchsorted, %s)" % self.where).domain = "sorted"
        elif name == "bucketize" and len(node.args) >= 2:
            grid = self._name(node.args[1])
            if grid:
                say(self.found, grid, "sorted (bucketize, %s)" % self.where).domain = "sorted"
        self.generic_visit(node)


_SAME_TENSOR = frozenset(("contiguous", "detach", "clone", "float", "double", "to", "cpu", "squeeze", "unsqueeze",
                          "view", "reshape", "flatten", "t", "transpose", "expand", "expand_as", "coalesce"))


def _base(node):
    """The tensor an expression is a view or copy of: ``xp.contiguous()`` -> ``xp``."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SAME_TENSOR:
        node = node.func.value
    return node


_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


def _number(node):
    """A literal number, or arithmetic on literals (``1 - 1e-15``, ``-1 + eps`` is not one)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _number(node.left), _number(node.right)
        return _ARITHMETIC[type(node.op)](left, right) if left is not None and right is not None else None
    return None


def _clamp_bounds(name, node, method):
    """``(lo, hi)`` of a clamp call, each a literal number or None (one-sided, or not a literal)."""
    positional = node.args if method else node.args[1:]
    keywords = dict((k.arg, k.value) for k in node.keywords)
    if name == "clamp_min":
        return _number(positional[0]) if positional else None, None
    if name == "clamp_max":
        return None, _number(positional[0]) if positional else None
    lo = positional[0] if positional else keywords.get("min")
    hi = positional[1] if len(positional) > 1 else keywords.get("max")
    return (_number(lo) if lo is not None else None), (_number(hi) if hi is not None else None)


def _guard(bound):
    """A bound a hair (≤ 1e-6, relative) off a whole number: ``1 - 1e-15``, ``1.0 + 1e-7``."""
    if bound is None:
        return False
    whole = round(bound)
    return bound != whole and abs(bound - whole) <= 1e-6 * max(1.0, abs(whole))


def _interval(lo, hi):
    if lo is None:
        return "(-inf, %g]" % hi
    if hi is None:
        return "[%g, inf)" % lo
    return "[%g, %g]" % (lo, hi)


_SHAPE = re.compile(r"[\(\[]\s*([A-Za-z_][\w]*|\d+)((?:\s*[,x×]\s*(?:[A-Za-z_][\w]*|\d+|\.\.\.|\*))*)\s*,?\s*[\)\]]")


def _doc_shapes(doc, mapping, found, where):
    """``x : (N,) or (D, N)``, ``- a: :math:`(B, T, order)```, ``D : Tensor, shape=[b, m, n]``."""
    if not doc:
        return
    for line in doc.splitlines():
        stripped = line.strip().lstrip("-*").strip()
        for local, param in mapping.items():
            if not re.match(r"^`?%s`?\s*(\(.*?\))?\s*[:(]" % re.escape(local), stripped) and \
                    not re.match(r"^`?%s`?\s*:" % re.escape(local), stripped):
                continue
            shapes = []
            for m in _SHAPE.finditer(stripped[len(local):]):
                parts = [m.group(1)] + [p.strip() for p in re.split(r"[,x×]", m.group(2)) if p.strip()]
                if any(p in ("...", "*") for p in parts) or len(parts) > 6:
                    continue
                if all(p.isdigit() for p in parts) and len(parts) == 1:
                    continue  # "(default: 0)" and the like
                shapes.append(parts)
            if shapes:
                best = max(shapes, key=len)
                c = say(found, param, "shape (%s) (docstring, %s)" % (", ".join(best), where))
                c.symbols = c.symbols or best
    _numpydoc_shapes(doc, mapping, found, where)


_ENTRY = re.compile(r"^(\s*)(\w+(?:\s*,\s*\w+)*)\s*:\s*(.*)$")


def _numpydoc_shapes(doc, mapping, found, where):
    """NumPy-style entries whose shape is in the description below the names: ``x_obs, y_obs :
    Tensor`` then, indented, ``East/north observation coordinates [B, N] in metres``. The first
    shape of an entry is the one it is given in ("[B] (or per-pixel [B, N])": [B]). Only for
    parameters no other line gave a shape."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        m = _ENTRY.match(line)
        if not m:
            continue
        names = [n.strip() for n in m.group(2).split(",")]
        ours = [mapping[n] for n in names if n in mapping and not (found.get(mapping[n]) and found[mapping[n]].symbols)]
        if not ours:
            continue
        indent, text = len(m.group(1)), [m.group(3)]
        for following in lines[i + 1:]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            text.append(following.strip())
        for sm in _SHAPE.finditer(" ".join(text)):
            parts = [sm.group(1)] + [p.strip() for p in re.split(r"[,x×]", sm.group(2)) if p.strip()]
            if any(p in ("...", "*") for p in parts) or len(parts) > 6 or (len(parts) == 1 and parts[0].isdigit()):
                continue
            for param in ours:
                c = say(found, param, "shape (%s) (docstring, %s)" % (", ".join(parts), where))
                c.symbols = c.symbols or parts
            break


def _functions_calling(module, cls_name):
    """(function, [argument names passed positionally]) for module functions calling ``cls_name.apply``."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except Exception:
        return []
    out = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "apply" \
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == cls_name:
                fn = getattr(module, node.name, None)
                if callable(fn):
                    out.append((fn, node, call))
                break
    return out


def _tree(fn):
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(getattr(fn, "__func__", fn)))))
    except Exception:
        return None


def _local_calls(tree, mapping):
    """(function name, {helper parameter position: our parameter}) for plain calls passing ours."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            passed = dict((i, mapping[a.id]) for i, a in enumerate(node.args) if isinstance(a, ast.Name)
                          and a.id in mapping)
            if passed:
                out.append((node.func.id, passed))
    return out


def infer(fn, fclass, names):
    """{parameter name: Constraint} for the target's tensor parameters ``names``."""
    found = {}
    identity = dict((n, n) for n in names)
    forward = fclass.forward if fclass is not None else fn
    readings = [(forward, identity, "forward")]
    if fclass is not None and "backward" in vars(fclass):
        readings.append((fclass.backward, identity, "backward"))
    for function, mapping, where in list(readings):
        tree = _tree(function)
        if tree is None:
            continue
        _Reader(mapping, found, where).visit(tree)
        _doc_shapes(inspect.getdoc(function), mapping, found, where)
        for helper_name, passed in _local_calls(tree, mapping):  # the module's helpers, one level
            helper = helper_named(function, helper_name)
            if helper is None:
                continue
            try:
                params = list(inspect.signature(helper).parameters)
            except (TypeError, ValueError):
                continue
            inner = dict((params[i], ours) for i, ours in passed.items() if i < len(params))
            htree = _tree(helper)
            if htree is not None and inner:
                _Reader(inner, found, "%s()" % helper_name).visit(htree)
    if fclass is not None:
        _doc_shapes(inspect.getdoc(fclass), identity, found, "class docstring")
        module = sys.modules.get(fclass.__module__)
        if module is not None:
            for wrapper, node, call in _functions_calling(module, fclass.__name__)[:4]:
                mapping = dict((a.id, names[i]) for i, a in enumerate(call.args)
                               if isinstance(a, ast.Name) and i < len(names))
                if not mapping:
                    continue
                _Reader(mapping, found, "%s()" % node.name).visit(node)
                _doc_shapes(inspect.getdoc(wrapper), mapping, found, "%s() docstring" % node.name)
    return dict((n, c) for n, c in found.items() if not c.empty())


def shapes_for(params, constraints, default=(3, 4)):
    """The shapes of the tensor parameters ``params`` (names, in order) that meet ``constraints``;
    None when no constraint says anything about shapes."""
    if not any(c.ndim or c.ndims or c.dims or c.min_last or c.symbols or c.layouts for c in constraints.values()):
        return None
    sizes = {}

    def size_of(symbol):
        if symbol.isdigit():
            return int(symbol)
        if symbol not in sizes:
            sizes[symbol] = _SIZE_NAMES[len(sizes) % len(_SIZE_NAMES)]
        return sizes[symbol]

    out = []
    for name in params:
        c = constraints.get(name)
        if c is None:
            out.append(tuple(default))
            continue
        if c.symbols:
            shape = [size_of(s) for s in c.symbols]
        else:
            rank = c.ndim or (c.ndims[0] if c.ndims else (2 if c.layouts else len(default)))
            base = [4, 4] if c.layouts and rank == 2 else list((3, 4, 5, 6, 7)[:rank])
            shape = base[-rank:] if rank <= len(base) else base + [2] * (rank - len(base))
        if c.ndim and len(shape) != c.ndim:
            shape = (list(shape) + [3] * c.ndim)[:c.ndim]
        for axis, size in c.dims.items():
            if -len(shape) <= axis < len(shape):
                shape[axis] = size
        if c.min_last and shape and -1 not in c.dims and (len(shape) - 1) not in c.dims:
            # x[..., 0], x[..., 1]: pairs (or triples) in the last dim, e.g. (re, im) or (x, y)
            shape[-1] = c.min_last if c.min_last in (2, 3) else max(shape[-1], c.min_last)
        out.append(tuple(shape))
    return out
