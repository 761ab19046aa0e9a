"""Evidence of what each parameter takes, from how the code uses it.

How forward (and the helpers it calls, one level deep) uses a parameter — ``dim=p``,
``x.size(p)``, ``range(p)``, ``p == "mean"``, ``if p:``, ``x.gather(1, p)``, ``~p``, ``p(...)`` —
and how backward uses what forward kept on ctx or saved for backward; plus the positions
whose gradient backward returns as a literal ``None``. ``params`` weighs this evidence.
"""

import ast
import importlib
import importlib.util
import inspect
import re
import sys
import textwrap

import torch

from .kinds import BOOL, CALLABLE, FLOAT, INDEX, INT, MASK, NONE, OBJECT, SEQUENCE, SIZE, STR, TENSOR

_INT_KEYWORDS = frozenset((
    "dim", "axis", "dims", "k", "n", "num", "repeats", "chunks", "diagonal", "offset", "start_dim",
    "end_dim", "dim0", "dim1", "groups", "stride", "padding", "dilation", "kernel_size", "num_classes",
    "split_size_or_sections", "sections", "steps", "size", "shifts", "upscale_factor",
))
_NUMBER_KEYWORDS = frozenset((
    "eps", "alpha", "beta", "min", "max", "p", "value", "negative_slope", "threshold", "lambd",
    "momentum", "scale", "temperature", "tau", "margin", "rtol", "atol", "exponent",
))
_INDEX_METHODS = {  # function -> which positional argument is an index tensor (one fewer as a method)
    "gather": 2, "scatter": 2, "scatter_add": 2, "scatter_reduce": 2, "index_select": 2,
    "index_add": 2, "index_copy": 2, "index_fill": 2, "take_along_dim": 1, "take": 1,
    "one_hot": 0, "nll_loss": 1, "cross_entropy": 1, "embedding": 0, "bincount": 0,
}
# functions whose first argument (after the tensor, for methods) is a size
_SIZE_FUNCTIONS = frozenset(("randn", "rand", "zeros", "ones", "empty", "full", "new", "new_zeros", "new_ones",
                             "new_empty", "new_full", "expand", "view", "reshape", "broadcast_to"))
_SIZE_FUNCTIONS_WITH_FILL = frozenset(("full", "new_full"))  # (size, fill_value)
_SIZE_METHODS = frozenset(("expand", "view", "reshape", "broadcast_to"))  # torch.reshape(x, size)
_OBJECT_KEYWORDS = frozenset(("group", "process_group", "pg", "stream", "device_mesh", "mesh"))


class Evidence(object):
    def __init__(self):
        self.votes = {}  # name -> {kind: strength}
        self.literals = {}  # name -> [literals it is compared with]
        self.helper_defaults = {}  # name -> [string defaults of the helper parameters it is passed to]
        self.called_with = {}  # name -> [values the module's own calls of the target pass]
        self.unused = set()  # parameters forward overwrites before reading them
        # parameters that set how far an iterative approximation goes: the bound of a loop
        # (``for _ in range(n)``, ``while i < max_iter``), a tolerance a loop stops at
        # (``while err > tol``, ``if err < tol: break``), or one handed on as such (``tol=tol``)
        self.refines = set()
        self.optional_factors = set()  # ``if p is None: p = <default>`` and then ``x * p``: see optional_factors
        self.block_sizes = set()  # ``x.split(p)``, ``range(0, n, p)``: see block_sizes

    def vote(self, name, kind, strength=1):
        d = self.votes.setdefault(name, {})
        d[kind] = d.get(kind, 0) + strength

    def best(self, name):
        d = self.votes.get(name)
        if not d:
            return None, 0
        kind = max(d, key=lambda k: (d[k], k == TENSOR))
        return kind, d[kind]


