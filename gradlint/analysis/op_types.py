"""Operator schema types: what ``torch.library.infer_schema`` makes of an annotation, and
the arguments of a schema string.

``infer_schema`` (torch 2.13, ``torch/_library/infer_schema.py``) looks every parameter
annotation up in a fixed table; anything else raises ``ValueError`` when the op is
decorated, unless it is a type registered with ``register_opaque_type``. Here the same
table is applied to annotations resolved by syntax: a type that resolves to a known name
outside the table is *rejected*; a name gradlint cannot resolve (a user class, maybe an
opaque type) is *unknown*, and rules stay silent about it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from .scopes import ModuleContext, Scope

# Python types -> schema base types (`int` is `SymInt` in schemas)
_BASES = {
    "torch.Tensor": "Tensor", "torch._tensor.Tensor": "Tensor",
    "builtins.int": "SymInt", "builtins.float": "float", "builtins.bool": "bool",
    "builtins.str": "str", "torch.types.Number": "Scalar",
    "torch.dtype": "ScalarType", "torch.device": "Device",
    "torch.distributed.distributed_c10d.GroupName": "str",
}
# which bases have `list[T]`, `list[Optional[T]]` and `Optional[list[T]]` forms
_LISTS = {"Tensor", "SymInt", "float", "bool", "Scalar"}
_OPTIONAL_ELEMENT_LISTS = {"Tensor"}
_OPTIONAL_LISTS = {"SymInt", "float", "bool"}
RETURN_TYPES = {"Tensor", "Tensor[]", "SymInt", "float", "bool", "Scalar"}

_OPTIONAL = {"typing.Optional", "typing_extensions.Optional"}
_UNION = {"typing.Union", "typing_extensions.Union"}
_SEQUENCES = {"typing.Sequence", "typing.List", "collections.abc.Sequence", "builtins.list",
              "typing_extensions.Sequence"}
_TUPLES = {"typing.Tuple", "builtins.tuple"}
# names that certainly are not in the table (and are not opaque types)
_REJECTED = {
    "builtins.complex", "builtins.object", "builtins.dict", "builtins.set", "builtins.bytes",
    "builtins.frozenset", "builtins.type", "builtins.list", "builtins.tuple",
    "typing.Any", "typing.Dict", "typing.Set", "typing.Callable", "typing.Iterable",
    "typing.Mapping", "typing.Tuple", "typing.List", "typing.Sequence",
    "collections.abc.Sequence", "collections.abc.Callable", "collections.abc.Iterable",
    "torch.SymInt", "torch.SymFloat", "torch.SymBool", "torch.Size", "torch.Generator",
    "torch.nn.Module", "torch.types.Device", "torch.types._size",
}
_BUILTIN_NAMES = {"int", "float", "bool", "str", "complex", "object", "dict", "set", "bytes",
                  "frozenset", "type", "list", "tuple"}


@dataclass(frozen=True)
class Verdict:
    """What infer_schema does with an annotation: a schema type, a rejection, or unknown."""

    schema_type: str | None = None  # e.g. "Tensor?", "SymInt[]"
    problem: str | None = None  # why torch rejects it (the annotation is rejected)

    @property
    def unknown(self) -> bool:
        return self.schema_type is None and self.problem is None


UNKNOWN = Verdict()

# A type, resolved by syntax: ("base", schema) | ("none",) | ("optional", T) | ("list", T)
# | ("union", (T, ...)) | ("tuple",) | ("rejected", name) | ("unknown",)
_Type = tuple


def annotation_expression(annotation: cst.Annotation | None) -> cst.BaseExpression | None:
    """The annotation's expression, with a string annotation parsed (``"Tensor"``)."""
    if annotation is None:
        return None
    expr = annotation.annotation
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        if not isinstance(value, str):
            return None
        try:
            return cst.parse_expression(value.strip())
        except cst.ParserSyntaxError:
            return None
    return expr


def parameter_verdict(annotation: cst.Annotation, context: ModuleContext, scope: Scope) -> Verdict:
    expr = annotation_expression(annotation)
    if expr is None:
        return UNKNOWN
    return _param_verdict(_resolve(expr, context, scope))


