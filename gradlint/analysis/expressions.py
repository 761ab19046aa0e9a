"""Facts of expressions: torch factories and functions, tensor methods, operators and
indexing, following the transfer table (``transfer.py``) and torch's grad mode."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

import libcst as cst

from . import torch_api, transfer
from .fact_types import (UNKNOWN, DtypeFact, Fact, OpaqueFact, Origin, SequenceFact, TensorFact,
                         without_origins)
from .scopes import Scope, Site

if TYPE_CHECKING:
    from .facts import Evaluator


class Expressions:
    """The expression half of ``Evaluator`` (names and statements are in ``facts.py``)."""

    def _binary_fact(self, expr: cst.BinaryOperation, site: Site, depth: int) -> Fact:
        operator = type(expr.operator).__name__
        if operator not in transfer.BINARY_OPERATORS:
            return UNKNOWN
        tensors: list[TensorFact] = []
        numbers: list[str] = []
        for operand in (expr.left, expr.right):
            fact = self.fact(operand, site, depth + 1)
            if isinstance(fact, TensorFact):
                tensors.append(fact)
            elif isinstance(fact, OpaqueFact) and fact.kind in ("number", "bool"):
                kind = _literal_kind(operand) or ("float" if isinstance(fact.value, float) else None)
                if kind is None:
                    return UNKNOWN
                numbers.append(kind)
            else:
                return UNKNOWN
        if not tensors:
            return UNKNOWN
        division = operator == "Divide"
        return self._transferred(transfer.Transfer(transfer.PROMOTE, 1, true_division=division),
                                 tensors, numbers, expr, site)

    def _subscript_fact(self, expr: cst.Subscript, site: Site, depth: int) -> Fact:
        base = self.fact(expr.value, site, depth + 1)
        if isinstance(base, TensorFact):
            return self._transferred(transfer.METHODS["select"], [base], [], expr, site)
        if isinstance(base, SequenceFact) and base.elements is not None and len(expr.slice) == 1:
            index = expr.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, (cst.Integer, cst.UnaryOperation)):
                value = self.fact(index.value, site, depth + 1)
                if isinstance(value, OpaqueFact) and isinstance(value.value, int):
                    if -len(base.elements) <= value.value < len(base.elements):
                        return base.elements[value.value]
        return UNKNOWN

    def _mapped(self, comprehension: cst.GeneratorExp | cst.ListComp, site: Site,
                depth: int) -> tuple[Fact, ...] | None:
        """``(f(t) for t in seq)`` over a known sequence: the facts of each ``f(t)``."""
        clause = comprehension.for_in
        if clause.inner_for_in is not None or clause.ifs or clause.asynchronous is not None or \
                not isinstance(clause.target, cst.Name):
            return None
        source = self.fact(clause.iter, site, depth + 1)
        if not isinstance(source, SequenceFact) or source.elements is None:
            return None
        key = (id(site.scope.node), clause.target.value)
        saved = self._comprehension.get(key)
        results = []
        try:
            for element in source.elements:
                self._comprehension[key] = element
                results.append(without_origins(self.fact(comprehension.elt, site, depth + 1)))
        finally:
            if saved is None:
                self._comprehension.pop(key, None)
            else:
                self._comprehension[key] = saved
        return tuple(results)

    def _transferred(self, rule: transfer.Transfer, tensors: Sequence[TensorFact],
                     numbers: list[str], expr: cst.BaseExpression, site: Site,
                     others: Sequence[bool | None] = ()) -> TensorFact:
        """The result of an operation on ``tensors`` (the receiver first) and ``numbers``;
        ``others``: requires_grad of further arguments that may be tensors."""
        dtypes = [t.dtype for t in tensors]
        dtype = transfer.result_dtype(rule, dtypes, numbers, self.context.default_dtype)
        grads = [t.requires_grad for t in tensors] + list(others)
        grad = transfer.result_requires_grad(rule, grads, grad_mode_disabled(site, self))
        receiver = tensors[0]
        same = dtype is not None and all(t.dtype == dtype for t in tensors)
        origin = receiver.dtype_origin if same and len(tensors) == 1 else None
        default = same and all(t.default_dtype for t in tensors)
        return TensorFact(dtype, grad, origin, Origin("expression", expr, site), default)

    def _torch_call_fact(self, qualified: str, call: cst.Call, site: Site, depth: int) -> Fact:
        if qualified in torch_api.PARAMETER or qualified in torch_api.VARIABLE:
            data = _argument(call, 0, "data")
            inner = self.fact(data, site, depth + 1) if data is not None else UNKNOWN
            default = qualified in torch_api.PARAMETER
            grad = bool_argument(call, "requires_grad", default, position=1)
            if isinstance(inner, TensorFact):
                return TensorFact(inner.dtype, grad, inner.dtype_origin, None, inner.default_dtype)
            return UNKNOWN
        if qualified == "torch.device":
            return OpaqueFact("device")
        if qualified in transfer.FUNCTIONS:
            return self._function_fact(transfer.FUNCTIONS[qualified], call, site, depth)
        if qualified in transfer.SEQUENCE_FUNCTIONS:
            return self._sequence_function_fact(call, site, depth)
        if qualified == "torch.from_numpy":
            return TensorFact(None, False, None, Origin("expression", call, site))
        factory = _FACTORY_KINDS.get(qualified)
        if factory is None:
            if qualified in torch_api.LEGACY_CONSTRUCTORS:
                fixed = torch_api.LEGACY_CONSTRUCTORS[qualified]
                dtype = fixed if fixed is not None else self.context.default_dtype
                return TensorFact(dtype, False, None, Origin("expression", call, site),
                                  default_dtype=fixed is None)
            return UNKNOWN
        grad = bool_argument(call, "requires_grad", False)
        if qualified == "torch.as_tensor" and _literal_kind(_argument(call, 0, "data")) is None:
            return UNKNOWN  # `as_tensor(t)` of a tensor is that tensor, requires_grad and all
        dtype_arg = _keyword(call, "dtype")
        default = False
        if dtype_arg is not None and not _is_none(dtype_arg):
            dtype_fact = self.fact(dtype_arg, site, depth + 1)
            dtype = dtype_fact.dtype if isinstance(dtype_fact, DtypeFact) else None
        elif factory == "default":
            dtype, default = self.context.default_dtype, True
        elif factory == "integer":
            dtype = torch_api.INTEGER_FACTORIES[qualified]
        elif factory == "explicit":
            dtype = None  # a required keyword: without it, torch raises TypeError
        elif factory == "like":
            source = _argument(call, 0, "input")
            source_fact = self.fact(source, site, depth + 1) if source is not None else UNKNOWN
            dtype = source_fact.dtype if isinstance(source_fact, TensorFact) else None
            default = isinstance(source_fact, TensorFact) and source_fact.default_dtype
        else:
            dtype, default = self._inferred_dtype(qualified, call)
        origin = Origin("factory", call, site)
        return TensorFact(dtype, grad, origin, origin, default)

    def _inferred_dtype(self, qualified: str, call: cst.Call) -> tuple[str | None, bool]:
        if qualified in ("torch.tensor", "torch.as_tensor"):
            data = _argument(call, 0, "data")
            kind = _literal_kind(data) if data is not None else None
        elif qualified == "torch.full":
            value = _argument(call, 1, "fill_value")
            kind = _literal_kind(value) if value is not None else None
        elif qualified == "torch.range":
            kind = "float"
        else:  # arange
            kinds = [_literal_kind(a.value) for a in call.args if a.keyword is None]
            if not kinds or None in kinds:
                kind = None
            else:
                kind = max(kinds, key=_KIND_ORDER.index)
        default = self.context.default_dtype
        if kind == "float":
            return default, True
        if kind == "int":
            return "int64", False
        if kind == "bool":
            return "bool", False
        if kind == "complex":
            if default == "float64":
                return "complex128", True
            return ("complex64", True) if default == "float32" else (None, False)
        return None, False

    def _method_fact(self, receiver: TensorFact, call: cst.Call, site: Site, depth: int) -> Fact:
        assert isinstance(call.func, cst.Attribute)
        method = call.func.attr.value
        grad = _cast_grad(receiver.requires_grad, grad_mode_disabled(site, self))
        expression = Origin("expression", call, site)
        if method in torch_api.CAST_METHODS and not call.args:
            return TensorFact(torch_api.CAST_METHODS[method], grad, Origin("cast", call, site),
                              expression)
        if method == "to":
            dtype, changed = self._to_dtype(receiver, call, site, depth)
            origin = Origin("to", call, site) if changed else receiver.dtype_origin
            return TensorFact(dtype, grad, origin, expression,
                              receiver.default_dtype and not changed)
        if method in torch_api.NEW_METHODS:
            dtype_arg = _keyword(call, "dtype")
            dtype, default = receiver.dtype, receiver.default_dtype
            if dtype_arg is not None and not _is_none(dtype_arg):
                dtype_fact = self.fact(dtype_arg, site, depth + 1)
                dtype = dtype_fact.dtype if isinstance(dtype_fact, DtypeFact) else None
                default = False
            origin = Origin("factory", call, site)
            return TensorFact(dtype, bool_argument(call, "requires_grad", False), origin, origin,
                              default)
        if method == "type":
            if not call.args:
                return OpaqueFact("string")
            target = call.args[0].value
            qualified = self.qualified(target, site)
            dtype = torch_api.DTYPES.get(qualified or "") or torch_api.TENSOR_TYPES.get(qualified or "")
            if dtype is None and isinstance(target, cst.SimpleString):
                dtype = torch_api.TENSOR_TYPE_STRINGS.get(str(target.evaluated_value))
            return TensorFact(dtype, grad, None, expression)
        if method == "requires_grad_":
            value = bool_argument(call, "requires_grad", True)
            return TensorFact(receiver.dtype, value, receiver.dtype_origin, expression,
                              receiver.default_dtype)
        if method == "detach":
            return TensorFact(receiver.dtype, False, receiver.dtype_origin, expression,
                              receiver.default_dtype)
        if method in ("retain_grad", "mT", "T", "H", "mH"):
            return TensorFact(receiver.dtype, receiver.requires_grad, receiver.dtype_origin,
                              expression, receiver.default_dtype)
        rule = transfer.METHODS.get(method)
        if rule is None:
            return UNKNOWN
        return self._apply_rule(rule, receiver, call, site, depth)

    def _function_fact(self, rule: transfer.Transfer, call: cst.Call, site: Site, depth: int) -> Fact:
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return UNKNOWN
        receiver = self.fact(call.args[0].value, site, depth + 1)
        if not isinstance(receiver, TensorFact):
            return UNKNOWN
        return self._apply_rule(rule, receiver, call, site, depth, skip=1)

    def _apply_rule(self, rule: transfer.Transfer, receiver: TensorFact, call: cst.Call,
                    site: Site, depth: int, skip: int = 0) -> Fact:
        """A table operation: its operands are the first positional arguments after the
        receiver; any other argument that may be a tensor may carry requires_grad."""
        tensors = [receiver]
        numbers: list[str] = []
        others: list[bool | None] = []
        positional = 0
        for arg in call.args[skip:]:
            if arg.star:
                if rule.operands:
                    return UNKNOWN
                if not self._spreads_sizes(arg.value, site, depth):
                    others.append(None)  # may spread a tensor that requires grad
                continue
            fact = self.fact(arg.value, site, depth + 1)
            operand = arg.keyword is None and positional < rule.operands
            if arg.keyword is None:
                positional += 1
            if isinstance(fact, TensorFact):
                (tensors.append(fact) if operand else others.append(fact.requires_grad))
            elif isinstance(fact, OpaqueFact) and fact.kind in ("number", "bool"):
                if operand:
                    kind = _literal_kind(arg.value) or (
                        "float" if isinstance(fact.value, float) else None)
                    if kind is None:
                        return UNKNOWN
                    numbers.append(kind)
            elif isinstance(fact, (OpaqueFact, DtypeFact)):
                continue
            elif isinstance(fact, SequenceFact) and not operand:
                continue  # sizes and dims
            else:
                if operand:
                    return UNKNOWN
                others.append(None)
        if positional < rule.operands:
            return UNKNOWN
        return self._transferred(rule, tensors, numbers, call, site, others)

    def _spreads_sizes(self, value: cst.BaseExpression, site: Site, depth: int) -> bool:
        """``*value`` spreads only non-tensors: a tuple or list of numbers (`*batch_shape`),
        or a tensor's `.shape` / `.size()` (a torch.Size never requires grad)."""
        if isinstance(value, cst.Attribute) and value.attr.value == "shape":
            return True
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                value.func.attr.value == "size" and not value.args:
            return True
        fact = self.fact(value, site, depth + 1)
        return isinstance(fact, SequenceFact) and fact.elements is not None and all(
            isinstance(e, OpaqueFact) and e.kind in ("number", "bool") for e in fact.elements)

    def _sequence_function_fact(self, call: cst.Call, site: Site, depth: int) -> Fact:
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return UNKNOWN
        sequence = self.fact(call.args[0].value, site, depth + 1)
        if not isinstance(sequence, SequenceFact) or not sequence.elements or \
                not all(isinstance(e, TensorFact) for e in sequence.elements):
            return UNKNOWN
        tensors = [e for e in sequence.elements if isinstance(e, TensorFact)]
        fact = self._transferred(transfer.Transfer(transfer.PROMOTE), tensors, [], call, site)
        return replace(fact, dtype_origin=None)

    def _to_dtype(self, receiver: TensorFact, call: cst.Call, site: Site,
                  depth: int) -> tuple[str | None, bool]:
        keyword = _keyword(call, "dtype")
        if keyword is not None:
            fact = self.fact(keyword, site, depth + 1)
            return (fact.dtype if isinstance(fact, DtypeFact) else None), True
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in positional):
            return None, True
        for arg in positional[:2]:
            fact = self.fact(arg.value, site, depth + 1)
            if isinstance(fact, DtypeFact):
                return fact.dtype, True
            if isinstance(fact, TensorFact):
                return fact.dtype, True
            if isinstance(fact, OpaqueFact) and fact.kind in ("string", "device"):
                continue
            return None, True
        return receiver.dtype, False


