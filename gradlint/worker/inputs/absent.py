"""Stand-ins for the modules a project's test imports and this interpreter does not have.

A test module often imports a library for what it does after the call the worker stops at:
``matplotlib`` to plot the trajectory it checked, ``tqdm`` for a progress bar. Without it the
module does not import, and its tests give no inputs. ``standing_in(root)`` imports such a module
with a stand-in for each absent top-level module (never for the project's own modules, nor for one
this interpreter has): any attribute of a stand-in, and any call of one, is another stand-in. A
stand-in is no tensor and no number, so a value made from it cannot become an input: a test that
needs one to build its inputs fails before the call, as it did before, and gives nothing.
The stand-ins are in ``sys.modules`` only while that module imports (leaving ``standing_in`` takes them back);
the module keeps its references.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

MAX_ABSENT = 4  # absent top-level modules stood in for, per test module


class StandIn(object):
    """What an absent module's attributes, and their calls, give back."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn("%s.%s" % (self._name, attr))

    def __call__(self, *args, **kwargs):
        return StandIn(self._name + "()")

    def __repr__(self):
        return "<stand-in for %s>" % self._name


class _StandInModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn("%s.%s" % (self.__name__, attr))


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return _StandInModule(spec.name)

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: asked only for modules no other finder has."""

    def __init__(self):
        self.tops = set()

    def find_spec(self, name, path=None, target=None):
        if name.split(".", 1)[0] not in self.tops:
            return None
        return importlib.machinery.ModuleSpec(name, _Loader(), is_package=True)


def absent(error, root, tried):
    """The top-level module a ``ModuleNotFoundError`` says is missing, when a stand-in may take
    its place: not one this interpreter has (then the error is the module's own), not one of the
    project's (a file or folder of that name under ``root`` or the test's folder: a path problem),
    not one stood in for already. Else None."""
    name = getattr(error, "name", None)
    if not isinstance(error, ModuleNotFoundError) or not name:
        return None
    top = name.split(".", 1)[0]
    if top in tried or len(tried) >= MAX_ABSENT or top in ("torch", "gradlint_worker"):
        return None
    try:
        if importlib.util.find_spec(top) is not None:
            return None
    except (ImportError, ValueError):
        return None
    for base in root:
        if os.path.exists(os.path.join(base, top)) or os.path.exists(os.path.join(base, top + ".py")):
            return None
    return top


class standing_in(object):
    """``with standing_in() as absent_modules:`` a finder of stand-ins is last on ``sys.meta_path``;
    ``absent_modules.add(name)`` stands in for ``name``; on exit the finder and every stand-in
    module are taken out of ``sys.modules`` (the test modules keep their references)."""

    def __init__(self):
        self.finder = _Finder()

    @property
    def names(self):
        return sorted(self.finder.tops)

    def add(self, top):
        self.finder.tops.add(top)
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]  # a failed import may leave a half-made entry

    def __enter__(self):
        sys.meta_path.append(self.finder)
        return self

    def __exit__(self, *exc):
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        for name, module in list(sys.modules.items()):
            if isinstance(module, _StandInModule):
                del sys.modules[name]
        return False


def stood_in(value):
    """The absent top-level module ``value`` stands in for (a stand-in module or attribute), or None."""
    if isinstance(value, _StandInModule):
        return value.__name__.split(".", 1)[0]
    if isinstance(value, StandIn):
        return value._name.split(".", 1)[0]
    return None
