"""Calls to ``gradcheck``/``gradgradcheck``, with their arguments bound to parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Sequence

import libcst as cst

from . import torch_api
from .facts import Evaluator, Fact, SequenceFact
from .source import code_only
from .scopes import ModuleContext, Site, walk_statements


@dataclass(frozen=True)
class InputElement:
    """One value in the inputs of a gradcheck call."""

    expr: cst.BaseExpression
    fact: Fact
    inline: bool  # written inside the call itself (else: in the tuple a name refers to)
    index: int


@dataclass(frozen=True)
class GradcheckCall:
    node: cst.Call
    site: Site
    variant: str  # "gradcheck" | "gradgradcheck"
    func: cst.Arg | None
    inputs: cst.Arg | None
    grad_outputs: cst.Arg | None
    extra_positional: tuple[cst.Arg, ...]  # positional arguments past the allowed ones
    has_star_args: bool

    def keyword(self, name: str) -> cst.Arg | None:
        for arg in self.node.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None


def _bind(call: cst.Call, variant: str) -> tuple:
    positional = [a for a in call.args if a.keyword is None and a.star == ""]
    has_star = any(a.star for a in call.args if a.keyword is None)
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    func = positional[0] if positional else keywords.get("func") or keywords.get("fn")
    inputs = positional[1] if len(positional) > 1 else keywords.get("inputs")
    grad_outputs = None
    limit = 2
    if variant == "gradgradcheck":
        limit = 3
        grad_outputs = positional[2] if len(positional) > 2 else keywords.get("grad_outputs")
    return func, inputs, grad_outputs, tuple(positional[limit:]), has_star


class StatementExpressions(cst.CSTVisitor):
    """Nodes of some types in one statement's own expressions (nested bodies, lambdas and
    comprehensions, which have scopes of their own, are skipped)."""

    def __init__(self, root: cst.CSTNode, types: tuple[type, ...]) -> None:
        self.root = root
        self.types = types
        self.found: list[cst.CSTNode] = []

    @classmethod
    def of(cls, stmt: cst.BaseStatement, *types: type) -> list[cst.CSTNode]:
        collector = cls(stmt, types)
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            for decorator in stmt.decorators:
                decorator.visit(collector)
        else:
            stmt.visit(collector)  # compound statements: headers only (bodies are skipped)
        return collector.found

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.types):
            self.found.append(node)
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Lambda, cst.ListComp,
                             cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Else)):
            return False
        if isinstance(node, cst.If) and node is not self.root:
            return False  # an `elif` is a statement of its own
        return True


def calls_in_statement(stmt: cst.BaseStatement) -> list[cst.Call]:
    return StatementExpressions.of(stmt, cst.Call)  # type: ignore[return-value]


_LOCAL_ALIAS = re.compile(r"gradcheck\s+as\b|=\s*[\w.]*gradcheck\b")


def may_call_gradcheck(text: str, aliases: Sequence[str]) -> bool:
    """Could ``text`` contain a gradcheck call? (Visiting every expression of a block is
    costly; a call needs the callee's name followed by an opening parenthesis.)"""
    if "gradcheck" not in text and not any(alias in text for alias in aliases):
        return False
    text = code_only(text)
    if _LOCAL_ALIAS.search(text):
        return True  # a local alias: any name could be the callee
    names = "|".join(re.escape(n) for n in ("gradcheck", "gradgradcheck", *aliases))
    return re.search(rf"\b(?:{names})\s*\(", text) is not None


def find_gradcheck_calls(statements: Sequence[cst.BaseStatement], indexes: Sequence[int],
                         context: ModuleContext) -> Iterator[GradcheckCall]:
    for stmt, site in walk_statements(statements, context.scope, indexes=indexes):
        for call in calls_in_statement(stmt):
            name = context.qualified(call.func, site.scope)
            if name in torch_api.GRADCHECK:
                variant = "gradcheck"
            elif name in torch_api.GRADGRADCHECK:
                variant = "gradgradcheck"
            else:
                continue
            func, inputs, grad_outputs, extra, has_star = _bind(call, variant)
            yield GradcheckCall(call, site, variant, func, inputs, grad_outputs, extra, has_star)


def input_elements(call: GradcheckCall, evaluator: Evaluator) -> list[InputElement] | None:
    """The values gradcheck will see as its inputs, or None when they are not known.

    gradcheck turns a tuple or list into its elements and wraps anything else into a
    1-tuple (``_as_tuple``).
    """
    if call.inputs is None or call.has_star_args:
        return None
    expr = call.inputs.value
    fact = evaluator.fact(expr, call.site)
    if isinstance(fact, SequenceFact):
        if fact.elements is None:
            return None
        if fact.node is None:  # `tuple(t.double() for t in xs)`: no expression per element
            return [InputElement(expr, element_fact, False, index)
                    for index, element_fact in enumerate(fact.elements)]
        inline = fact.node is expr
        return [InputElement(element.value, element_fact, inline, index)
                for index, (element, element_fact) in enumerate(zip(fact.node.elements, fact.elements))]
    return [InputElement(expr, fact, True, 0)]
