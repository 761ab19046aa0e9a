"""A call's arguments as the callee will see them, read soundly.

A keyword argument can also arrive through ``**mapping``: ``torch.randn(3, **kwargs)`` may
set ``dtype`` and ``requires_grad``. A mapping written out with literal string keys
(``**{"dtype": torch.float64}``, ``**dict(dtype=torch.float64)``) is read; any other
``**`` makes every keyword it could hold unknown: ``MAYBE``, never "absent".
"""

from __future__ import annotations

import libcst as cst


class Maybe:
    """A keyword that may or may not be passed (through a ``**`` gradlint cannot read)."""

    def __repr__(self) -> str:
        return "MAYBE"


MAYBE = Maybe()


def literal_mapping(expr: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """``{"a": x}`` (string keys, no ``**`` inside) or ``dict(a=x)`` (keywords only): its
    entries; None for anything else."""
    if isinstance(expr, cst.Dict):
        found: dict[str, cst.BaseExpression] = {}
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):
                return None
            key = element.key
            if not isinstance(key, (cst.SimpleString, cst.ConcatenatedString)):
                return None
            value = key.evaluated_value
            if not isinstance(value, str):
                return None
            found[value] = element.value
        return found
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
        found = {}
        for arg in expr.args:
            if arg.keyword is None or arg.star:
                return None
            found[arg.keyword.value] = arg.value
        return found
    return None


def keyword_argument(call: cst.Call, name: str) -> cst.BaseExpression | None | Maybe:
    """The value passed as keyword ``name``: explicitly, or in a literal ``**`` mapping;
    None when it is certainly not passed by keyword; MAYBE when a ``**`` may hold it."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    unknown = False
    for arg in call.args:
        if arg.star == "**":
            mapping = literal_mapping(arg.value)
            if mapping is None:
                unknown = True
            elif name in mapping:
                return mapping[name]
    return MAYBE if unknown else None


def has_double_star(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def has_unknown_double_star(call: cst.Call) -> bool:
    """A ``**`` argument whose keys gradlint cannot read."""
    return any(arg.star == "**" and literal_mapping(arg.value) is None for arg in call.args)
