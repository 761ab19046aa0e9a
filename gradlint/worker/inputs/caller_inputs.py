"""Inputs for a Function taken from the package's own code that calls it.

Real Functions are rarely called with plain tensors: a Module's ``forward`` or a wrapper
function builds their arguments — filters made from a wavelet's name, a lambda over the
kernel's distance, natural parameters that start at -½·I, a 4-D image split into halves.
When synthesis finds no inputs the Function takes, the worker looks for the places in the
target's package that call ``Cls.apply`` (a module-level function, or a method of a class
it can build with its defaults), runs them on synthesized inputs of their own, and stops
each at the moment it calls the target: the arguments it was about to pass are the inputs,
real values in the domain the code was written for.
"""

import ast
import importlib
import inspect
import os
import sys
import textwrap
import time

import torch

from . import params as P
from .error_hints import learn_domains, shape_hints
from .synthesis import Search, backward_error, finite, shape_strategies
from ..links import ORIGINAL, linked, mark
from ..tensors import as_tuple, fresh_containers, is_tensor
from ..text import exc_text, first_line

MAX_SECONDS = 20.0  # for all callers together
MAX_FILES = 3000  # files of the package read to find callers
MAX_CALLERS = 8
_SCALAR_KINDS = (P.INT, P.FLOAT, P.BOOL, P.STR, P.NONE)


class Reached(BaseException):
    """Raised by the stand-in ``apply``: the caller got as far as calling the target (not an
    Exception, so a caller's ``try: Fn.apply(x) except Exception: fallback(x)`` lets it pass).
    ``call_args`` is a ``CallArgs``: it knows which arguments were its module's buffers."""

    def __init__(self, args, kwargs, buffers=None):
        BaseException.__init__(self, "reached")
        self.call_args = CallArgs(args)
        self.call_args.buffers = dict(buffers or {})
        self.call_kwargs = kwargs


class CallArgs(tuple):
    """The positional arguments a caller passed to the target; ``buffers``: {id: name} of the
    tensors among them (and its keywords) that are buffers of the ``nn.Module`` whose method
    made the call (``self.g0o``, registered with ``register_buffer``: a constant by torch's own
    definition, never a parameter the module trains)."""

    buffers = {}


def module_buffers(frame):
    """{id: name} of the buffers of the ``nn.Module`` that is ``self`` in ``frame`` (none when the
    caller is not a module's method)."""
    owner = frame.f_locals.get("self") if frame is not None else None
    if not isinstance(owner, torch.nn.Module):
        return {}
    try:
        return dict((id(b), "self." + name) for name, b in owner.named_buffers())
    except Exception:  # noqa: BLE001 - a module whose buffers cannot be listed: none known
        return {}


class Borrowed(object):
    """Inputs taken from code that calls the target: ``make(seed)`` runs it again."""

    def __init__(self, draw, where, info=None, passes_through=False):
        self.draw = draw  # seed -> the target's inputs
        self.where = where  # "pytorch_wavelets/dtcwt/transform2d.py:123 (DTCWTForward.forward)"
        self.extra = dict(info or {})
        # the caller hands its own (made-up) tensors to the target unchanged: a thin wrapper, whose
        # inputs say nothing about the values the target is meant for (tests and examples may)
        self.passes_through = passes_through
        self.remake = None  # a caller's own recipe -> Borrowed, when the caller runs on made-up values
        self.recipe = None  # that recipe

    def with_recipe(self, recipe):
        """The same caller run on values of another recipe of its own (a structured one), or None."""
        return self.remake(recipe) if self.remake is not None else None

    def make(self, seed):
        return self.draw(seed)

    def info(self, seed):
        info = dict(self.extra, seed=seed)
        info["caller"] = self.where
        return info


def _caller_draw(caller, recipe, fn=None):
    def draw(seed):
        reached = caller.reach(recipe.make(seed))
        if reached is None:
            raise ValueError("the caller did not call the target on this draw")
        inputs = caller.as_inputs(reached)
        if fn is not None and accepts(fn, inputs, seed) is not None:
            inputs = refused(fn, inputs, caller.params_of_target, seed) or inputs
        return inputs

    return draw


