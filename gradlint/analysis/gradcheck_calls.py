"""Calls to ``gradcheck``/``gradgradcheck``, with their arguments bound to parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Sequence

import libcst as cst

from . import memos, torch_api, traverse
from .arguments import literal_mapping
from .facts import Evaluator, Fact, SequenceFact
from .names import BindingKind, body_statements
from .source import NameSet, without_comments_and_strings
from .scopes import ModuleContext, Scope, Site, walk_statements
from .traverse import visit


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
    # settings given elsewhere: `functools.partial(gradcheck, eps=...)`, a wrapper's call
    settings: tuple[cst.Arg, ...] = ()
    # how gradcheck is reached: None (directly or by an alias), "partial", "wrapper"
    via: str | None = None

    def keyword(self, name: str) -> cst.Arg | None:
        """The argument passed as ``name`` (explicitly or in a literal ``**{...}``)."""
        for arg in (*self.node.args, *self.settings):
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        for arg in (*self.node.args, *self.settings):
            if arg.star == "**":
                mapping = literal_mapping(arg.value)
                if mapping is not None and name in mapping:
                    return cst.Arg(mapping[name], keyword=cst.Name(name))
        return None

    def may_pass(self, name: str) -> bool:
        """Can ``name`` be passed without gradlint seeing it (``**options``)? Then its
        absence (``keyword(name) is None``) proves nothing."""
        return self.keyword(name) is None and any(
            arg.star == "**" and literal_mapping(arg.value) is None
            for arg in (*self.node.args, *self.settings))

    @property
    def star_inputs(self) -> cst.Arg | None:
        """``gradcheck(f, *inputs)``: the starred argument in the inputs' place."""
        if self.via == "wrapper":
            return None
        positional = [a for a in self.node.args if a.keyword is None]
        if len(positional) >= 2 and positional[0].star == "" and positional[1].star == "*":
            return positional[1]
        return None


def _bind(call: cst.Call, variant: str) -> tuple:
    positional = [a for a in call.args if a.keyword is None and a.star == ""]
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    func = positional[0] if positional else keywords.get("func") or keywords.get("fn")
    inputs = positional[1] if len(positional) > 1 else keywords.get("inputs")
    # `*args` may fill any parameter; `**options` only what is not bound already (a second
    # value is a TypeError), and a literal `**{...}` is read
    has_star = any(a.star == "*" for a in call.args) or any(
        a.star == "**" and _mapping_may_bind(a.value) for a in call.args) and (
        func is None or inputs is None)
    grad_outputs = None
    limit = 2
    if variant == "gradgradcheck":
        limit = 3
        grad_outputs = positional[2] if len(positional) > 2 else keywords.get("grad_outputs")
    return func, inputs, grad_outputs, tuple(positional[limit:]), has_star


def _mapping_may_bind(value: cst.BaseExpression) -> bool:
    """May ``**value`` give gradcheck its ``func``, ``inputs`` or ``grad_outputs``?"""
    mapping = literal_mapping(value)
    return mapping is None or bool({"func", "fn", "inputs", "grad_outputs"} & set(mapping))


_OWN_SCOPE_OR_BODY = traverse.exact_types(
    cst.IndentedBlock, cst.SimpleStatementSuite, cst.Lambda, cst.ListComp, cst.SetComp,
    cst.DictComp, cst.GeneratorExp, cst.Else)


class StatementExpressions(cst.CSTVisitor):
    """Nodes of some types in one statement's own expressions (nested bodies, lambdas and
    comprehensions, which have scopes of their own, are skipped)."""

    skip_trivia = True  # (traverse.visit: layout nodes are never what it collects)

    def __init__(self, root: cst.CSTNode, types: tuple[type, ...]) -> None:
        self.root = root
        self._exact = traverse.is_exact(types)
        self.types = frozenset(types) if self._exact else types
        self.found: list[cst.CSTNode] = []

    @classmethod
    def of(cls, stmt: cst.BaseStatement, *types: type) -> list[cst.CSTNode]:
        key = (id(stmt), cls, types)
        known = _FOUND.get(key)
        if known is not None and known[0] is stmt:
            return list(known[1])
        fast = _collected(stmt, types) if cls is StatementExpressions else None
        if fast is not None:
            memos.remember(_FOUND, key, stmt, tuple(fast))
            return fast
        collector = cls(stmt, types)
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            for decorator in stmt.decorators:
                visit(decorator, collector)
        else:
            visit(stmt, collector)  # compound statements: headers only (bodies are skipped)
        memos.remember(_FOUND, key, stmt, tuple(collector.found))
        return collector.found

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if (kind in self.types) if self._exact else isinstance(node, self.types):
            self.found.append(node)
        if kind in _OWN_SCOPE_OR_BODY:
            return False
        if kind is cst.If and node is not self.root:
            return False  # an `elif` is a statement of its own
        return True


