from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis import torch_api
from ...analysis.block import BlockAnalysis
from ...analysis import cases as test_cases
from ...analysis.facts import DtypeFact, OpaqueFact, Origin, SequenceFact, TensorFact
from ...analysis.gradcheck_calls import GradcheckCall, InputElement, input_elements
from ...findings import Severity
from .. import edits
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Replacement, Report, Rule, Valid
from .input_range import input_node

# Casting a low-precision dtype up: the same kind of number with double precision.
_UPCAST = {"float32": "float64", "float16": "float64", "bfloat16": "float64",
           "complex64": "complex128", "complex32": "complex128"}
_CAST_METHOD = {"float64": "double", "complex128": "cdouble"}
# dtype spellings that keep the user's style: torch.float -> torch.double
_SPELLING = {"float": "double", "half": "double", "cfloat": "cdouble", "chalf": "cdouble"}


class LowPrecisionGradcheckInput(Rule):
    """## What it does
    Checks the inputs of `torch.autograd.gradcheck` and `gradgradcheck` calls for
    tensors that require grad and are float32, float16, bfloat16 or complex64: made by a
    factory with such a `dtype=`, by a factory that uses torch's default dtype (float32,
    unless the module calls `torch.set_default_dtype(torch.float64)`), or cast with
    `.float()`, `.half()`, `.to(torch.float32)` and the like. In a module whose functions
    set the default dtype, a factory's dtype is what a `torch.set_default_dtype(...)`
    earlier in the same function set, when only torch's own functions and plain builtins
    run between; otherwise (another test may have left float64) it is unknown.

    gradlint follows a tensor through arithmetic (`0.5 + 2 * torch.rand(n) ** 2`: a Python
    number never promotes a tensor), method chains (`.reshape(...).abs().t()`), torch
    functions, `.detach()` and `torch.no_grad()`, helpers of the same module that return
    it (also under `functools.lru_cache`, `@torch.no_grad()` or the module's own
    pass-through `functools.wraps` decorator; any other decorator may return anything), pytest fixtures (in the module, the test class, or a `conftest.py`
    above it; also ones that return a factory function), attributes a `unittest.TestCase`
    sets once in `setUp` (when nothing else in the class can change them), and fields of
    a same-module dataclass or NamedTuple built in the same function (when the object is
    not handed to other code).
    `functools.partial(gradcheck, ...)`, aliases and small wrappers
    (`def check(f, x): return gradcheck(f, x, eps=1e-6)`) are gradcheck too. A test
    parametrized with `@pytest.mark.parametrize("dtype", [torch.float32, ...])` is checked
    once per case, and a float32 case is reported on its entry.

    ## Why is this bad?
    gradcheck compares your backward with finite differences taken with `eps=1e-6`. In
    float32 that step is close to the precision of the numbers themselves, so the
    numerical Jacobian is mostly rounding noise: the check fails even when your gradient
    is right (torch 2.13 failed `exp().sum()` on 50 of 50 random float32 inputs), or,
    worse, passes by luck. torch only emits a `UserWarning` ("Input #0 requires gradient
    and is not a double precision floating point or complex") that is easy to miss, then
    raises `GradcheckError` with a Jacobian mismatch that never mentions the dtype.

    Inputs that do not require grad are constants to gradcheck and may have any dtype.
    gradlint stays silent when the call sets `eps=` to `1e-4` or more (or to a value it
    cannot read, or passes `**options` that may set it): that is how float32 code is
    checked on purpose. A `dtype=` or `requires_grad=` that may come in through
    `**kwargs` is unknown, not absent (a literal `**{"dtype": torch.float64}` is read).

    ## Example
    ```python
    x = torch.randn(3, requires_grad=True)
    torch.autograd.gradcheck(torch.sin, (x,))
    ```

    Use instead:
    ```python
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(torch.sin, (x,))
    ```

    ## Fix safety
    The fix creates the tensor as float64 (`dtype=torch.float64` on the factory) or casts
    it with `.double()` instead of `.float()`. It is safe when the tensor is made inside
    the gradcheck call, or is a local variable used only by gradcheck calls; otherwise it
    is unsafe, because other code using the same tensor would then see float64 too, and
    its title says why: the name is read elsewhere in the function, or it is a module-level
    name. In a notebook every cell's names are module-level (other cells, and the kernel's
    state, may read them), so a tensor made in one cell and checked in another gets an
    unsafe fix there, while the same lines inside a test function get a safe one. No fix
    adds `dtype=` to a call that also passes `**mapping`: the mapping may hold `dtype`
    too, and the fixed call would raise `TypeError: got multiple values for keyword
    argument 'dtype'`.

    ## References
    - [torch.autograd.gradcheck](https://docs.pytorch.org/docs/stable/generated/torch.autograd.gradcheck.gradcheck.html)
    - [pytorch/pytorch#5351](https://github.com/pytorch/pytorch/issues/5351)
    """

    code = "GL001"
    name = "low-precision-gradcheck-input"
    severity = Severity.ERROR
    summary = "a gradcheck input that requires grad is not float64/complex128"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            x = torch.randn(3, dtype=torch.float64, requires_grad=True)
            torch.autograd.gradcheck(torch.sin, (x,))
            """),
        Valid("""
            import torch
            torch.set_default_dtype(torch.float64)
            x = torch.randn(3, requires_grad=True)
            torch.autograd.gradcheck(torch.sin, (x,))
            """, why="the module makes float64 the default dtype"),
    ]
    INVALID = [
        Invalid(
            """
            import unittest
            import torch

            class Base(unittest.TestCase):
                pass

            class TestSin(Base):
                def test_sin(self):
                    x = torch.randn(3, requires_grad=True)
                    self.assertTrue(torch.autograd.gradcheck(torch.sin, (x,)))
            """,
            message="gradcheck input `x` is float32 (torch's default dtype); finite differences need float64",
            fixed="""
            import unittest
            import torch

            class Base(unittest.TestCase):
                pass

            class TestSin(Base):
                def test_sin(self):
                    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                    self.assertTrue(torch.autograd.gradcheck(torch.sin, (x,)))
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch

            def test_sin():
                x = torch.randn(3, requires_grad=True)
                assert torch.autograd.gradcheck(torch.sin, (x,))
            """,
            message="gradcheck input `x` is float32 (torch's default dtype); finite differences need float64",
            range=(5, 48, 5, 52),
            fixed="""
            import torch

            def test_sin():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                assert torch.autograd.gradcheck(torch.sin, (x,))
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        evaluator = block.evaluator
        for call in block.gradcheck_calls:
            reported: set[int] = set()
            if not _step_chosen_for_low_precision(call, evaluator):
                for element in input_elements(call, evaluator) or ():
                    if self._low_precision(block, call, element.fact):
                        reported.add(element.index)
                        yield self._report(block, call, element, element.fact)  # type: ignore[arg-type]
            # every @pytest.mark.parametrize case, and every iteration of a loop over a
            # literal tuple, reported on its entry
            cases = test_cases.cases(call.site, evaluator) + test_cases.loop_cases(call.site, evaluator)
            for case in cases:
                with evaluator.bound(case.function, case.values, case.loop):
                    if _step_chosen_for_low_precision(call, evaluator):
                        continue
                    for element in input_elements(call, evaluator) or ():
                        if element.index not in reported and \
                                self._low_precision(block, call, element.fact):
                            reported.add(element.index)
                            yield self._case_report(block, call, element, case)

    def _low_precision(self, block: BlockAnalysis, call: GradcheckCall, fact) -> bool:
        if not isinstance(fact, TensorFact) or fact.requires_grad is not True:
            return False
        if fact.dtype not in torch_api.LOW_PRECISION:
            return False
        # a base TestCase elsewhere may set the default dtype in setUp
        return not (fact.default_dtype and _inherits_unknown_base(block, call.site.scope))

    def _case_report(self, block: BlockAnalysis, call: GradcheckCall, element: InputElement,
                     case: test_cases.Case) -> Report:
        fact = element.fact
        assert isinstance(fact, TensorFact)
        chosen = next((name for name, value in case.values.items()
                       if isinstance(value, DtypeFact) and value.dtype == fact.dtype),
                      next(iter(case.values)))
        entry = case.entries[chosen]
        name = self._name(block, call, element)
        message = (f"{call.variant} input {name} is {fact.dtype} in the {case.origin} case "
                   f"`{chosen}={block.code(entry)}`; finite differences need {_UPCAST[fact.dtype]}")  # type: ignore[index]
        if not edits.contains(case.site.top_statement, entry):
            # the cases are a list defined elsewhere (`DTYPES = [...]`): report on the input
            return Report(input_node(call, element), message, call.site)
        return Report(entry, message, case.site)

    def _name(self, block: BlockAnalysis, call: GradcheckCall, element: InputElement) -> str:
        if not element.inline and call.inputs is not None and element.expr is call.inputs.value \
                and not isinstance(element.fact, SequenceFact):
            return f"#{element.index} of `{block.code(element.expr)}`"
        return edits.label(element.expr, block.code(element.expr),
                            None if isinstance(element.expr, cst.Name) else element.index)

    def _report(self, block: BlockAnalysis, call: GradcheckCall, element: InputElement,
                fact: TensorFact) -> Report:
        name = self._name(block, call, element)
        default = " (torch's default dtype)" if fact.default_dtype else ""
        message = (f"{call.variant} input {name} is {fact.dtype}{default}; "
                   f"finite differences need {_UPCAST[fact.dtype]}")
        node = input_node(call, element)
        fix = None
        if fact.dtype_origin is not None:
            fix = _fix(block, call, element, fact, fact.dtype_origin,
                       edits.short_label(element.expr, element.index))
        return Report(node, message, call.site, fix)