class _Caller(object):
    """A function or method of the package that calls ``fclass.apply`` at ``line``."""

    def __init__(self, fclass, module_name, path, owner, name, line, params_of_target):
        self.fclass = fclass
        self.module_name = module_name
        self.path = path
        self.owner = owner  # class name or None
        self.name = name
        self.line = line
        self.params_of_target = params_of_target
        self.fn = None
        self.passes_through = False  # set by reach: every floating tensor it passed is one it was given

    def describe(self, root):
        rel = os.path.relpath(self.path, root) if root else self.path
        what = "%s.%s" % (self.owner, self.name) if self.owner else self.name
        return "%s:%d (%s)" % (rel.replace(os.sep, "/"), self.line, what)

    def builds(self):
        """The callables to run: the function, or the method bound to instances of its class
        built with its defaults, then with the constructor's literal options (a module whose
        constructor chooses which Function its forward calls)."""
        module = importlib.import_module(self.module_name)
        if self.owner is None:
            fn = getattr(module, self.name, None)
            if callable(fn):
                yield fn
            return
        cls = getattr(module, self.owner, None)
        if not isinstance(cls, type) or issubclass(cls, torch.autograd.Function):
            return
        raw = inspect.getattr_static(cls, self.name, None)
        if isinstance(raw, (staticmethod, classmethod)):
            yield getattr(cls, self.name)
            return
        for instance in _instances(cls):
            if isinstance(instance, torch.nn.Module):
                instance = instance.double()
            method = getattr(instance, self.name, None)
            if callable(method):
                yield method

    def reach(self, args):
        """The (args, kwargs) the caller passes to the target on ``args``, or None."""
        for needs_grad in (True, False):
            # a wrapper may call the Function only when gradients are (or are not) needed; with its
            # own inputs requiring grad, what it passes without requires_grad is a constant of its own
            trial = tuple(a.detach().clone().requires_grad_(needs_grad)
                          if is_tensor(a) and a.is_floating_point() else a for a in args)
            with stand_in(self.fclass):
                try:
                    self.fn(*trial)
                except Reached as r:
                    given = set(id(a) for a in trial if is_tensor(a))
                    passed = [a for a in list(r.call_args) + list(r.call_kwargs.values())
                              if is_tensor(a) and (a.is_floating_point() or a.is_complex())]
                    self.passes_through = bool(passed) and all(id(a) in given for a in passed)
                    return r.call_args, r.call_kwargs
        return None

    def as_inputs(self, reached):
        return as_inputs(reached, self.params_of_target)


def as_inputs(reached, params_of_target):
    """The target's inputs from the (args, kwargs) a caller passed: detached copies. Every floating
    tensor requires grad (a None from backward is checked, not trusted), except one backward
    returns None for that the caller passes as a constant of its own (a test's fixed tensor:
    without requires_grad, while it passes others with it; or a buffer of the module whose method
    calls it, a filter bank, on any inputs): the project's code shows that None is by design."""
    args, kwargs = reached
    buffers = getattr(args, "buffers", {})
    if kwargs:
        names = [p.name for p in params_of_target or []]
        args = list(args)
        kwargs = dict(kwargs)
        for name in names[len(args):]:
            if name not in kwargs:
                break
            args.append(kwargs.pop(name))
        if kwargs:
            raise ValueError("the caller passes keywords the target does not name: %s" % ", ".join(kwargs))
    floating = [a for a in args if is_tensor(a) and (a.is_floating_point() or a.is_complex())]
    some_grad = any(a.requires_grad for a in floating)
    out = []
    for i, a in enumerate(args):
        if is_tensor(a) and (a.is_floating_point() or a.is_complex()):
            p = params_of_target[i] if params_of_target and i < len(params_of_target) else None
            buffer = buffers.get(id(a))
            constant = p is not None and p.none_grad and (buffer is not None or some_grad and not a.requires_grad)
            t = mark(a.detach().clone().requires_grad_(not constant), a)
            if constant:
                t.gradlint_constant = ("the code that calls it passes its module's buffer %s, a constant; backward "
                                       "returns None for it" % buffer if buffer is not None else
                                       "the code that calls it passes a constant; backward returns None for it")
            out.append(t)
        elif is_tensor(a):
            out.append(mark(a.detach().clone(), a))
        else:
            out.append(a)
    return tuple(out)