_FACTORY_KINDS: dict[str, str] = {
    **{name: "default" for name in torch_api.DEFAULT_FLOAT_FACTORIES},
    **{name: "inferred" for name in torch_api.INFERRED_FACTORIES},
    **{name: "like" for name in torch_api.LIKE_FACTORIES},
    **{name: "integer" for name in torch_api.INTEGER_FACTORIES},
    **{name: "explicit" for name in torch_api.EXPLICIT_DTYPE_FACTORIES},
}
_KIND_ORDER = ["bool", "int", "float", "complex"]


TENSOR_ONLY_CASTS = frozenset({"double", "float", "half", "bfloat16", "cdouble", "cfloat"})


def literal_number(node: cst.BaseExpression) -> object:
    try:
        if isinstance(node, cst.Integer):
            return int(node.value.replace("_", ""), 0)
        if isinstance(node, cst.Float):
            return float(node.value.replace("_", ""))
    except ValueError:
        return None
    return None


def _cast_grad(source: bool | None, disabled: bool | None) -> bool | None:
    """requires_grad after a cast (`.double()`, `.to(...)`): a cast that changes nothing
    returns the tensor itself, so under no_grad the result is only known when False."""
    if source is False or disabled is False:
        return source
    return None


_GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                       "torch.autograd.grad_mode.no_grad", "torch.autograd.inference_mode"})
_GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad"})
_GRAD_SET = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})


