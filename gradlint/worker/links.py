"""Tensors another argument holds: the links between a caller's arguments, kept on every call.

A Function may take a tensor twice: as an argument, and inside another argument (xitorch passes
a module's parameters after the pure function that holds that module; a solver gets a closure
over its matrix). The worker checks copies of the arguments, so the copy passed as an argument
and the tensor the object holds would part: the object's forward would read the original while
gradcheck moves the copy, and a backward that differentiates the object's output with respect to
the arguments finds them unused. Captured inputs remember their original (``mark``); each call
then gets a copy of each holding argument in which the original is the tensor passed that call
(``copy.deepcopy`` with the original mapped to it)."""

import copy
import types

import torch

from .through_forward import wrapping

ORIGINAL = "gradlint_original"
MAX_NODES = 5000  # objects looked at per holding argument


def mark(clone, original):
    """``clone`` remembers the caller's tensor it copies."""
    setattr(clone, ORIGINAL, original)
    return clone


def same_links(new, old):
    """``new``, standing for ``old`` (another draw of it): it keeps ``old``'s original, if any."""
    orig = getattr(old, ORIGINAL, None)
    if orig is not None:
        mark(new, orig)
    return new


def _children(obj):
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    out = []
    if isinstance(obj, types.MethodType):
        out.append(obj.__self__)
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        for cell in obj.__closure__ or ():
            try:
                out.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        return out
    fields = getattr(obj, "__dict__", None)
    if isinstance(fields, dict):
        out.extend(fields.values())
    for name in ("func", "args", "keywords"):  # functools.partial
        if type(obj).__name__ == "partial" and hasattr(obj, name):
            out.append(getattr(obj, name))
    return out


def _held(holder, wanted):
    """The ids among ``wanted`` that ``holder`` reaches (its fields, items, closures, bound self)."""
    found, seen, todo, n = set(), set(), [holder], 0
    while todo and n < MAX_NODES:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        n += 1
        if id(obj) in wanted:
            found.add(id(obj))
            continue
        if isinstance(obj, (torch.Tensor, str, bytes, int, float, complex, bool, type, types.ModuleType)) \
                or obj is None:
            continue
        try:
            todo.extend(_children(obj))
        except Exception:  # noqa: BLE001 - an object whose fields cannot be read
            continue
    return found


def links(args):
    """[(holder position, [tensor positions])]: the arguments that hold the originals of others."""
    originals = {}
    for j, a in enumerate(args or ()):
        orig = getattr(a, ORIGINAL, None) if isinstance(a, torch.Tensor) else None
        if orig is not None:
            originals[id(orig)] = j
    if not originals:
        return []
    out = []
    for h, holder in enumerate(args):
        if isinstance(holder, torch.Tensor) or holder is None or isinstance(holder, (str, int, float, bool)):
            continue
        held = _held(holder, originals)
        if held:
            out.append((h, sorted(originals[i] for i in held)))
    return out


def copy_holder(obj, memo):
    """``copy.deepcopy(obj, memo)``, except that a function (or a bound method's function) is
    copied with its closure and defaults: deepcopy returns a function itself, so a lambda that
    closes over a tensor passed beside it (zuko's ``gauss_legendre(lambda x: alpha * x, a, b,
    phi=(alpha,))``) would keep the caller's original while gradcheck moves the copy. A cell whose
    contents deepcopy cannot copy (a module) is shared."""
    if isinstance(obj, types.MethodType):
        return types.MethodType(copy_holder(obj.__func__, memo), copy.deepcopy(obj.__self__, memo))
    if not isinstance(obj, types.FunctionType):
        return copy.deepcopy(obj, memo)
    if id(obj) in memo:
        return memo[id(obj)]
    closure = obj.__closure__ or ()
    cells = tuple(types.CellType() for _ in closure)
    new = types.FunctionType(obj.__code__, obj.__globals__, obj.__name__, None, cells or None)
    memo[id(obj)] = new  # a function whose closure reaches itself (recursion) gets this copy
    for old, cell in zip(closure, cells):
        try:
            value = old.cell_contents
        except ValueError:  # an empty cell
            continue
        try:
            cell.cell_contents = copy_holder(value, memo)
        except Exception:  # noqa: BLE001 - contents deepcopy cannot copy: shared
            cell.cell_contents = value
    new.__defaults__ = copy.deepcopy(obj.__defaults__, memo)
    new.__kwdefaults__ = copy.deepcopy(obj.__kwdefaults__, memo)
    new.__dict__.update(obj.__dict__)
    new.__qualname__, new.__module__, new.__doc__ = obj.__qualname__, obj.__module__, obj.__doc__
    return new


def linked(fn, args):
    """``fn`` whose holding arguments hold, on each call, the tensors passed in that call in place
    of the caller's originals; ``fn`` itself when no argument holds another."""
    found = links(args)
    if not found:
        return fn
    originals = dict((j, getattr(args[j], ORIGINAL)) for _, js in found for j in js)

    def with_links(*call_args):
        call_args = list(call_args)
        for h, js in found:
            memo = dict((id(originals[j]), call_args[j]) for j in js)
            memo[id(memo)] = [originals[j] for j in js]  # deepcopy's keep-alive list
            try:
                call_args[h] = copy_holder(call_args[h], memo)
            except Exception:  # noqa: BLE001 - an object deepcopy cannot copy: the call as it is
                pass
        return fn(*call_args)

    with_links.gradlint_links = found
    return wrapping(with_links, fn, lambda inner: linked(inner, args))