def refused(fn, inputs, params_of_target, seed):
    """Inputs forward refuses to take with requires_grad (``if x1.requires_grad: raise``) while
    backward returns None for them: the same inputs with those not requiring grad, or None."""
    positions = [i for i, a in enumerate(inputs) if is_tensor(a) and a.requires_grad and params_of_target
                 and i < len(params_of_target) and params_of_target[i].none_grad]
    if not positions:
        return None
    trial = tuple(mark(a.detach().clone(), getattr(a, ORIGINAL, a)) if i in positions else a
                  for i, a in enumerate(inputs))
    for i in positions:
        trial[i].gradlint_constant = "forward refuses it with requires_grad; backward returns None for it"
    return trial if accepts(fn, trial, seed) is None else None


def backward_raises_as_called(fn, inputs, seed):
    """Does one backward pass raise on ``inputs`` with the requires_grad each had where it was
    captured (not the all-floating-inputs-require-grad of a check)? Then the error is the
    Function's own on the code's own inputs, not one the check's inputs caused. False when
    nothing required grad there, or forward raises, or backward says it does not support
    them (NotImplementedError: a limitation it declares, not a wrong gradient)."""
    trial = []
    for a in inputs:
        original = getattr(a, ORIGINAL, None) if is_tensor(a) else None
        if is_tensor(a) and original is not None and is_tensor(original) and a.is_floating_point():
            trial.append(mark(a.detach().clone().requires_grad_(bool(original.requires_grad)), original))
        else:
            trial.append(a)
    if not any(is_tensor(a) and a.requires_grad for a in trial):
        return False
    try:
        torch.manual_seed(seed)
        out = linked(fn, trial)(*fresh_containers(trial))
    except Exception:  # noqa: BLE001 - the target on the caller's arguments
        return False
    if not finite(out):
        return False
    error = backward_error(trial, out)
    return error is not None and not isinstance(error, NotImplementedError)


def accepts(fn, inputs, seed):
    """None when the target's forward returns finite values on ``inputs`` and one backward
    pass works; else why not."""
    try:
        torch.manual_seed(seed)
        out = linked(fn, inputs)(*fresh_containers(inputs))
    except Exception as e:  # noqa: BLE001 - the target on the caller's arguments
        return "the target raised %s on its arguments: %s" % (type(e).__name__, first_line(exc_text(e, 160)))
    if not finite(out):
        return "the target returned NaN/inf on its arguments"
    if backward_error(inputs, out) is not None:
        return "backward raised on its arguments"
    return None


def still_inputs(fn, inputs, seed):
    """How many of the floating tensor inputs that require grad no output moves with (each nudged
    alone along a random direction): a test of an edge case (``x = 0`` in an incomplete beta function)
    reaches the target where its other inputs do not matter, which proves nothing about them."""
    try:
        torch.manual_seed(seed)
        base = [o.detach() for o in as_tuple(linked(fn, inputs)(*fresh_containers(inputs))) if is_tensor(o)]
    except Exception:  # noqa: BLE001 - judged by accepts() already
        return 0
    gen = torch.Generator().manual_seed(seed + 5)
    still = 0
    for j, x in enumerate(inputs):
        if not (is_tensor(x) and x.requires_grad and x.layout == torch.strided and x.is_floating_point()):
            continue
        moved = list(inputs)
        with torch.no_grad():
            step = torch.randn(x.shape, generator=gen, dtype=x.dtype) * 1e-3 * (1.0 + x.detach().abs())
            moved[j] = (x.detach() + step).requires_grad_()
        try:
            torch.manual_seed(seed)
            outs = [o.detach() for o in as_tuple(linked(fn, moved)(*fresh_containers(moved))) if is_tensor(o)]
        except Exception:  # noqa: BLE001 - off the domain when nudged: it moved
            continue
        if len(outs) == len(base) and all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(outs, base)):
            still += 1
    return still


