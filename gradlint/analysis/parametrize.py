"""``@pytest.mark.parametrize`` cases of a test function, as source text the runner evaluates.

Each decorator gives ``(argnames, argvalues source)``: the worker evaluates the argvalues
expression in the test module (a literal list, a module constant, a call...), so every way
people write cases works, not only literals. Stacked decorators combine as in pytest.
"""

from __future__ import annotations

import libcst as cst

from .names import dotted_name

_PARAMETRIZE = ("pytest.mark.parametrize", "mark.parametrize", "parametrize")


def parametrize_cases(function: cst.FunctionDef, code) -> tuple[tuple[tuple[str, ...], str], ...]:
    """((argnames, argvalues source), ...) of the function's parametrize decorators.

    ``code`` renders a node as source text.
    """
    found = []
    for decorator in function.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call) or dotted_name(call.func) not in _PARAMETRIZE:
            continue
        positional = [a for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        names_node = positional[0].value if positional else keywords.get("argnames")
        values_node = positional[1].value if len(positional) > 1 else keywords.get("argvalues")
        names = _argnames(names_node)
        if not names or values_node is None:
            continue
        found.append((names, code(values_node)))
    return tuple(found)


def _argnames(node: cst.BaseExpression | None) -> tuple[str, ...]:
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        if isinstance(text, bytes):
            return ()
        return tuple(n.strip() for n in text.split(",") if n.strip())
    if isinstance(node, (cst.List, cst.Tuple)):
        names = []
        for element in node.elements:
            if not isinstance(element.value, cst.SimpleString):
                return ()
            value = element.value.evaluated_value
            if not isinstance(value, str):
                return ()
            names.append(value.strip())
        return tuple(names)
    return ()