def _collected(stmt: cst.BaseStatement, types: tuple[type, ...]) -> list[cst.CSTNode] | None:
    """What ``StatementExpressions`` finds, by ``traverse.collect`` (None: the visitor is
    needed, for classes that others derive from)."""
    if not traverse.is_exact(types):
        return None
    wanted = frozenset(types)
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        found: list[cst.CSTNode] = []
        for decorator in stmt.decorators:
            part = traverse.collect(decorator, wanted, _CLOSED)
            if part is None:
                return None
            found.extend(part)
        return found
    # the statement itself is entered even when it is an `if` (its own header)
    return traverse.collect(stmt, wanted, _CLOSED)


# what a statement's own expressions do not reach into: bodies, scopes of their own, and
# an `elif` (a statement of its own)
_CLOSED = _OWN_SCOPE_OR_BODY | {cst.If}


# (statement id, collector class, types) -> (statement, nodes found): rules and models ask
# for the same statement's calls again and again (a backward's `ctx` calls, gradcheck calls)
_FOUND: dict = memos.memo()


def calls_in_statement(stmt: cst.BaseStatement) -> list[cst.Call]:
    return StatementExpressions.of(stmt, cst.Call)  # type: ignore[return-value]


_LOCAL_ALIAS = re.compile(r"gradcheck\s+as\b|=\s*[\w.]*gradcheck\b")


def may_call_gradcheck(text: str, aliases: Sequence[str]) -> bool:
    """Could ``text`` contain a gradcheck call? (Visiting every expression of a block is
    costly; a call needs the callee's name followed by an opening parenthesis.)"""
    aliases = aliases if isinstance(aliases, NameSet) else NameSet(aliases)
    if "gradcheck" not in text and not aliases.in_text(text):
        return False
    text = without_comments_and_strings(text)  # (code_only's result, in a third of the time)
    if _LOCAL_ALIAS.search(text):
        return True  # a local alias: any name could be the callee
    if aliases.words_only:  # (the searches below, in one pass whatever the number of names)
        if aliases and any(_is_gradcheck_name(m.group(1), aliases) for m in _ASSIGNED_WORD.finditer(text)):
            return True
        return any(_is_gradcheck_name(m.group(1), aliases) for m in _CALLED_WORD.finditer(text))
    names = "|".join(re.escape(n) for n in ("gradcheck", "gradgradcheck", *aliases))
    if aliases and re.search(rf"=\s*(?:{names})\b", text):
        return True  # a local alias of a module-level alias
    return re.search(rf"\b(?:{names})\s*\(", text) is not None


# names that are words: `=\s*(?:names)\b` and `\b(?:names)\s*\(` match where these find one
_ASSIGNED_WORD = re.compile(r"=\s*(\w+)")
_CALLED_WORD = re.compile(r"(?<!\w)(\w+)\s*\(")


def _is_gradcheck_name(word: str, aliases: NameSet) -> bool:
    return word in ("gradcheck", "gradgradcheck") or word in aliases


def find_gradcheck_calls(statements: Sequence[cst.BaseStatement], indexes: Sequence[int],
                         context: ModuleContext) -> Iterator[GradcheckCall]:
    callees = GradcheckCallees(context)
    for stmt, site in walk_statements(statements, context.scope, indexes=indexes):
        for call in calls_in_statement(stmt):
            callee = callees.of(call.func, site)
            if callee is None:
                continue
            if callee.via == "wrapper":
                found = _bind_wrapper(call, site, callee)
                if found is not None:
                    yield found
                continue
            func, inputs, grad_outputs, extra, has_star = _bind(call, callee.variant)
            yield GradcheckCall(call, site, callee.variant, func, inputs, grad_outputs, extra,
                                has_star, callee.settings, callee.via)


@dataclass(frozen=True)
class Callee:
    """What a called name is, when it is gradcheck in some form."""

    variant: str
    settings: tuple[cst.Arg, ...] = ()
    via: str | None = None
    # wrappers: the wrapper's parameters that become gradcheck's func and inputs, as
    # (position, name); position None: the wrapper passes its *args through
    func_param: tuple[int | None, str | None] = (None, None)
    inputs_param: tuple[int | None, str | None] = (None, None)


def _variant(name: str | None) -> str | None:
    if name in torch_api.GRADCHECK:
        return "gradcheck"
    if name in torch_api.GRADGRADCHECK:
        return "gradgradcheck"
    return None


_PARTIAL = frozenset({"functools.partial"})