_KNOWN_BASES = frozenset({"unittest.TestCase", "unittest.case.TestCase",
                          "unittest.IsolatedAsyncioTestCase", "builtins.object"})


def _inherits_unknown_base(block: BlockAnalysis, scope, seen: frozenset = frozenset()) -> bool:
    """Is the code inside a class deriving from a class gradlint cannot see?"""
    from ...analysis.names import BindingKind

    while scope is not None:
        node = scope.node
        if scope.kind == "class" and isinstance(node, cst.ClassDef) and id(node) not in seen:
            for arg in node.bases:
                if arg.keyword is not None or arg.star:
                    continue
                if isinstance(arg.value, cst.Name) and arg.value.value == "object":
                    continue
                if block.context.qualified(arg.value, scope.parent) in _KNOWN_BASES:
                    continue
                if isinstance(arg.value, cst.Name):
                    owner = scope.parent.binding_scope(arg.value.value) if scope.parent else None
                    bindings = owner.table.bindings.get(arg.value.value, []) if owner else []
                    if len(bindings) == 1 and bindings[0].kind is BindingKind.CLASS:
                        from ...analysis.scopes import class_scope

                        base = bindings[0].node
                        assert isinstance(base, cst.ClassDef)
                        base_scope = class_scope(base, owner, None) if owner.kind != "module" else \
                            _module_class_scope(block, base)
                        if not _inherits_unknown_base(block, base_scope, seen | {id(node)}):
                            continue
                return True
        scope = scope.parent
    return False


