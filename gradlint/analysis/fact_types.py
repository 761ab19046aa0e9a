"""The facts gradlint can know about a value, without running anything."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence, Union

import libcst as cst

from .scopes import Site


@dataclass(frozen=True)
class Origin:
    """Where a property of a tensor was decided, for fixes to edit.

    kind: ``factory`` (a factory call that takes ``dtype=``/``requires_grad=``),
    ``cast`` (``x.float()``), ``to`` (``x.to(torch.float32)``), or ``expression`` (a
    whole expression a method like ``.requires_grad_()`` can be appended to).
    """

    kind: str
    node: cst.BaseExpression
    site: Site


@dataclass(frozen=True)
class TensorFact:
    dtype: str | None
    requires_grad: bool | None
    dtype_origin: Origin | None = None
    grad_origin: Origin | None = None
    default_dtype: bool = False  # the dtype is torch's default floating dtype


@dataclass(frozen=True)
class SequenceFact:
    kind: str  # "tuple" | "list" | "range"
    elements: tuple["Fact", ...] | None  # None: length or content unknown
    node: cst.Tuple | cst.List | None = None  # the literal the elements come from


@dataclass(frozen=True)
class DtypeFact:
    dtype: str | None


@dataclass(frozen=True)
class OpaqueFact:
    """A known non-tensor value: number, none, bool, string, generator, dict, set, callable."""

    kind: str
    value: object = None  # numbers: the value, when it is a literal


@dataclass(frozen=True)
class UnknownFact:
    pass


UNKNOWN = UnknownFact()
Fact = Union[TensorFact, SequenceFact, DtypeFact, OpaqueFact, UnknownFact]

def without_origins(fact: Fact) -> Fact:
    """The fact without places to edit (a value from another function or module)."""
    if isinstance(fact, TensorFact):
        return replace(fact, dtype_origin=None, grad_origin=None)
    if isinstance(fact, SequenceFact) and fact.elements is not None:
        return SequenceFact(fact.kind, tuple(without_origins(e) for e in fact.elements), None)
    return fact



def merge_facts(facts: Sequence[Fact]) -> Fact:
    """What is certain about a value that is one of ``facts``."""
    if not facts:
        return UNKNOWN
    first = facts[0]
    if all(f == first for f in facts):
        return first
    if all(isinstance(f, TensorFact) for f in facts):
        tensors = [f for f in facts if isinstance(f, TensorFact)]
        dtypes = {t.dtype for t in tensors}
        grads = {t.requires_grad for t in tensors}
        return TensorFact(dtypes.pop() if len(dtypes) == 1 else None,
                          grads.pop() if len(grads) == 1 else None, None, None,
                          all(t.default_dtype for t in tensors))
    if all(isinstance(f, OpaqueFact) and f.kind == first.kind for f in facts):  # type: ignore[union-attr]
        return OpaqueFact(first.kind)  # type: ignore[union-attr]
    return UNKNOWN
