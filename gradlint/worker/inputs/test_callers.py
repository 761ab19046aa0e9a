"""Inputs for a Function taken from the project's tests that exercise it through its API.

Some Functions are reached only through an API whose inputs cannot be synthesized: an
inverse transform takes the nested output of the forward one; a model takes a config.
The project's tests build exactly those inputs. When neither synthesis nor the package's
own callers give inputs, the worker runs the tests that mention the target or one of its
callers (plain test functions, their ``@pytest.mark.parametrize`` cases, methods of test
classes) and stops each at the moment it calls the target, as ``caller_inputs`` does.
"""

import ast
import importlib.util
import inspect
import itertools
import os
import sys
import time

import torch

from . import absent, fixtures
from .time_limits import time_limit
from .caller_inputs import (SKIP_DIRS, Borrowed, Reached, accepts, as_inputs, backward_raises_as_called, is_test_file,
                            refused, stand_in, still_inputs)
from ..tensors import is_tensor

MAX_TEST_FILES = 8
MAX_FILES_SCANNED = 4000
MAX_CASES = 8
TEST_SECONDS = 10.0  # one test call, until it reaches the target


def test_files(root, names):
    """Test files under ``root`` (and its parent for a ``src`` layout) that mention one of ``names``,
    the most relevant first: those naming the target itself (``names[0]``), then those calling its
    callers most often."""
    bases = [root] + ([os.path.dirname(root)] if os.path.basename(root) == "src" else [])
    found, scanned = [], 0
    for base in bases:
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
            for n in sorted(files):
                if not n.endswith(".py") or n == "conftest.py" or not is_test_file(n):
                    continue
                scanned += 1
                if scanned > MAX_FILES_SCANNED:
                    break
                path = os.path.join(d, n)
                try:
                    with open(path, encoding="utf-8") as fh:
                        text = fh.read()
                except (OSError, UnicodeDecodeError):
                    continue
                score = _relevance(text, names)
                if score:
                    found.append((score, len(found), path, text))
    found.sort(key=lambda f: (-f[0], f[1]))
    return [(path, text) for _score, _order, path, text in found[:MAX_TEST_FILES]]


def _relevance(text, names):
    """How much a test file is about the target: naming it outweighs any number of calls of its
    callers (``solve(`` in a file about linear operators)."""
    if not names or not any(name in text for name in names):
        return 0
    direct = text.count(names[0])
    calls = sum(text.count(name + "(") for name in names[1:])
    return 1000 * direct + min(calls, 999) + 1


def _import(path):
    """The test module, imported as pytest does: inside its package (``tests/__init__.py``:
    ``tests.test_x``, so relative imports of its conftest work) with the package's parent on
    sys.path; else under a private name with its own folder on sys.path."""
    folder = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts, base = [stem], folder
    while os.path.isfile(os.path.join(base, "__init__.py")) and os.path.basename(base).isidentifier():
        parts.insert(0, os.path.basename(base))
        base = os.path.dirname(base)
    if base not in sys.path:
        sys.path.insert(0, base)
    if len(parts) > 1:
        return importlib.import_module(".".join(parts))
    name = "_gradlint_tests_%s" % stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def import_standing_in(path, root):
    """The test module, imported with a stand-in for each absent module it imports (``absent``);
    the module records which in ``__gradlint_stand_ins__``. The stand-ins are for this import
    only: another test module's ``try: import matplotlib`` still finds none."""
    bases = [root, os.path.dirname(path)]
    with absent.standing_in() as stand:
        while True:
            try:
                module = _import(path)
                break
            except ModuleNotFoundError as e:
                top = absent.absent(e, bases, stand.names)
                if top is None:
                    raise
                stand.add(top)
    used = sorted(set(absent.stood_in(v) for v in vars(module).values()) - {None})
    if used:
        module.__gradlint_stand_ins__ = used
    return module