def _module_class_scope(block: BlockAnalysis, node: cst.ClassDef):
    from ...analysis.names import ScopeTable, body_statements
    from ...analysis.scopes import Scope

    statements = body_statements(node.body)
    return Scope("class", node, ScopeTable.of_statements(statements), block.context.scope, statements)


def _step_chosen_for_low_precision(call: GradcheckCall, evaluator) -> bool:
    """`eps=` of 1e-4 or more (or a value that cannot be read): float32 on purpose."""
    eps = call.keyword("eps")
    if eps is None:
        return call.may_pass("eps")  # `**options` may choose it
    values = _possible_numbers(eps.value, call.site, evaluator)
    if values is None:
        return True
    return max(values) >= 1e-4


def _possible_numbers(expr: cst.BaseExpression, site, evaluator) -> list[float] | None:
    """The values a number may have: a literal, a name bound to one, or the variable of an
    enclosing `for eps in (1e-6, 1e-7):` loop."""
    fact = evaluator.fact(expr, site)
    if isinstance(fact, OpaqueFact) and isinstance(fact.value, (int, float)):
        return [float(fact.value)]
    if not isinstance(expr, cst.Name):
        return None
    for frame in reversed(site.frames):
        owner = frame.owner
        if isinstance(owner, cst.For) and isinstance(owner.target, cst.Name) and \
                owner.target.value == expr.value and isinstance(owner.iter, (cst.Tuple, cst.List)):
            values = []
            for element in owner.iter.elements:
                item = evaluator.fact(element.value, site)
                if not (isinstance(item, OpaqueFact) and isinstance(item.value, (int, float))):
                    return None
                values.append(float(item.value))
            return values or None
    return None