def return_verdict(annotation: cst.Annotation, context: ModuleContext, scope: Scope) -> Verdict:
    expr = annotation_expression(annotation)
    if expr is None:
        return UNKNOWN
    if isinstance(expr, cst.Subscript) and \
            _qualified(expr.value, context, scope) in _SEQUENCES - {"typing.List", "builtins.list"}:
        return Verdict(problem="only list[Tensor] is supported as a list return type, not Sequence")
    kind = _resolve(expr, context, scope)
    if kind[0] == "none":
        return Verdict("()")
    if kind[0] == "tuple_of":
        parts = [_return_type(element) for element in kind[1]]
        if any(part is None for part in parts):
            return UNKNOWN
        if all(part != "" for part in parts):
            return Verdict("(" + ", ".join(parts) + ")")
        return Verdict(problem="a tuple element is not one of the supported return types")
    single = _return_type(kind)
    if single is None:
        return UNKNOWN
    if single == "":
        return Verdict(problem="not one of the supported return types")
    return Verdict(single)


def _return_type(kind: _Type) -> str | None:
    """The schema return type, "" when torch rejects it, None when unknown."""
    if kind[0] == "unknown":
        return None
    schema = _param_verdict(kind).schema_type
    return schema if schema in RETURN_TYPES else ""


def _param_verdict(kind: _Type) -> Verdict:
    tag = kind[0]
    if tag == "unknown":
        return UNKNOWN
    if tag == "base":
        return Verdict(kind[1])
    if tag == "optional":
        inner = kind[1]
        if inner[0] == "base":
            return Verdict(inner[1] + "?")
        if inner[0] == "list" and inner[1][0] == "base" and inner[1][1] in _OPTIONAL_LISTS:
            return Verdict(inner[1][1] + "[]?")
        if _has_unknown(inner):
            return UNKNOWN
        return Verdict(problem=_optional_problem(inner))
    if tag == "list":
        inner = kind[1]
        if inner[0] == "base" and inner[1] in _LISTS:
            return Verdict(inner[1] + "[]")
        if inner[0] == "optional" and inner[1][0] == "base" and \
                inner[1][1] in _OPTIONAL_ELEMENT_LISTS:
            return Verdict(inner[1][1] + "?[]")
        if _has_unknown(inner):
            return UNKNOWN
        return Verdict(problem="lists are supported only of Tensor, int, float, bool and "
                               "Number (and of Optional[Tensor])")
    if tag in ("tuple", "tuple_of"):
        return Verdict(problem="tuples are not supported as inputs; use list[...] instead")
    if tag == "none":
        return Verdict(problem="`None` alone is not a parameter type")
    if tag == "union":
        return Verdict(problem="the only unions supported are Optional[...] and int | float | "
                               "bool (torch.types.Number)")
    if tag == "rejected":
        return Verdict(problem=f"`{kind[1]}` is not a supported parameter type")
    return UNKNOWN


def _optional_problem(inner: _Type) -> str:
    if inner[0] == "list" and inner[1][0] == "base" and inner[1][1] == "Tensor":
        return "Optional[list[Tensor]] is not supported; use list[Tensor] (possibly empty)"
    return "this Optional[...] is not a supported parameter type"


def _has_unknown(kind: _Type) -> bool:
    if kind[0] == "unknown":
        return True
    if kind[0] in ("optional", "list"):
        return _has_unknown(kind[1])
    if kind[0] in ("union", "tuple_of"):
        return any(_has_unknown(k) for k in kind[1])
    return False


def _qualified(expr: cst.BaseExpression, context: ModuleContext, scope: Scope) -> str | None:
    if isinstance(expr, cst.Name) and expr.value in _BUILTIN_NAMES and \
            scope.binding_scope(expr.value) is None:
        return f"builtins.{expr.value}"
    return context.qualified(expr, scope)