def _instances(cls):
    """Instances of ``cls``: with its defaults (required scalars guessed from their use), then
    with each literal its constructor compares a parameter with, then with all of them."""
    params = P.infer(cls.__init__, None) or []
    if params and params[0].name == "self":
        params = params[1:]
    required = {}
    for p in params:
        if p.kind == P.DEFAULT:
            continue
        if p.kind in _SCALAR_KINDS and p.candidates:
            required[p.name] = p.candidates[0]
        elif p.kind in (P.TENSOR, P.INT_TENSOR) or (p.kind == P.SIZE and not _sized(p.name)):
            required[p.name] = 3  # a count: `torch.zeros(n)`, `torch.eye(n)`
        elif p.kind in (P.SIZE, P.SEQUENCE) and _sized(p.name):
            required[p.name] = (8, 8)  # an image size: `im_size`, `shape`
        else:
            config = _default_config(cls, p.name)
            if config is None:
                return
            required[p.name] = config
    options = {}
    try:
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.default is not inspect.Parameter.empty and isinstance(p.default, (str, bool)):
                literals = [v for v in _compared_literals(cls, p.name) if v != p.default]
                if isinstance(p.default, bool):
                    literals = [not p.default]  # a flag: `Wrong if self.flag else Right`
                if literals:
                    options[p.name] = literals[0]
    except (TypeError, ValueError):
        pass
    variants = [dict(required)]
    variants += [dict(required, **{k: v}) for k, v in options.items()]
    if len(options) > 1:
        variants.append(dict(required, **options))
    for kwargs in variants[:8]:
        try:
            yield cls(**kwargs)
        except Exception:  # noqa: BLE001 - the user's constructor on a guessed option
            continue


_CONFIG_NAMES = ("config", "cfg", "conf", "configuration", "args", "hparams", "params", "opt", "options")
_CONFIG_SUFFIXES = ("Config", "Configuration", "Args", "Arguments", "Options", "Params", "HParams")


def _default_config(cls, name):
    """A configuration object for ``cls(config)`` built with its own defaults: the class its
    annotation names, else a ``*Config`` class of its module (``YosoConfig()``); or None."""
    try:
        annotation = inspect.signature(cls.__init__).parameters[name].annotation
    except (TypeError, ValueError, KeyError):
        annotation = inspect.Parameter.empty
    candidates = []
    if isinstance(annotation, type) and annotation is not inspect.Parameter.empty \
            and not annotation.__module__.startswith(("builtins", "torch", "typing", "inspect")):
        candidates.append(annotation)
    elif name.lower() in _CONFIG_NAMES:
        namespace = vars(sys.modules.get(cls.__module__) or object())
        candidates = [v for k, v in sorted(namespace.items()) if isinstance(v, type) and k.endswith(_CONFIG_SUFFIXES)]
        prefix = cls.__name__[:4].lower()
        candidates.sort(key=lambda c: not c.__name__.lower().startswith(prefix))  # YosoSelfAttention: YosoConfig
    for candidate in candidates[:4]:
        try:
            return candidate()
        except Exception:  # noqa: BLE001 - a config that needs values
            continue
    return None


def _sized(name):
    low = name.lower()
    return low.endswith(("size", "shape", "dims", "sizes", "shapes")) or low in ("shape", "size")