# keywords that hand an iteration count or a tolerance on to a solver
REFINING_KEYWORDS = frozenset(("max_iter", "maxiter", "max_iters", "n_iter", "n_iters", "num_iter", "num_iters",
                               "niter", "iters", "iterations", "n_steps", "num_steps", "max_steps", "tol", "atol",
                               "rtol", "xtol", "ftol", "gtol", "tolerance"))


def defined_in_user_class(fclass, name):
    for klass in getattr(fclass, "__mro__", ()):
        if name in vars(klass):
            return not klass.__module__.startswith("torch.")
    return False


def source_tree(func):
    try:
        func = inspect.unwrap(getattr(func, "__func__", func))
        src = textwrap.dedent(inspect.getsource(func))
        return ast.parse(src)
    except Exception:
        return None


_MODULES = frozenset(("torch", "F", "functional", "nn", "np", "numpy", "math", "special", "linalg", "fft"))


def _module_call(func):
    """``torch.sum(...)``, ``F.softmax(...)``, ``torch.linalg.norm(...)``: a module's function."""
    value = func.value if isinstance(func, ast.Attribute) else None
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name) and value.id in _MODULES


def optional_factors(tree, names):
    """Parameters that forward defaults when they are None (``if scale is None: scale = d ** -0.5``)
    and then multiplies or divides by (``scores * scale``): a factor the caller may set. A backward
    that recomputes the default instead of using the value passed (a classic attention bug) is
    right only at the default, so a run checks such a parameter at a value of its own too."""
    defaulted = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_none_test(node.test, names):
            name = node.test.left.id
            if any(isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
                   for s in node.body):
                defaulted.add(name)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            for side in (node.left, node.right):
                if isinstance(side, ast.Name) and side.id in defaulted:
                    found.add(side.id)
    return found


def block_sizes(tree, names):
    """Parameters that set the size of the blocks forward cuts a tensor into: ``x.split(p, dim)``,
    ``torch.split(x, p)``, the step of ``range(0, n, p)``, ``x.unfold(dim, p, step)`` — directly or
    through a local made from the parameter alone (``p = min(n, p)``). A default of 1024 leaves one
    block at any input a check can afford, and the code that joins blocks (an online softmax's
    running maximum and sum, a causal mask between blocks, a carry) unrun: a run checks a small
    block size as a mode (``BLOCK_SIZES``)."""
    derived = {}  # local -> the one parameter its value is made from
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            used = set(n.id for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id in names)
            if len(used) == 1 and node.targets[0].id not in names:
                derived[node.targets[0].id] = used.pop()

    def param_of(expr):
        if not isinstance(expr, ast.Name):
            return None
        return expr.id if expr.id in names else derived.get(expr.id)

    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else None)
        sizes = []
        if name == "split":
            sizes = node.args[1:2] if _module_call(func) else node.args[:1]
            sizes += [k.value for k in node.keywords if k.arg in ("split_size", "split_size_or_sections")]
        elif name == "range" and len(node.args) == 3:
            sizes = node.args[2:]
        elif name == "unfold" and isinstance(func, ast.Attribute) and not _module_call(func):
            sizes = node.args[1:3]
        for size in sizes:
            p = param_of(size)
            if p:
                found.add(p)
    return found


def _is_dtype_of_bool(a, b):
    """``p.dtype`` compared with ``torch.bool``."""
    return (isinstance(a, ast.Attribute) and a.attr == "dtype" and isinstance(b, ast.Attribute) and b.attr == "bool"
            and isinstance(b.value, ast.Name) and b.value.id == "torch")


def _is_none_test(test, names):
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id in names
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)


def _rebound_at(tree, names):
    """{parameter: last line of the statement that rebinds it} for parameters the function body
    reassigns unconditionally (a statement of the body itself, not inside a branch or loop)."""
    function = next((n for n in getattr(tree, "body", []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                    None)
    found = {}
    for statement in function.body if function is not None else ():
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value is not None else [])
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name) and node.id in names and node.id not in found \
                        and not _defaulted(node.id, statement.value):
                    found[node.id] = statement.end_lineno or statement.lineno
    return found