def _resolve(expr: cst.BaseExpression, context: ModuleContext, scope: Scope) -> _Type:
    if isinstance(expr, cst.Name) and expr.value == "None":
        return ("none",)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        name = _qualified(expr, context, scope)
        if name is None:
            return ("unknown",)
        if name in _BASES:
            return ("base", _BASES[name])
        if name in _REJECTED:
            return ("rejected", name.replace("builtins.", ""))
        return ("unknown",)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _union([_resolve(expr.left, context, scope), _resolve(expr.right, context, scope)])
    if isinstance(expr, cst.Subscript):
        base = _qualified(expr.value, context, scope)
        elements = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
        if len(elements) != len(expr.slice):
            return ("unknown",)
        if base in _OPTIONAL and len(elements) == 1:
            return _union([_resolve(elements[0], context, scope), ("none",)])
        if base in _UNION:
            inner = elements[0]
            if len(elements) == 1 and isinstance(inner, cst.Tuple):
                elements = [e.value for e in inner.elements]
            return _union([_resolve(e, context, scope) for e in elements])
        if base in _SEQUENCES and len(elements) == 1:
            return ("list", _resolve(elements[0], context, scope))
        if base in _TUPLES:
            if len(elements) == 1 and isinstance(elements[0], cst.Tuple):
                elements = [e.value for e in elements[0].elements]
            if any(isinstance(e, cst.Ellipsis) for e in elements):
                return ("tuple",)
            return ("tuple_of", tuple(_resolve(e, context, scope) for e in elements))
        if base is not None and base in _REJECTED:
            return ("rejected", base.replace("builtins.", ""))
        return ("unknown",)
    return ("unknown",)


def _union(members: list[_Type]) -> _Type:
    flat: list[_Type] = []
    for member in members:
        if member[0] == "union":
            flat.extend(member[1])
        elif member[0] == "optional":
            flat.extend([member[1], ("none",)])
        else:
            flat.append(member)
    if any(m[0] == "unknown" for m in flat):
        return ("unknown",)
    unique: list[_Type] = []
    for member in flat:
        if member not in unique:
            unique.append(member)
    has_none = ("none",) in unique
    rest = [m for m in unique if m != ("none",)]
    bases = {m[1] for m in rest if m[0] == "base"}
    if len(rest) == 3 and bases == {"SymInt", "float", "bool"}:
        rest = [("base", "Scalar")]
    if not rest:
        return ("none",)
    if len(rest) == 1:
        return ("optional", rest[0]) if has_none else rest[0]
    return ("union", tuple(unique))


# -- schema strings -------------------------------------------------------------------

@dataclass(frozen=True)
class SchemaArgument:
    name: str
    type: str  # without alias annotation: "Tensor", "Tensor?", "int[]", ...
    mutable: bool  # `Tensor(a!)`
    aliased: bool  # any alias annotation, `Tensor(a)` or `Tensor(a!)`
    keyword_only: bool
    default: str | None


@dataclass(frozen=True)
class Schema:
    name: str | None  # the operator name when the string has one ("foo.overload")
    arguments: tuple[SchemaArgument, ...]
    returns: str

    @property
    def has_aliased_return(self) -> bool:
        """A return with an alias annotation (``-> Tensor(a)``): a view op may return a view."""
        return re.search(r"Tensor\s*\(", self.returns) is not None


_ARGUMENT = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:\((?P<alias>[^)]*)\))?(?:\[\d*\])?\??(?:\[\])?\??)"
                       r"\s+(?P<name>[A-Za-z_]\w*)(?:\s*=\s*(?P<default>.+))?$")


def parse_schema(text: str) -> Schema | None:
    """``"name(Tensor x, *, int n=1) -> Tensor"`` (the name is optional); None if unreadable."""
    match = re.match(r"^\s*(?P<name>[\w.:]*)\s*\((?P<args>.*)\)\s*->\s*(?P<returns>.+?)\s*$",
                     text, re.DOTALL)
    if match is None:
        return None
    arguments: list[SchemaArgument] = []
    keyword_only = False
    for piece in _split_top_level(match.group("args")):
        piece = piece.strip()
        if not piece:
            continue
        if piece == "*":
            keyword_only = True
            continue
        argument = _ARGUMENT.match(piece)
        if argument is None:
            return None
        alias = argument.group("alias")
        type_text = re.sub(r"\([^)]*\)", "", argument.group("type"))
        arguments.append(SchemaArgument(argument.group("name"), type_text,
                                        alias is not None and "!" in alias, alias is not None,
                                        keyword_only, argument.group("default")))
    return Schema(match.group("name") or None, tuple(arguments), match.group("returns"))


def _split_top_level(text: str) -> list[str]:
    pieces, depth, current = [], 0, []
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == "," and depth == 0:
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    pieces.append("".join(current))
    return pieces