def grad_mode_disabled(site: Site, evaluator: "Evaluator | None" = None) -> bool | None:
    """Is grad mode off where ``site`` is? True inside ``with torch.no_grad():`` (or
    ``inference_mode()``, ``set_grad_enabled(False)``) and in functions decorated with
    them; False where it is certainly on; None when it cannot be told."""
    def verdict(expr: cst.BaseExpression, scope: Scope) -> bool | None | str:
        call = expr if isinstance(expr, cst.Call) else None
        func = call.func if call is not None else expr
        name = evaluator.qualified(func, Site(scope, ())) if evaluator is not None else None
        if name is None:
            text = _dotted(func)
            last = text.split(".")[-1] if text else ""
            name = {"no_grad": "torch.no_grad", "inference_mode": "torch.inference_mode",
                    "enable_grad": "torch.enable_grad",
                    "set_grad_enabled": "torch.set_grad_enabled"}.get(last)
        if name in _GRAD_OFF:
            if call is not None and call.args:
                flag = literal_bool(call.args[0].value)
                return None if flag is None else flag
            return True
        if name in _GRAD_ON:
            return False
        if name in _GRAD_SET:
            flag = literal_bool(call.args[0].value) if call is not None and call.args else None
            return None if flag is None else not flag
        return "unrelated"

    state: bool | None = False
    # decorators of the enclosing functions, outermost first
    scopes = [scope for scope in site.scope.chain() if isinstance(scope.node, cst.FunctionDef)]
    for scope in reversed(scopes):
        for decorator in scope.node.decorators:  # type: ignore[union-attr]
            found = verdict(decorator.decorator, scope.parent or scope)
            if found != "unrelated":
                state = found  # type: ignore[assignment]
    for frame in site.frames:
        owner = frame.owner
        if isinstance(owner, cst.With):
            for item in owner.items:
                found = verdict(item.item, site.scope)
                if found != "unrelated":
                    state = found  # type: ignore[assignment]
    return state


def _dotted(node: cst.BaseExpression) -> str | None:
    from .names import dotted_name

    return dotted_name(node)

def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _argument(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    keyword = _keyword(call, name)
    if keyword is not None:
        return keyword
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional[: position + 1]):
        return None
    if position < len(positional):
        return positional[position].value
    return None


def literal_bool(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def bool_argument(call: cst.Call, name: str, default: bool, position: int | None = None
                   ) -> bool | None:
    node = _keyword(call, name)
    if node is None and position is None and name == "requires_grad" and call.args:
        # `x.requires_grad_(False)`: positional form of the method
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            first = call.args[0]
            node = first.value if first.keyword is None else None
    if node is None and position is not None:
        node = _argument(call, position, name)
    if node is None:
        return default
    return literal_bool(node)


def _literal_kind(node: cst.BaseExpression | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, cst.Integer):
        return "int"
    if isinstance(node, cst.Float):
        return "float"
    if isinstance(node, cst.Imaginary):
        return "complex"
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return "bool"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _literal_kind(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        if not node.elements:
            return "float"
        kinds = [_literal_kind(e.value) for e in node.elements]
        if None in kinds:
            return None
        return max(kinds, key=_KIND_ORDER.index)  # type: ignore[arg-type]
    return None