def _defaulted(name, value):
    """``norm = norm or 'backward'``, ``k = k if k is not None else 3``: the parameter with a default
    for a missing value, still the parameter (its values are the caller's, or the default)."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        first = value.values[0]
    elif isinstance(value, ast.IfExp):
        first = value.body
    else:
        return False
    return isinstance(first, ast.Name) and first.id == name


class Usage(ast.NodeVisitor):
    """Votes for each parameter's kind from how a function body uses it."""

    def __init__(self, names, evidence, tree=None):
        self.names = set(names)
        self.ev = evidence
        self.tensor_attrs = frozenset(dir(torch.Tensor))
        self.calls = []  # (function name, [parameter or None per positional arg], {keyword: parameter})
        self.rebound = _rebound_at(tree, self.names) if tree is not None else {}
        self.read = set()  # parameters read before any rebinding

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and self._param(node):
            self.read.add(node.id)

    def overwritten_unread(self):
        """Parameters the body overwrites before reading them (`mode = 'symmetric'`): any value does."""
        return set(self.rebound) - self.read

    def _param(self, node):
        if not isinstance(node, ast.Name) or node.id not in self.names:
            return None
        # after `mode = int_to_mode(mode)` the name holds another value: its uses say nothing
        return node.id if getattr(node, "lineno", 0) <= self.rebound.get(node.id, float("inf")) else None

    def _root(self, node):
        """The parameter an expression is built on: ``p``, ``p.unsqueeze(1)``, ``p[..., None].long()``."""
        while True:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                node = node.func.value
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            else:
                return self._param(node)

    def visit_keyword(self, node):
        p = self._param(node.value)
        if p and node.arg:
            if node.arg in _OBJECT_KEYWORDS:
                self.ev.vote(p, OBJECT, 3)  # all_reduce(x, group=p)
            elif node.arg in _INT_KEYWORDS:
                self.ev.vote(p, INT, 3)
            if node.arg in REFINING_KEYWORDS:
                self.ev.refines.add(p)
            elif node.arg in _NUMBER_KEYWORDS:
                self.ev.vote(p, FLOAT, 2)
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else None)
        callee = self._param(func)
        if callee:
            self.ev.vote(callee, CALLABLE, 5)
        dotted = (func.id if isinstance(func, ast.Name) else
                  "%s.%s" % (func.value.id, func.attr) if isinstance(func, ast.Attribute)
                  and isinstance(func.value, ast.Name) and not self._param(func.value) else None)
        if dotted and not callee:  # a helper, also through a module alias: ``F.dctn(x, norm=norm)``
            positional = [self._param(a) for a in node.args]
            keywords = dict((k.arg, self._param(k.value)) for k in node.keywords if k.arg)
            if any(positional) or any(keywords.values()):
                self.calls.append((dotted, positional, keywords))
        if name == "range":
            for a in node.args:
                p = self._param(a)
                if p:
                    self.ev.vote(p, INT, 4)
        elif name in ("int",):
            for a in node.args:
                p = self._param(a)
                if p:
                    self.ev.vote(p, INT, 1)
        elif name in ("float",):
            for a in node.args:
                p = self._param(a)
                if p:
                    self.ev.vote(p, FLOAT, 1)
        elif name in ("stack", "cat", "concat", "concatenate", "hstack", "vstack", "dstack", "block_diag",
                      "broadcast_tensors", "cartesian_prod") and _module_call(func) and node.args:
            p = self._param(node.args[0])  # torch.stack(xs): a sequence of tensors
            if p and len(node.args) == 1 or (p and name in ("stack", "cat", "concat", "concatenate")):
                self.ev.vote(p, SEQUENCE, 4)
        elif name in ("len", "list", "tuple", "enumerate", "zip"):
            for a in node.args:
                p = self._param(a)
                if p:
                    self.ev.vote(p, SEQUENCE, 2)
        elif name in ("size", "narrow", "select", "unsqueeze", "squeeze", "flip", "movedim", "transpose",
                      "softmax", "log_softmax", "cumsum", "cumprod", "sum", "mean", "argmax", "argmin",
                      "max", "min", "norm", "logsumexp", "topk", "sort", "argsort", "chunk", "split",
                      "roll", "repeat_interleave", "flatten", "amax", "amin", "prod", "std", "var"):
            # x.size(p), x.sum(p), torch.topk(x, p): a dim or a count
            args = node.args[1:] if _module_call(func) or isinstance(func, ast.Name) else node.args
            for a in args:
                p = self._param(a)
                if p:
                    self.ev.vote(p, INT, 3)
        if name == "save_for_backward":  # only tensors (or None) can be saved
            for a in node.args:
                p = self._param(a)
                if p:
                    self.ev.vote(p, TENSOR, 4)
        if name in _SIZE_FUNCTIONS:
            args = node.args[1:] if name in _SIZE_METHODS and _module_call(func) else node.args
            if args:
                p = self._param(args[0])
                if p and (len(args) == 1 or name in _SIZE_FUNCTIONS_WITH_FILL):
                    self.ev.vote(p, SIZE, 4)
        if name and name.endswith("_") and not name.endswith("__"):
            name = name[:-1]  # x.scatter_add_(dim, index, src): as scatter_add
        index_at = _INDEX_METHODS.get(name) if name else None
        if index_at is not None:
            args = list(node.args)
            if isinstance(func, ast.Attribute) and name in ("gather", "scatter", "scatter_add", "scatter_reduce",
                                                            "index_select", "index_add", "index_copy",
                                                            "index_fill", "take_along_dim", "take"):
                if not _module_call(func):
                    index_at -= 1  # x.gather(dim, index): one positional argument fewer
            if 0 <= index_at < len(args):
                p = self._root(args[index_at])
                if p:
                    self.ev.vote(p, INDEX, 5)
            for kw in node.keywords:
                if kw.arg in ("index", "target", "indices"):
                    p = self._root(kw.value)
                    if p:
                        self.ev.vote(p, INDEX, 5)
        if name in ("masked_fill", "masked_fill_", "masked_select", "masked_scatter", "masked_scatter_", "where"):
            # x.masked_fill(mask, v), torch.masked_fill(x, mask, v), torch.where(cond, a, b)
            at = 1 if _module_call(func) and name != "where" else 0
            p = self._root(node.args[at]) if len(node.args) > at else None
            if p:
                self.ev.vote(p, MASK, 5)
        if _module_call(func) and node.args and name not in _SIZE_FUNCTIONS and name != "where":
            p = self._param(node.args[0])
            if p and index_at != 0:
                self.ev.vote(p, TENSOR, 2)
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        p = self._param(node.operand) if isinstance(node.op, ast.Invert) else None
        if p:
            self.ev.vote(p, MASK, 3)  # `~mask`
        self.generic_visit(node)

    def visit_Attribute(self, node):
        p = self._param(node.value)
        if p:
            if node.attr in self.tensor_attrs:
                self.ev.vote(p, TENSOR, 3)
            elif not node.attr.startswith("__"):
                self.ev.vote(p, OBJECT, 2)
        self.generic_visit(node)

    def visit_Subscript(self, node):
        p = self._param(node.slice)
        if p:
            value = node.value
            if isinstance(value, ast.Attribute) and value.attr == "shape":
                self.ev.vote(p, INT, 4)
            else:
                self.ev.vote(p, INDEX, 1)
        for elt in getattr(node.slice, "elts", []) or []:
            q = self._param(elt)
            if q:
                self.ev.vote(q, INT, 1)
        if isinstance(node.slice, ast.Slice):
            for bound in (node.slice.lower, node.slice.upper, node.slice.step):
                q = self._param(bound) if bound is not None else None
                if q:
                    self.ev.vote(q, INT, 3)
        self.generic_visit(node)

    def visit_Compare(self, node):
        operands = [node.left] + list(node.comparators)
        for i, op in enumerate(node.ops):
            left, right = operands[i], operands[i + 1]
            for a, b in ((left, right), (right, left)):
                if _is_dtype_of_bool(a, b) and self._param(a.value):
                    # `if mask.dtype != torch.bool: raise`: decisive, whatever else it is used as
                    self.ev.vote(self._param(a.value), MASK, 20)
                    continue
                p = self._param(a)
                if not p:
                    continue
                if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(b, ast.Constant) and b.value is None:
                    self.ev.vote(p, NONE, 1)
                elif isinstance(b, ast.Constant) and isinstance(b.value, str):
                    self.ev.vote(p, STR, 5)
                    if not isinstance(op, (ast.In, ast.NotIn)):  # `'scipy' in norm` tests a part of it: no value
                        self.ev.literals.setdefault(p, []).append(b.value)
                elif isinstance(b, (ast.Tuple, ast.List, ast.Set)) and isinstance(op, (ast.In, ast.NotIn)):
                    strs = [e.value for e in b.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                    ints = [e.value for e in b.elts if isinstance(e, ast.Constant) and type(e.value) is int]
                    if strs:
                        self.ev.vote(p, STR, 5)
                        self.ev.literals.setdefault(p, []).extend(strs)
                    elif ints and len(ints) == len(b.elts):  # `type not in (2, 3)`: values it takes
                        self.ev.vote(p, INT, 1)
                        self.ev.literals.setdefault(p, []).extend(ints)
                elif isinstance(b, ast.Constant) and isinstance(b.value, bool):
                    self.ev.vote(p, BOOL, 2)
                elif isinstance(b, ast.Constant) and isinstance(b.value, (int, float)):
                    self.ev.vote(p, FLOAT if isinstance(b.value, float) else INT, 1)
                    if isinstance(op, (ast.Eq, ast.NotEq)):  # `mode == 0`: 0 is a value it takes
                        self.ev.literals.setdefault(p, []).append(b.value)
        self.generic_visit(node)

    def _truth(self, node):
        p = self._param(node)
        if p:
            self.ev.vote(p, BOOL, 2)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self._truth(node.operand)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self._truth(v)

    def visit_If(self, node):
        self._truth(node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node):
        self._truth(node.test)
        self.generic_visit(node)

    def visit_While(self, node):
        self._truth(node.test)
        self.ev.refines.update(self._compared(node.test))
        for inner in ast.walk(node):  # `if err < tol: break` inside the loop
            if isinstance(inner, ast.If) and any(isinstance(b, ast.Break) for b in inner.body):
                self.ev.refines.update(self._compared(inner.test))
        self.generic_visit(node)

    def visit_For(self, node):
        p = self._param(node.iter)
        if p:
            self.ev.vote(p, SEQUENCE, 3)
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and it.args:
            bound = self._param(it.args[1] if len(it.args) > 1 else it.args[0])
            if bound:
                self.ev.refines.add(bound)
        for inner in ast.walk(node):
            if isinstance(inner, ast.If) and any(isinstance(b, ast.Break) for b in inner.body):
                self.ev.refines.update(self._compared(inner.test))
        self.generic_visit(node)

    def _compared(self, test):
        """Parameters an ordering comparison in ``test`` reads (``i < n``, ``err.max() > tol``)."""
        found = set()
        for node in ast.walk(test):
            if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
                                                     for op in node.ops):
                for side in [node.left] + list(node.comparators):
                    p = self._param(side)
                    if p:
                        found.add(p)
        return found

    def visit_Starred(self, node):
        p = self._param(node.value)
        if p:
            self.ev.vote(p, SEQUENCE, 3)
        self.generic_visit(node)


