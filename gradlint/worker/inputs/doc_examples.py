"""Inputs from the examples in the project's docstrings (``>>>`` lines): how its author calls it.

A function that wraps a Function often shows its use in its docstring (zuko's ``bisection``:
``>>> f = torch.cos; >>> y = torch.tensor(0.0); >>> bisection(f, y, 2.0, 1.0, n=16)``). When
neither the signature nor the code that calls the Function nor its tests give inputs, the
examples of the docstrings that name the Function or a caller of it are run (in the namespace of
the module they are written in, with the Function's ``apply`` replaced by a stand-in that records
its arguments: ``caller_inputs.stand_in``), and the arguments the first one passes are the inputs.
Each example runs under the same time limit as a test; one that raises before it gets there, or
never gets there, is passed over.
"""

import ast
import doctest
import importlib
import os
import sys
import time

import torch

from .caller_inputs import Borrowed, Reached, accepts, as_inputs, is_test_file, module_name, package_files, \
    refused, stand_in
from .test_callers import TEST_SECONDS
from .time_limits import time_limit

MAX_EXAMPLES = 12  # docstrings whose examples are run, at most


def examples(module, names):
    """[(module name, where, source)] for the docstrings with examples that name one of ``names``
    in the project around ``module``: those naming the Function itself first."""
    root, files = package_files(module)
    if root is None:
        return []
    parser = doctest.DocTestParser()
    found = []
    for path in files:
        if is_test_file(path):
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            continue
        if ">>>" not in text or not any(name in text for name in names):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        owner_module = module_name(root, path)
        if owner_module is None:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            doc = ast.get_docstring(node, clean=True)
            if not doc or ">>>" not in doc:
                continue
            try:
                source = "".join(e.source for e in parser.get_examples(doc))
            except ValueError:
                continue
            rank = 0 if names[0] in source else 1 if any(n + "(" in source for n in names[1:]) else None
            if rank is None:
                continue
            where = "%s:%d (the example in %s's docstring)" % (os.path.relpath(path, root).replace(os.sep, "/"),
                                                              node.lineno, node.name)
            found.append((rank, len(found), owner_module, where, source))
    found.sort(key=lambda f: f[:2])
    return [(owner, where, source) for _r, _o, owner, where, source in found[:MAX_EXAMPLES]]


class _Example(object):
    def __init__(self, fclass, owner, where, source):
        self.fclass = fclass
        self.owner = owner
        self.where = where
        # run as a function's body, so that a lambda closes over the example's tensors (closure
        # cells the worker's copies follow: links.copy_holder) instead of reading globals
        body = "".join("    " + line if line.strip() else line for line in source.splitlines(True))
        self.code = compile("def __gradlint_example__():\n%s    pass\n" % body, "<example in %s>" % where, "exec")

    def reach(self, seed, seconds=TEST_SECONDS):
        """The (args, kwargs) the example passes to the Function, RNGs seeded by ``seed``, or None."""
        torch.manual_seed(seed)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed(seed % (2 ** 32))
        module = importlib.import_module(self.owner)
        namespace = dict(vars(module))
        namespace["__name__"] = "__gradlint_example__"
        with stand_in(self.fclass), time_limit(seconds):
            try:
                exec(self.code, namespace)  # noqa: S102 - the project's own example, in a run it asked for
                namespace["__gradlint_example__"]()
            except Reached as r:
                return r.call_args, r.call_kwargs
            except BaseException as e:  # noqa: BLE001 - an example that fails or runs too long: the next one
                if isinstance(e, KeyboardInterrupt):
                    raise
        return None


def capture(fn, fclass, params_of_target, names, opts, deadline, errors=None):
    """A ``Borrowed`` from the first docstring example that calls the Function with inputs its
    forward and backward accept, or None."""
    seed = int(opts["seed"])
    module = sys.modules.get(fclass.__module__)
    if module is None:
        return None
    for owner, where, source in examples(module, names):
        if time.monotonic() > deadline:
            break
        try:
            example = _Example(fclass, owner, where, source)
            reached = example.reach(seed, min(TEST_SECONDS, max(0.1, deadline - time.monotonic())))
            inputs = as_inputs(reached, params_of_target) if reached is not None else None
        except BaseException as e:  # noqa: BLE001 - the project's example or module
            if isinstance(e, KeyboardInterrupt):
                raise
            if errors is not None:
                errors.append("%s: %s" % (where, type(e).__name__))
            continue
        if inputs is None:
            if errors is not None:
                errors.append("%s: does not call %s" % (where, fclass.__name__))
            continue
        if accepts(fn, inputs, seed) is not None:
            inputs = refused(fn, inputs, params_of_target, seed)
            if inputs is None:
                continue
        return Borrowed(_draw(example, params_of_target, fn), where, {"example": where})
    return None


def _draw(example, params_of_target, fn):
    def draw(seed):
        reached = example.reach(seed)
        if reached is None:
            raise ValueError("the example did not call the target on this draw")
        inputs = as_inputs(reached, params_of_target)
        if accepts(fn, inputs, seed) is not None:
            inputs = refused(fn, inputs, params_of_target, seed) or inputs
        return inputs

    return draw
