"""pytest fixtures of the project's own making, for calling its tests without pytest.

A test that exercises a Function often takes fixtures: a ``layout`` fixture parametrized over
``[torch.sparse_coo, torch.sparse_csr]``, a ``shapes`` fixture over its test data, a ``device``
fixture defined in ``conftest.py``. ``cases`` finds each needed fixture in the test module, then
in the ``conftest.py`` files from the test's folder up to the project root, calls it (its own
fixtures first, ``request.param`` for a parametrized one, a generator advanced to its value) and
combines the parametrized ones as pytest does (their product, a few cases).
"""

import importlib.util
import inspect
import itertools
import os
import sys

MAX_CASES = 8
MAX_DEPTH = 5


class _Request(object):
    """The part of pytest's ``request`` fixtures use: ``param`` and ``getfixturevalue``."""

    def __init__(self, param, resolve):
        self.param = param
        self._resolve = resolve

    def getfixturevalue(self, name):
        return self._resolve(name)


def _wrapped(obj):
    for get in (lambda o: o._get_wrapped_function(), lambda o: o.__pytest_wrapped__.obj, lambda o: o.__wrapped__):
        try:
            func = get(obj)
        except Exception:  # noqa: BLE001 - not this pytest's spelling
            continue
        if callable(func):
            return func
    return None


def _params(obj):
    """The ``params=[...]`` of a fixture, or None."""
    for get in (lambda o: o._fixture_function_marker.params, lambda o: o._pytestfixturefunction.params):
        try:
            params = get(obj)
        except Exception:  # noqa: BLE001 - not this pytest's spelling
            continue
        return list(params) if params is not None else None
    return None


def is_fixture(obj):
    return _wrapped(obj) is not None and (hasattr(obj, "_fixture_function_marker") or hasattr(obj, "_pytestfixturefunction")
                                          or type(obj).__name__ == "FixtureFunctionDefinition")


def conftests(test_path, root):
    """The conftest modules from the test's folder up to ``root`` (nearest first), imported."""
    out = []
    folder = os.path.dirname(os.path.abspath(test_path))
    root = os.path.abspath(root) if root else folder
    while True:
        path = os.path.join(folder, "conftest.py")
        if os.path.isfile(path):
            module = _import_conftest(path)
            if module is not None:
                out.append(module)
        if folder == root or not folder.startswith(root) or os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    return out


def _import_conftest(path):
    name = "_gradlint_conftest_%d" % (abs(hash(path)) % 10 ** 8)
    if name in sys.modules:
        return sys.modules[name]
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except BaseException as e:  # noqa: BLE001 - the user's conftest
        sys.modules.pop(name, None)
        if isinstance(e, KeyboardInterrupt):
            raise
        return None


def _find(modules, name):
    for module in modules:
        obj = getattr(module, name, None)
        if obj is not None and is_fixture(obj):
            return obj
    return None


def _required(func):
    try:
        return [p.name for p in inspect.signature(func).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        return []


def cases(modules, names, limit=MAX_CASES):
    """[{name: value}] for the fixtures ``names``, one dict per combination of the parametrized
    ones (their product, at most ``limit``); None when one of them is not a fixture here (or
    raises)."""
    choices = {}  # parametrized fixture -> its params (the product runs over these)

    def collect(name, depth):
        if name in choices or name == "request" or depth > MAX_DEPTH:
            return True
        obj = _find(modules, name)
        if obj is None:
            return False
        params = _params(obj)
        if params:
            choices[name] = [getattr(p, "values", (p,))[0] if hasattr(p, "marks") else p for p in params]
        return all(collect(dep, depth + 1) for dep in _required(_wrapped(obj)))

    if not all(collect(n, 0) for n in names):
        return None
    keys = sorted(choices)
    out = []
    for combo in itertools.islice(itertools.product(*[choices[k] for k in keys]), limit):
        chosen = dict(zip(keys, combo))
        cache = {}

        def resolve(name, depth=0):
            if name in cache:
                return cache[name]
            obj = _find(modules, name)
            func = _wrapped(obj)
            kwargs = {}
            for dep in _required(func):
                kwargs[dep] = _Request(chosen.get(name), lambda n: resolve(n, depth + 1)) if dep == "request" \
                    else resolve(dep, depth + 1)
            value = func(**kwargs)
            if inspect.isgenerator(value):
                value = next(value)
            cache[name] = value
            return value

        try:
            out.append(dict((n, resolve(n)) for n in names))
        except BaseException as e:  # noqa: BLE001 - a fixture that raises or skips: the next combination
            if isinstance(e, KeyboardInterrupt):
                raise
            continue
    return out or None