_VALUE_SET = re.compile(r"^\s*(\w+(?:\s*,\s*\w+)*)\s*:\s*\{([^{}]+)\}")


def documented_values(function, names):
    """{parameter: [values]} from NumPy-style entries that list a parameter's values as a set:
    ``norm : {"backward", "ortho", "forward"}, optional``."""
    doc = inspect.getdoc(getattr(function, "__func__", function)) or ""
    found = {}
    for line in doc.splitlines():
        m = _VALUE_SET.match(line)
        if not m:
            continue
        values = []
        for item in m.group(2).split(","):
            item = item.strip()
            if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"":
                values.append(item[1:-1])
            elif re.fullmatch(r"-?\d+", item):
                values.append(int(item))
            else:
                values = []  # a set of types or of words, not of values
                break
        for name in (n.strip() for n in m.group(1).split(",")):
            if name in names and values:
                found.setdefault(name, []).extend(v for v in values if v not in found.get(name, []))
    return found


def local_imports(function):
    """name -> module path for the ``from module import name`` statements inside ``function``
    (a helper imported where it is used: ``from ..backends.scipy_backend import scipy_solve``)."""
    tree = source_tree(function)
    unwrapped = inspect.unwrap(getattr(function, "__func__", function))
    package = (getattr(unwrapped, "__globals__", {}) or {}).get("__package__")
    found = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and (node.module or node.level):
            try:
                module = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else node.module
            except (ImportError, ValueError):
                continue
            for alias in node.names:
                found[alias.asname or alias.name] = (module, alias.name)
    return found