def _compared_literals(cls, name):
    """Literals the class compares its constructor's parameter ``name`` with: ``if biort ==
    'near_sym_b_bp'`` in ``__init__``, or ``if self.kind == "band"`` in a method."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except Exception:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        left = node.left
        if (isinstance(left, ast.Name) and left.id == name) or (
                isinstance(left, ast.Attribute) and left.attr == name and isinstance(left.value, ast.Name)
                and left.value.id == "self"):
            for c in node.comparators:
                if isinstance(c, ast.Constant) and isinstance(c.value, (str, bool)) and c.value not in out:
                    out.append(c.value)
    return out


class stand_in(object):
    """``fclass.apply`` (and module-level aliases of it) raise ``Reached`` while active."""

    def __init__(self, fclass):
        self.fclass = fclass
        self.top = fclass.__module__.split(".")[0]

    def __enter__(self):
        fclass = self.fclass
        real = fclass.apply
        self.had_own = "apply" in fclass.__dict__
        self.own = fclass.__dict__.get("apply")

        def reached(*args, **kwargs):
            raise Reached(args, kwargs, module_buffers(sys._getframe(1)))

        fclass.apply = reached
        self.aliases = []
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            name = getattr(module, "__name__", "") or ""
            if not namespace or not (name == self.top or name.startswith(self.top + ".")):
                continue
            for key, value in list(namespace.items()):
                try:
                    same = callable(value) and value == real
                except Exception:
                    same = False
                if same:
                    self.aliases.append((namespace, key, value))
                    namespace[key] = reached
        return self

    def __exit__(self, *exc):
        if self.had_own:
            setattr(self.fclass, "apply", self.own)
        else:
            delattr(self.fclass, "apply")
        for namespace, key, value in self.aliases:
            namespace[key] = value
        return False


# -- finding callers ---------------------------------------------------------------------


SKIP_DIRS = frozenset((".git", ".hg", ".tox", ".nox", ".venv", "venv", "env", "node_modules", "build", "dist",
                        "site-packages", "__pycache__", ".mypy_cache", ".pytest_cache", "docs"))


def _py_files(folder, limit):
    out = []
    for d, dirs, names in os.walk(folder):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
        out.extend(os.path.join(d, n) for n in sorted(names) if n.endswith(".py"))
        if len(out) >= limit:
            break
    return out[:limit]


def package_files(module):
    """(root on sys.path, [files]): the target's top-level package first, then the rest of the
    project it sits in (not for an installed package: its site-packages is not a project)."""
    path = getattr(module, "__file__", None)
    if not path:
        return None, []
    top = module.__name__.split(".")[0]
    top_module = sys.modules.get(top)
    top_file = getattr(top_module, "__file__", None) if top_module is not None else None
    if top_file and os.path.basename(top_file) == "__init__.py" and "." in module.__name__:
        package_dir = os.path.dirname(top_file)
        root = os.path.dirname(package_dir)
    else:
        package_dir = root = os.path.dirname(path)
    files = _py_files(package_dir, MAX_FILES)
    installed = any(part in ("site-packages", "dist-packages") for part in root.split(os.sep))
    if not installed and root != package_dir and len(files) < MAX_FILES:
        inside = package_dir + os.sep
        files += [f for f in _py_files(root, MAX_FILES) if not f.startswith(inside)][:MAX_FILES - len(files)]
    return root, files


def module_name(root, path):
    rel = os.path.relpath(path, root)
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


class _Project(object):
    """The files that may call the target, each read and parsed once."""

    def __init__(self, module):
        self.module = module
        self.root, files = package_files(module) if module is not None else (None, [])
        own = getattr(module, "__file__", None)
        self.own = own
        self.files = [f for f in sorted(files, key=lambda f: f != own) if not is_test_file(f)]
        self.texts = {}
        self.trees = {}

    def _text(self, path):
        if path not in self.texts:
            try:
                with open(path, encoding="utf-8") as fh:
                    self.texts[path] = fh.read()
            except (OSError, UnicodeDecodeError):
                self.texts[path] = ""
        return self.texts[path]

    def _tree(self, path):
        if path not in self.trees:
            try:
                self.trees[path] = ast.parse(self._text(path))
            except (SyntaxError, ValueError):
                self.trees[path] = None
        return self.trees[path]

    def callers(self, fclass, params_of_target, name, finder, limit):
        """_Callers of ``name`` found by ``finder(tree, name)`` in the project's files."""
        found = []
        for path in self.files:
            text = self._text(path)
            if name not in text:
                continue
            dotted = self.module.__name__ if path == self.own else module_name(self.root, path)
            tree = self._tree(path) if dotted is not None else None
            if tree is None:
                continue
            for owner, fn_name, line in finder(tree, name):
                if owner == name or (owner is None and fn_name == name):
                    continue  # the Function's own methods; a function's recursion
                found.append(_Caller(fclass, dotted, path, owner, fn_name, line, params_of_target))
                if len(found) >= limit:
                    return found
        return found


