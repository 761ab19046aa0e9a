"""Values the module's own code passes to a target: the best guess for its non-tensor inputs.

Real Functions are called from a wrapper in the same module, often with literals or with
the wrapper's defaults (``def sparsemax(X, dim=-1): return SparsemaxFunction.apply(X, dim)``).
This reads the module's source for calls of ``Cls.apply`` (or of a name bound to it, or of
the function itself) and collects, per parameter, the literal values passed: a constant,
the default of the wrapper's own parameter passed through, or a module-level constant.
"""

import ast
import inspect
import sys

from ..introspect import value_params
from .param_usage import source_tree


def values_from_callers(fn, fclass):
    """{parameter name: [values]} from calls of the target in its own module."""
    target = fclass if fclass is not None else fn
    module = sys.modules.get(getattr(target, "__module__", None) or "")
    name = getattr(target, "__name__", None)
    if module is None or not name:
        return {}
    try:
        tree = ast.parse(inspect.getsource(module))
    except Exception:
        return {}
    params = value_params(fn, fclass) or []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    aliases = _aliases(tree, name) if fclass is not None else set()
    constants = _module_constants(tree)
    found = {}
    for function, call in _calls(tree):
        if not _calls_target(call, name, aliases, fclass is not None):
            continue
        defaults = _defaults(function)
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred) or i >= len(positional):
                break
            _collect(found, positional[i], arg, defaults, constants)
        for kw in call.keywords:
            if kw.arg in positional:
                _collect(found, kw.arg, kw.value, defaults, constants)
    return found


def star_arity(fn, fclass):
    """(how many values the target's ``*args`` takes, where that comes from): the most common count
    among its module's own calls that pass them one by one (``Fn.apply(f, x, w, b)``: 2 past
    ``f, x``), else the width of the tuple backward returns less the named parameters; else None."""
    target = fclass if fclass is not None else fn
    module = sys.modules.get(getattr(target, "__module__", None) or "")
    name = getattr(target, "__name__", None)
    params = value_params(fn, fclass) or []
    named = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    counts = {}
    if module is not None and name:
        try:
            tree = ast.parse(inspect.getsource(module))
        except Exception:
            tree = None
        aliases = _aliases(tree, name) if tree is not None and fclass is not None else set()
        for _function, call in _calls(tree) if tree is not None else ():
            if _calls_target(call, name, aliases, fclass is not None) and \
                    not any(isinstance(a, ast.Starred) for a in call.args) and len(call.args) > named:
                counts[len(call.args) - named] = counts.get(len(call.args) - named, 0) + 1
    if counts:
        return max(sorted(counts), key=lambda k: counts[k]), "as the module's calls pass"
    width = _literal_width(fclass.backward) if fclass is not None else None
    if width is not None and width > named:
        return width - named, "as backward returns gradients for"
    return None


def _literal_width(backward):
    """The length of the tuple every return of backward spells out (``return 2 * g, 3 * g``), or
    None (a tuple built at run time: ``tuple(...)``, ``(g,) * ctx.n``, a starred item)."""
    tree = source_tree(backward)
    widths = set()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if not isinstance(value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in value.elts):
                return None
            widths.add(len(value.elts))
    return widths.pop() if len(widths) == 1 else None


def _aliases(tree, name):
    """Module-level names bound to ``Cls.apply`` (``sparsemax_fn = SparsemaxFunction.apply``)."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_apply(node.value, name):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def _is_apply(node, name):
    return isinstance(node, ast.Attribute) and node.attr == "apply" and \
        isinstance(node.value, ast.Name) and node.value.id == name


def _calls_target(call, name, aliases, is_function_class):
    func = call.func
    if is_function_class:
        return _is_apply(func, name) or (isinstance(func, ast.Name) and func.id in aliases)
    return isinstance(func, ast.Name) and func.id == name


def _calls(tree):
    """(enclosing function or None, call) for every call in the module."""
    out = []

    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                out.append((function, child))
            walk(child, inner)

    walk(tree, None)
    return out


def _defaults(function):
    if function is None:
        return {}
    args = function.args
    positional = args.posonlyargs + args.args
    out = {}
    for param, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        out[param.arg] = default
    for param, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None:
            out[param.arg] = default
    return out


def _module_constants(tree):
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _collect(found, param, node, defaults, constants):
    cast = None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("float", "int") \
            and len(node.args) == 1 and not node.keywords:
        # `float(floor)`: the call says the kind; the value is the argument's default, when it has one
        cast, node = {"float": float, "int": int}[node.func.id], node.args[0]
    if isinstance(node, ast.Name):
        node = defaults.get(node.id, constants.get(node.id))
    if node is None:
        return
    try:
        value = ast.literal_eval(node)
        value = cast(value) if cast is not None else value
    except (ValueError, SyntaxError, TypeError):
        return
    if isinstance(value, (bool, int, float, str, type(None), tuple)):
        values = found.setdefault(param, [])
        if value not in values:
            values.append(value)