def of_torch(obj):
    """Is ``obj`` torch's own (module ``torch`` or ``torch.*``; ``torch_sla``'s is not)?"""
    module = (obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", "")) or ""
    return module == "torch" or module.startswith("torch.")


def helper_named(function, name, imported=None):
    """The function ``name`` refers to in ``function``'s body: a global of its module or a
    ``from ... import`` inside it (``imported``: ``local_imports(function)``, when known), or None."""
    namespace = getattr(inspect.unwrap(getattr(function, "__func__", function)), "__globals__", {})
    head, _dot, attr = name.partition(".")
    helper = namespace.get(head)
    if helper is None:
        imported = local_imports(function) if imported is None else imported
        helper = _imported(imported[head], namespace.get("__package__")) if head in imported else None
    if attr:  # ``alias.name``: a function of a module the function's module imported
        helper = getattr(helper, attr, None) if inspect.ismodule(helper) and not of_torch(helper) else None
    return helper if inspect.isfunction(helper) and not of_torch(helper) else None


def _imported(where, package):
    """The object ``from module import name`` gives, or None. Only a module of the function's own
    top-level package is imported here (forward would import it when called: the run was asked for)."""
    module = sys.modules.get(where[0])
    if module is None and package and where[0].split(".")[0] == package.split(".")[0]:
        try:
            module = importlib.import_module(where[0])
        except Exception:  # noqa: BLE001 - the project's module: forward will say what is wrong
            return None
    return getattr(module, where[1], None) if module is not None else None


def helpers(function, calls, evidence, depth=0):
    """Evidence from the module's own functions a parameter is passed to: ``int_to_mode(mode)``
    compares it with 0..6, so ``mode`` is an int (one level of helpers, then one more). A helper
    imported inside the function counts too; the default of the helper's parameter is a candidate."""
    imported = local_imports(function) if calls else {}
    for name, positional, keywords in calls:
        helper = helper_named(function, name, imported)
        if helper is None:
            continue
        try:
            signature = inspect.signature(helper).parameters
            helper_params = list(signature)
        except (TypeError, ValueError):
            continue
        mapping = dict((helper_params[i], p) for i, p in enumerate(positional) if p and i < len(helper_params))
        mapping.update((k, p) for k, p in keywords.items() if p and k in helper_params)
        tree = source_tree(helper)
        if not mapping or tree is None:
            continue
        inner = Evidence()
        usage = Usage(list(mapping), inner, tree)
        usage.visit(tree)
        if depth < 1:
            helpers(helper, usage.calls, inner, depth + 1)
        for helper_name, values in documented_values(helper, list(mapping)).items():
            inner.literals.setdefault(helper_name, []).extend(v for v in values if v not in
                                                               inner.literals.get(helper_name, []))
        for helper_name, ours in mapping.items():
            for kind, strength in (inner.votes.get(helper_name) or {}).items():
                evidence.vote(ours, kind, max(1, strength - 1))
            evidence.literals.setdefault(ours, []).extend(inner.literals.get(helper_name, []))
            default = signature[helper_name].default
            if isinstance(default, str) and default and default not in evidence.literals[ours]:
                evidence.helper_defaults.setdefault(ours, []).append(default)
            elif isinstance(default, (bool, int, float)) and not inner.votes.get(helper_name):
                evidence.vote(ours, BOOL if isinstance(default, bool) else INT if isinstance(default, int) else FLOAT, 2)
            if helper_name in inner.refines:
                evidence.refines.add(ours)


def none_gradient_positions(backward):
    """Positions whose gradient every return statement of backward gives as a literal None."""
    tree = source_tree(backward)
    if tree is None:
        return set(), None
    returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return set(), None
    positions = None
    width = None
    for r in returns:
        elts = _returned_items(r.value)
        if elts is None or any(isinstance(e, ast.Starred) for e in elts):
            return set(), None
        here = set(i for i, e in enumerate(elts) if isinstance(e, ast.Constant) and e.value is None)
        positions = here if positions is None else positions & here
        width = len(elts) if width is None else max(width, len(elts))
    return positions or set(), width


def _returned_items(node):
    """The items of a returned tuple, also when spelled ``(dx,) + (None,) * 5``; None when unknown."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return list(node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        # ``grads + (None,)``: a call or a name there is a tuple of unknown length, not one item
        left, right = (_returned_items(side) if isinstance(side, (ast.Tuple, ast.List, ast.BinOp)) else None
                       for side in (node.left, node.right))
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        seq, count = (node.left, node.right) if isinstance(node.right, ast.Constant) else (node.right, node.left)
        items = _returned_items(seq) if isinstance(seq, (ast.Tuple, ast.List)) else None
        if items is not None and isinstance(count, ast.Constant) and isinstance(count.value, int) \
                and 0 <= count.value <= 64:
            return items * count.value
        return None
    return [node]


def ctx_flow(fclass, forward, names, evidence):
    """How backward uses what forward keeps on ctx: ``ctx.portal = portal`` in forward and
    ``ctx.portal.use_grad()`` in backward make ``portal`` an object, not a tensor."""
    ftree = source_tree(forward)
    btree = source_tree(fclass.backward) if defined_in_user_class(fclass, "backward") else None
    if ftree is None or btree is None:
        return
    kept = {}  # ctx attribute -> parameter
    saved = []  # what save_for_backward saves: a parameter's name or None, in order
    for node in ast.walk(ftree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in names:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "ctx":
                    kept[target.attr] = node.value.id
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "save_for_backward" and not saved:
            saved = [a.id if isinstance(a, ast.Name) and a.id in names else None for a in node.args]
    unpacked = {}  # backward's local name -> parameter (`a, idx = ctx.saved_tensors`)
    for node in ast.walk(btree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Attribute) and node.value.attr in ("saved_tensors", "saved_variables"):
            for target, param in zip(node.targets[0].elts, saved):
                if isinstance(target, ast.Name) and param is not None:
                    unpacked[target.id] = param
    if not kept and not unpacked:
        return

    class _AsParameter(ast.NodeTransformer):
        def visit_Attribute(self, node):
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and node.value.id == "ctx" and node.attr in kept:
                return ast.copy_location(ast.Name(id=kept[node.attr], ctx=node.ctx), node)
            return node

        def visit_Name(self, node):
            if node.id in unpacked and isinstance(node.ctx, ast.Load):
                return ast.copy_location(ast.Name(id=unpacked[node.id], ctx=node.ctx), node)
            return node

    btree = _AsParameter().visit(btree)
    Usage(set(kept.values()) | set(unpacked.values()), evidence).visit(btree)
