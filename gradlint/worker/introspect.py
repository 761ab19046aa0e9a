"""What a target defines: Function methods, signatures, annotations, source lines."""

import inspect
import linecache
import sys

import torch

from .userframes import realpath


def method_def(cls, name):
    """Where ``cls`` (or a user base class) defines ``name``; None when torch's own."""
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass):
            if klass.__module__.startswith("torch."):
                return None
            f = vars(klass)[name]
            f = getattr(f, "__func__", f)
            return def_of(f)
    return None


def runs_in_method(cls, name, path, line):
    """Is ``path:line`` a line of ``cls``'s own method ``name`` (not of a same-named method of
    another class in the file, nor of a function nested in it)?"""
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass):
            if klass.__module__.startswith("torch."):
                return False
            f = vars(klass)[name]
            f = getattr(f, "__func__", f)
            try:
                f = inspect.unwrap(f)
            except Exception:
                pass
            code = getattr(f, "__code__", None)
            if code is None or code.co_filename != path:
                return False
            return any(ln == line for _start, _end, ln in code.co_lines())
    return False


def def_of(func):
    try:
        f = inspect.unwrap(func)
    except Exception:
        f = func
    code = getattr(f, "__code__", None)
    if code is None:
        return None
    path, first = code.co_filename, code.co_firstlineno
    line = first
    for ln in range(first, first + 40):
        s = linecache.getline(path, ln).lstrip()
        if s.startswith(("def ", "async def ", "lambda")) or " lambda" in s:
            line = ln
            break
        if s and not s.startswith(("@", "#")) and not s.endswith((",", "(", ")")):
            break
    return {"file": path, "line": line, "function": getattr(f, "__qualname__", None)}


def defines(cls, name):
    base = getattr(torch.autograd.Function, name, None)
    own = getattr(cls, name, None)
    return own is not None and own is not base


def is_once_differentiable(cls):
    f = getattr(cls, "backward", None)
    f = getattr(f, "__func__", f)
    code = getattr(f, "__code__", None)
    if code is None or getattr(f, "__wrapped__", None) is None:
        return False
    fn_mod = sys.modules.get("torch.autograd.function")
    return code.co_name == "wrapper" and fn_mod is not None and realpath(code.co_filename) == realpath(fn_mod.__file__)


def uses_setup_context(cls):
    try:
        from torch.autograd.function import _is_setup_context_defined

        return bool(_is_setup_context_defined(cls.setup_context))
    except Exception:
        return getattr(cls, "setup_context", None) is not getattr(torch.autograd.Function, "setup_context", None)


def value_params(fn, fclass):
    """The parameters that take the values passed to fn (ctx removed for old-style Functions)."""
    try:
        if fclass is not None:
            params = list(inspect.signature(fclass.forward).parameters.values())
            if not uses_setup_context(fclass) and params:
                params = params[1:]
            return params
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


def param_names(fn, fclass):
    params = value_params(fn, fclass) or []
    names = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            names.extend("%s[%d]" % (p.name, i) for i in range(16))
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names


def ann_name(ann):
    if isinstance(ann, str):
        return ann
    return getattr(ann, "__name__", None) or repr(ann)