def is_test_file(path):
    base = os.path.basename(path)
    return base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py"


def find_callers(fclass, params_of_target):
    """(root, the package's functions and methods that call ``fclass.apply``): the target's own
    module first, then the rest of its project (test files left out)."""
    project = _Project(sys.modules.get(fclass.__module__))
    return project.root, project.callers(fclass, params_of_target, fclass.__name__, _calls_of_apply, MAX_CALLERS)


def _units(tree):
    """(class node or None, function node) for module-level functions (tests left out) and the
    methods of module-level classes (``__init__`` left out): what can be run as a caller."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("test"):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name != "__init__":
                    yield node, item


def _forward_first(found):
    """forward methods first: the way users reach a Function."""
    return sorted(found, key=lambda c: (c[1] != "forward", c[0] is None))


def _calls_of_function(tree, name):
    """(class name or None, function name, line) of functions and methods that call ``name(...)``
    (or ``module.name(...)``)."""
    out = []
    for owner, function in _units(tree):
        line = next((n.lineno for n in ast.walk(function) if isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Name) and n.func.id == name) or
            (isinstance(n.func, ast.Attribute) and n.func.attr == name))), None)
        if line is not None:
            out.append((owner.name if owner else None, function.name, line))
    return _forward_first(out)


def _calls_of_apply(tree, name):
    """(class name or None, function name, line) of module-level functions and methods of
    module-level classes that call ``name.apply`` (or ``x.name.apply``, or an alias), or that
    mention ``name`` and apply a Function chosen at run time (``fn = Wrong if w else Right;
    fn.apply(...)``; also when ``__init__`` stores it: ``self.fn.apply(...)``)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_apply(node.value, name):
            aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
    mentions = lambda node: any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))  # noqa: E731
    out = []
    for owner, function in _units(tree):
        calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)]
        direct = next((c.lineno for c in calls if _is_apply(c.func, name) or
                       (isinstance(c.func, ast.Name) and c.func.id in aliases)), None)
        any_apply = next((c.lineno for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "apply"),
                         None)
        if direct is None and any_apply is not None and mentions(owner if owner is not None else function):
            direct = any_apply
        if direct is not None:
            out.append((owner.name if owner else None, function.name, direct))
    return _forward_first(out)


def _is_apply(node, name):
    if not (isinstance(node, ast.Attribute) and node.attr == "apply"):
        return False
    value = node.value
    return (isinstance(value, ast.Name) and value.id == name) or (
        isinstance(value, ast.Attribute) and value.attr == name)


# -- running them ------------------------------------------------------------------------