def _fix(block: BlockAnalysis, call: GradcheckCall, element: InputElement, fact: TensorFact,
         origin: Origin, name: str) -> FixProposal | None:
    target = _UPCAST.get(fact.dtype or "")
    if target is None:
        return None
    node = origin.node
    new: cst.BaseExpression | None = None
    if origin.kind == "factory" and isinstance(node, cst.Call):
        new_dtype = _dtype_expression(block, node, target, origin)
        if new_dtype is not None:
            new = edits.with_keyword(node, "dtype", new_dtype, before=("requires_grad",))
        title = f"Create {name} as {target}"
    elif origin.kind == "cast" and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        new = node.with_changes(func=node.func.with_changes(attr=cst.Name(_CAST_METHOD[target])))
        title = f"Cast {name} to {target} with .{_CAST_METHOD[target]}()"
    elif origin.kind == "to" and isinstance(node, cst.Call):
        new = _retarget_to(node, target)
        title = f"Cast {name} to {target}"
    else:
        return None
    if new is None:
        return None
    inline = element.inline and edits.contains(element.expr, node)
    reason = None
    if not inline:  # the fix changes a tensor made elsewhere: say who else would see float64
        inputs = edits.gradcheck_inputs(block, call.site.scope)
        reason = edits.unsafe_because(call.site, element.expr.value, inputs) \
            if isinstance(element.expr, cst.Name) else "the tensor may be used elsewhere too"
    if reason is not None:
        title = f"{title}; {reason}"
    replacement = Replacement(node, node_code(new, block.module), origin.site)
    return FixProposal(title, edits.applicability(reason is None), (replacement,))


def _dtype_expression(block: BlockAnalysis, call: cst.Call, target: str, origin: Origin
                      ) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            value = arg.value
            if isinstance(value, cst.Attribute) and \
                    block.context.qualified(value, origin.site.scope) in torch_api.DTYPES:
                spelling = _SPELLING.get(value.attr.value, target)
                return value.with_changes(attr=cst.Name(spelling))
            return None
    module = edits.torch_module_name(origin.site)
    if module is None:
        return None
    return cst.Attribute(value=cst.Name(module), attr=cst.Name(target))


def _retarget_to(call: cst.Call, target: str) -> cst.Call | None:
    for index, arg in enumerate(call.args):
        if isinstance(arg.value, cst.Attribute) and (
                arg.keyword is None or arg.keyword.value == "dtype"):
            attr = arg.value.attr.value
            if attr in ("float32", "float", "float16", "half", "bfloat16", "complex64", "cfloat"):
                spelling = _SPELLING.get(attr, target)
                args = list(call.args)
                args[index] = arg.with_changes(value=arg.value.with_changes(attr=cst.Name(spelling)))
                return call.with_changes(args=args)
    return None