class GradcheckCallees:
    """Resolves callees to gradcheck: the function itself, an alias of it (also a local
    one), ``functools.partial(gradcheck, eps=...)``, or a small wrapper defined in the
    module (``def check(f, x): return gradcheck(f, x, eps=1e-6)``)."""

    def __init__(self, context: ModuleContext):
        self.context = context
        self._memo: dict[int, Callee | None] = {}

    def of(self, func: cst.BaseExpression, site: Site, depth: int = 0) -> Callee | None:
        variant = _variant(self.context.qualified(func, site.scope))
        if variant is not None:
            return Callee(variant)
        if not isinstance(func, cst.Name) or depth > 3:
            return None
        owner = site.scope.binding_scope(func.value)
        if owner is None:
            return None
        bindings = owner.table.bindings.get(func.value, [])
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        key = id(binding.node)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # cycle guard
        result: Callee | None = None
        if binding.kind is BindingKind.ASSIGN and binding.value is not None:
            result = self._assigned(binding.value, owner, depth)
        elif binding.kind is BindingKind.DEF and owner.kind != "class":
            node = binding.node
            assert isinstance(node, cst.FunctionDef)
            result = self._wrapper(node, owner, depth)
        self._memo[key] = result
        return result

    def _assigned(self, value: cst.BaseExpression, owner: Scope, depth: int) -> Callee | None:
        site = Site(owner, ())
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.of(value, site, depth + 1)  # `gc = torch.autograd.gradcheck`
        if isinstance(value, cst.Call) and self.context.qualified(value.func, owner) in _PARTIAL:
            args = value.args
            if not args or args[0].keyword is not None or args[0].star:
                return None
            inner = self.of(args[0].value, site, depth + 1)
            if inner is None or inner.via == "wrapper":
                return None
            if any(a.keyword is None or a.star for a in args[1:]):
                return None  # positional arguments bound too: not followed
            return Callee(inner.variant, (*inner.settings, *args[1:]), "partial")
        return None

    def _wrapper(self, node: cst.FunctionDef, owner: Scope, depth: int) -> Callee | None:
        if node.decorators or node.asynchronous is not None:
            return None
        body = [s for s in body_statements(node.body) if not _is_docstring(s)]
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
            return None
        small = body[0].body[0]
        value = small.value if isinstance(small, (cst.Return, cst.Expr)) else \
            small.test if isinstance(small, cst.Assert) else None
        if not isinstance(value, cst.Call):
            return None
        inner = self.of(value.func, Site(owner, ()), depth + 1)
        if inner is None or inner.via == "wrapper":
            return None
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        star = node.params.star_arg.name.value if isinstance(node.params.star_arg, cst.Param) else None
        positional = [a for a in value.args if a.keyword is None]
        settings = tuple(a for a in value.args if a.keyword is not None and _is_constant(a.value))
        if len(positional) == 1 and positional[0].star == "*" and star is not None and \
                _is_name(positional[0].value, star) and not params:
            return Callee(inner.variant, (*inner.settings, *settings), "wrapper", (0, None), (1, None))
        if len(positional) < 2 or any(a.star for a in positional[:2]):
            return None
        func_arg, inputs_arg = positional[0].value, positional[1].value
        if not (isinstance(inputs_arg, cst.Name) and inputs_arg.value in params):
            return None
        func_param: tuple[int | None, str | None] = (None, None)
        if isinstance(func_arg, cst.Name) and func_arg.value in params:
            func_param = (params.index(func_arg.value), func_arg.value)
        return Callee(inner.variant, (*inner.settings, *settings), "wrapper", func_param,
                      (params.index(inputs_arg.value), inputs_arg.value))


def gradcheck_names(context: ModuleContext) -> list[str]:
    """Module-level names, other than ones containing `gradcheck`, that call gradcheck."""
    callees = GradcheckCallees(context)
    names = []
    for name, bindings in context.scope.table.bindings.items():
        if "gradcheck" in name or len(bindings) != 1:
            continue
        if bindings[0].kind in (BindingKind.IMPORT, BindingKind.ASSIGN, BindingKind.DEF) and \
                callees.of(cst.Name(name), Site(context.scope, ())) is not None:
            names.append(name)
    return names


def _bind_wrapper(call: cst.Call, site: Site, callee: Callee) -> GradcheckCall | None:
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return None

    def argument(param: tuple[int | None, str | None]) -> cst.Arg | None:
        position, name = param
        if name is not None:
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == name:
                    return arg
        if position is not None and position < len(positional):
            return positional[position]
        return None

    inputs = argument(callee.inputs_param)
    if inputs is None:
        return None
    return GradcheckCall(call, site, callee.variant, argument(callee.func_param), inputs, None, (),
                         False, callee.settings, "wrapper")


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
        isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString)


def _is_constant(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _is_constant(expr.expression)
    return isinstance(expr, cst.Name) and expr.value in ("True", "False", "None")


def _is_name(expr: cst.BaseExpression, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name


def input_elements(call: GradcheckCall, evaluator: Evaluator) -> list[InputElement] | None:
    """The values gradcheck will see as its inputs, or None when they are not known.

    gradcheck turns a tuple or list into its elements and wraps anything else into a
    1-tuple (``_as_tuple``).
    """
    if call.inputs is None or call.has_star_args:
        return None
    # six rules ask for the same call's inputs: evaluated once, unless parameters are bound
    # (a parametrize case, a helper being followed), which change the answer
    unbound = not evaluator.parameters and not evaluator._comprehension and not evaluator._active
    if unbound:
        memo = evaluator.__dict__.setdefault("_input_elements", {})
        known = memo.get(id(call.node))
        if known is not None and known[0] is call.node:
            return None if known[1] is None else list(known[1])
    found = _input_elements(call, evaluator)
    if unbound:
        memo[id(call.node)] = (call.node, None if found is None else tuple(found))
    return found


def _input_elements(call: GradcheckCall, evaluator: Evaluator) -> list[InputElement] | None:
    assert call.inputs is not None
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