def capture(fn, fclass, opts, errors=None, seen=None):
    """A ``Borrowed`` whose inputs forward and one backward pass accept, or None. ``seen``
    (a dict) gets the package's root and the names of the callers tried."""
    if fclass is None:
        return None
    started = time.monotonic()
    params_of_target = P.infer(fn, fclass)
    project = _Project(sys.modules.get(fclass.__module__))
    root = project.root
    queue = [(c, 0) for c in project.callers(fclass, params_of_target, fclass.__name__, _calls_of_apply,
                                             MAX_CALLERS)]
    tried = []
    if seen is not None:
        seen["root"] = root
        seen["params"] = params_of_target
        seen["names"] = [fclass.__name__]
    while queue:
        caller, depth = queue.pop(0)
        if time.monotonic() - started > MAX_SECONDS or len(tried) >= 2 * MAX_CALLERS:
            break
        tried.append(caller)
        if seen is not None and (caller.owner or caller.name) not in seen["names"] + ["forward", "__call__"]:
            seen["names"].append(caller.owner or caller.name)
        why = "cannot build it (its constructor needs values)"
        try:
            for built in caller.builds():
                caller.fn = built
                found, why = _search(caller, fn, opts, started)
                if found is not None:
                    return _from_caller(caller, found, fn, root, opts, caller.passes_through)
                if time.monotonic() - started > MAX_SECONDS:
                    break
        except Exception as e:  # noqa: BLE001 - the user's module or constructor
            why = "%s: %s" % (type(e).__name__, first_line(exc_text(e, 160)))
        if errors is not None:
            errors.append("%s: %s" % (caller.describe(root), why))
        if depth == 0 and caller.owner is None and len(caller.name) > 3 and not caller.name.startswith("__"):
            # a wrapper whose own inputs cannot be made (a table, a tuple of matrices): whoever
            # calls the wrapper (a Module that builds them) reaches the target through it
            queue.extend((outer, 1) for outer in project.callers(fclass, params_of_target, caller.name,
                                                                 _calls_of_function, MAX_CALLERS)
                         if not any(outer.path == t.path and outer.name == t.name and outer.owner == t.owner
                                    for t in tried))
    return None


def _from_caller(caller, recipe, fn, root, opts, passes_through):
    borrowed = Borrowed(_caller_draw(caller, recipe, fn), caller.describe(root), recipe.info(int(opts["seed"])),
                        passes_through=passes_through)
    borrowed.recipe = recipe
    borrowed.remake = lambda other: _from_caller(caller, other, fn, root, opts, passes_through)
    return borrowed


class _CallerSearch(Search):
    """Synthesis's search, over the caller's own inputs: a recipe works when the caller reaches
    the target with arguments the target's forward and one backward pass accept."""

    def __init__(self, caller, target, params, opts, started):
        Search.__init__(self, caller.fn, params, opts, None)
        self.caller = caller
        self.target = target
        self.started = started
        self.why = "it never called the target"

    def exhausted(self):
        return time.monotonic() - self.started > MAX_SECONDS

    def try_recipe(self, recipe, seed):
        self.attempts += 1
        try:
            reached = self.caller.reach(recipe.make(seed))
        except Exception as e:  # noqa: BLE001 - the caller's own code: other shapes
            self.why = "%s: %s" % (type(e).__name__, first_line(exc_text(e, 160)))
            self.hints.extend(h for h in shape_hints(str(e)) if h not in self.hints)
            return "domain" if learn_domains(str(e), self.params, self.constraints) else "shape"
        if reached is None:
            return "shape"
        try:
            inputs = self.caller.as_inputs(reached)
        except ValueError as e:
            self.why = str(e)
            return "shape"
        why = accepts(self.target, inputs, seed)
        if why is None:
            return "ok"
        if refused(self.target, inputs, self.caller.params_of_target, seed) is not None:
            return "ok"
        self.why = why
        learn_domains(why, self.params, self.constraints)  # "length must be strictly positive": the caller's too
        return "domain"


def _search(caller, fn, opts, started):
    """(recipe, None) for the first recipe of the caller's own inputs on which it reaches the
    target with arguments the target's forward and backward accept; else (None, why)."""
    params = P.infer(caller.fn, None)
    if params is None:
        return None, "cannot read its signature"
    bad = next((p for p in params if p.kind in P.UNSUPPORTED), None)
    if bad is not None:
        return None, "cannot make a value for its parameter `%s`" % bad.name
    n = sum(1 for p in params if p.kind == P.TENSOR)
    search = _CallerSearch(caller, fn, params, opts, started)
    recipe = search.run(shape_strategies(n) if n else [[]], int(opts["seed"]))
    if recipe is not None:
        return recipe, None
    return None, search.why + (" (time is up)" if search.exhausted() else "")