def _tests(tree, names):
    """(class name or None, function node) of tests whose body mentions one of ``names``, then of
    those that call a helper of the test module that does (``test_x(...)`` calling ``check_x(...)``,
    which calls the API)."""
    out = []

    def named(node, wanted):
        for n in ast.walk(node):
            if (isinstance(n, ast.Name) and n.id in wanted) or (isinstance(n, ast.Attribute) and n.attr in wanted):
                return True
        return False

    helpers = set(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("test")
                  and named(n, names))
    wanted = set(names) | helpers

    def mentions(node):
        return named(node, wanted)

    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test") and mentions(node):
            out.append((None, node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test") and mentions(item):
                    out.append((node.name, item))
    # the tests that name the API themselves first, as before; those that reach it through a helper after
    return sorted(out, key=lambda test: not named(test[1], names))


def _cases(module, node, probe=None):
    """Keyword arguments for each parametrize case of a test (their product). The marks are read
    from the imported test (its ``pytestmark``, its class's and its module's), so a decorator of
    the project's own making that returns ``pytest.mark.parametrize(...)`` counts as well; a test
    whose marks cannot be read falls back to the ``@pytest.mark.parametrize`` decorators in its source."""
    marks = _parametrize_marks(module, probe)
    if marks is None:
        marks = _source_parametrize(module, node)
    if marks is None:
        return []
    grids = []
    for names, values in marks:
        rows = []
        for value in values:
            if hasattr(value, "marks") and hasattr(value, "values"):  # pytest.param(...)
                if any(_skipped(m) for m in value.marks):
                    continue
                value = tuple(value.values)
                value = value[0] if len(names) == 1 else value
            rows.append({names[0]: value} if len(names) == 1 else dict(zip(names, value)))
        grids.append(rows)
    out = []
    for combo in itertools.islice(itertools.product(*grids), MAX_CASES):
        kwargs = {}
        for part in combo:
            kwargs.update(part)
        out.append(kwargs)
    return out


def _parametrize_marks(module, probe):
    """[(names, values)] of the parametrize marks pytest would apply to ``probe``, or None when it
    carries no marks at all (nothing to read at run time)."""
    fn = getattr(probe, "__func__", probe)
    owner = getattr(probe, "__self__", None)
    found = []
    for holder in (fn, type(owner) if owner is not None else None, module):
        marks = getattr(holder, "pytestmark", None) if holder is not None else None
        if marks is None:
            continue
        found.extend(marks if isinstance(marks, (list, tuple)) else [marks])
    if not found:
        return None
    out = []
    for mark in found:
        mark = getattr(mark, "mark", mark)  # a MarkDecorator stored as such
        if getattr(mark, "name", None) != "parametrize":
            continue
        args = list(getattr(mark, "args", ()))
        kwargs = dict(getattr(mark, "kwargs", {}) or {})
        names = args[0] if args else kwargs.get("argnames")
        values = args[1] if len(args) > 1 else kwargs.get("argvalues")
        if names is None or values is None:
            return None
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        out.append((names, list(values)))
    return out


def _skipped(mark):
    name = getattr(mark, "name", None)
    args = getattr(mark, "args", ())
    return name == "skip" or (name == "skipif" and bool(args) and args[0] is True)


def _source_parametrize(module, node):
    """[(names, values)] of the ``@….parametrize(names, values)`` decorators in the test's source."""
    out = []
    for dec in node.decorator_list:
        if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "parametrize"):
            continue
        if len(dec.args) < 2:
            return None
        try:
            names = ast.literal_eval(dec.args[0])
            names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
            values = eval(compile(ast.Expression(dec.args[1]), "<parametrize>", "eval"), dict(vars(module)))
        except Exception:
            return None
        out.append((names, list(values)))
    return out


def _with_fixtures(cases, needs, module, path, root):
    """Each parametrize case completed with the fixtures the test still needs (the test module's,
    then its conftest.py files'): the cases pytest would run, a few of them."""
    out = []
    for kwargs in cases:
        missing = [n for n in needs if n not in kwargs]
        if not missing:
            out.append(kwargs)
            continue
        found = fixtures.cases([module] + fixtures.conftests(path, root), missing)
        for values in found or []:
            out.append(dict(kwargs, **values))
        if len(out) >= MAX_CASES:
            break
    return out[:MAX_CASES]


def _bound(module, owner, name):
    if owner is None:
        return getattr(module, name, None)
    cls = getattr(module, owner, None)
    if not isinstance(cls, type):
        return None
    import unittest

    if issubclass(cls, unittest.TestCase):
        inst = cls(name)
        inst.setUp()
    else:
        inst = cls()
        if hasattr(inst, "setup_method"):
            inst.setup_method(getattr(inst, name))
    return getattr(inst, name, None)


def _required(fn):
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        return None


class _TestCall(object):
    def __init__(self, fclass, module, owner, node, kwargs, where):
        self.fclass = fclass
        self.module = module
        self.owner = owner
        self.node = node
        self.kwargs = kwargs
        self.where = where

    def reach(self, seed, seconds=TEST_SECONDS):
        """The (args, kwargs) the test passes to the target with RNGs seeded by ``seed``, or None
        (also when the test runs longer than ``seconds`` before it gets there)."""
        torch.manual_seed(seed)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed(seed % (2 ** 32))
        fn = _bound(self.module, self.owner, self.node.name)
        if fn is None:
            return None
        with stand_in(self.fclass), time_limit(seconds):
            try:
                fn(**self.kwargs)
            except Reached as r:
                return r.call_args, r.call_kwargs
            except BaseException as e:  # noqa: BLE001 - a failing, skipped or too long test: next one
                if isinstance(e, KeyboardInterrupt):
                    raise
        return None


MAX_STILL_CASES = 12  # tests whose inputs leave some input without effect, passed over for a later one


def capture(fn, fclass, params_of_target, root, names, opts, deadline, errors=None):
    """A ``Borrowed`` from the first test that calls the target with inputs its forward and
    backward accept, or None. A test whose inputs leave most differentiable inputs without effect on
    the output (an edge case: ``x = 0``, where nothing depends on ``a`` and ``b``) gives way to a later
    one where most move it, up to a few; the one with the fewest still inputs is kept when none does.
    One input without effect among several (a parameter the test's integrand does not use) is no edge
    case: that test is kept, as the first test always was."""
    seed = int(opts["seed"])
    fallback = None  # (still inputs, Borrowed) of the best edge case so far
    undifferentiated = None  # the first test that differentiates nothing, when it cannot show the constants
    passed_over = 0
    for path, text in test_files(root, names):
        if time.monotonic() > deadline:
            break
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        try:
            tree = ast.parse(text)
            tests = _tests(tree, names)
            if not tests:
                continue
            module = import_standing_in(path, root)
        except BaseException as e:  # noqa: BLE001 - the user's test module
            if isinstance(e, KeyboardInterrupt):
                raise
            if errors is not None:
                errors.append("%s: %s while importing it" % (rel, type(e).__name__))
            continue
        for owner, node in tests:
            try:
                probe = _bound(module, owner, node.name)
            except Exception:
                continue
            needs = _required(probe) if probe is not None else None
            if needs is None:
                continue
            cases = _with_fixtures(_cases(module, node, probe) if needs else [{}], needs, module, path, root)
            for kwargs in cases:
                if time.monotonic() > deadline:
                    break
                where = "%s:%d (%s%s)" % (rel, node.lineno, owner + "." if owner else "", node.name)
                call = _TestCall(fclass, module, owner, node, dict((k, kwargs[k]) for k in needs), where)
                try:
                    reached = call.reach(seed, min(TEST_SECONDS, max(0.1, deadline - time.monotonic())))
                    inputs = as_inputs(reached, params_of_target) if reached is not None else None
                except Exception:  # noqa: BLE001 - the user's test
                    continue
                if inputs is not None and accepts(fn, inputs, seed) is not None:
                    kept = refused(fn, inputs, params_of_target, seed)
                    if kept is None and not _expects_errors(node) and backward_raises_as_called(fn, inputs, seed):
                        # on this test's own inputs, with the requires_grad it sets itself, backward
                        # raises: the Function's error, not our inputs' (another case that
                        # avoids it would hide it: a branch for one layout)
                        return _borrowed(call, where, params_of_target, fn, backward_raises=True)
                    inputs = kept
                if inputs is None:
                    continue
                if _constants_unknown(reached, params_of_target):
                    # the test differentiates nothing: which inputs the project keeps constant (backward
                    # returns None for them) shows in a later test that does (an autograd test), if any;
                    # its other cases differentiate nothing either
                    undifferentiated = undifferentiated or _borrowed(call, where, params_of_target, fn)
                    passed_over += 1
                    break
                still = still_inputs(fn, inputs, seed)
                moving = sum(1 for x in inputs if is_tensor(x) and x.requires_grad) - still
                if still <= moving:  # most inputs matter here: not an edge case (an unused parameter is fine)
                    return _borrowed(call, where, params_of_target, fn)
                if fallback is None or still < fallback[0]:
                    fallback = (still, _borrowed(call, where, params_of_target, fn))
                passed_over += 1
                if passed_over >= MAX_STILL_CASES:
                    break
            if passed_over >= MAX_STILL_CASES:
                break
        if passed_over >= MAX_STILL_CASES:
            break
    return fallback[1] if fallback is not None else undifferentiated


def _constants_unknown(reached, params_of_target):
    """Did the test pass no input with requires_grad to a target whose backward returns None for
    some floating input? Then nothing tells a constant of the project's (a kernel's width a setup
    function computes) from an input whose gradient backward drops."""
    args = reached[0]
    buffers = getattr(args, "buffers", {})  # a module's buffers are constants already (as_inputs)
    floating = [a for a in args if is_tensor(a) and (a.is_floating_point() or a.is_complex())]
    if not floating or any(a.requires_grad for a in floating):
        return False
    return any(p.none_grad for i, p in enumerate(params_of_target or [])
               if i < len(args) and is_tensor(args[i]) and (args[i].is_floating_point() or args[i].is_complex())
               and id(args[i]) not in buffers)


def _expects_errors(node):
    """Does the test expect an exception somewhere (``pytest.raises``, ``assertRaises``)? It may
    be the one backward raises."""
    return any(isinstance(n, ast.Attribute) and n.attr in ("raises", "assertRaises", "assertRaisesRegex")
               for n in ast.walk(node))


def _borrowed(call, where, params_of_target, fn, backward_raises=False):
    shown = ", ".join("%s=%r" % kv for kv in sorted(call.kwargs.items()))[:80]
    info = {"test": where}
    if backward_raises:
        info["backward_raises"] = True
    where += " [%s]" % shown if shown else ""
    stand_ins = getattr(call.module, "__gradlint_stand_ins__", None)
    if stand_ins:
        info["stand_ins"] = list(stand_ins)
        where += " (%s stood in for: not installed here)" % ", ".join(stand_ins)
    return Borrowed(_test_draw(call, params_of_target, fn), where, info)


def _test_draw(call, params_of_target, fn=None):
    def draw(seed):
        reached = call.reach(seed)
        if reached is None:
            raise ValueError("the test did not call the target on this draw")
        inputs = as_inputs(reached, params_of_target)
        if fn is not None and accepts(fn, inputs, seed) is not None:
            inputs = refused(fn, inputs, params_of_target, seed) or inputs
        return inputs

    return draw
