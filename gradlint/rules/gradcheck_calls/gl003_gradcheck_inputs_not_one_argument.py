from __future__ import annotations

from typing import Iterator, Sequence

import libcst as cst

from ...analysis import torch_api
from ...analysis.block import BlockAnalysis
from ...analysis.facts import OpaqueFact, SequenceFact, TensorFact
from ...analysis.gradcheck_calls import GradcheckCall
from ...analysis.names import BindingKind
from ...analysis.scopes import statement_site
from ...findings import Applicability, Severity
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Replacement, Report, Rule, Valid

_LEGACY = {"gradcheck": torch_api.LEGACY_GRADCHECK_SETTINGS,
           "gradgradcheck": torch_api.LEGACY_GRADGRADCHECK_SETTINGS}


class GradcheckInputsNotOneArgument(Rule):
    """## What it does
    Checks that a `gradcheck`/`gradgradcheck` call gets its inputs as one argument and
    its settings as keywords:

    - `gradcheck(f, x, y)`: inputs spread over several arguments, also as
      `gradcheck(f, *inputs)` with `inputs` a tuple or list of two or more (the fix is
      `tuple(inputs)`);
    - `gradcheck(f, (x,), 1e-6)`: a setting passed positionally;
    - `gradgradcheck(f, x, y)` where `f` needs two inputs: `y` silently becomes
      `grad_outputs`, the third positional parameter of gradgradcheck;
    - a generator, dict, set, or a tuple nested in the inputs tuple, which gradcheck
      passes to your function as one opaque, non-tensor argument;
    - a NamedTuple as gradcheck's inputs (a same-module `class P(NamedTuple)` or
      `namedtuple(...)`): gradcheck rebuilds its inputs with `type(inputs)(...)`, which
      raises `TypeError: P.__new__() missing 1 required positional argument: 'b'` (torch
      2.13; not with `masked=True`, nor in gradgradcheck). A plain `class Inputs(tuple)`
      is a tuple like any other.

    A single tensor (`gradcheck(f, x)`) and a list (`gradcheck(f, [x, y])`) are fine:
    torch accepts both.

    ## Why is this bad?
    The settings of gradcheck are keyword-only (since PyTorch 1.10), so extra positional
    arguments raise `TypeError: gradcheck() takes 2 positional arguments but 3 were given`
    before anything is checked. gradgradcheck has a third positional parameter,
    `grad_outputs`, so the same mistake there raises nothing: the tensor is used as the
    gradient of the outputs, and the function is checked with one input too few. A
    generator, dict or nested tuple hides the tensors from gradcheck, which then reports
    the misleading `ValueError: gradcheck expects at least one input tensor to require
    gradient`.

    ## Example
    ```python
    torch.autograd.gradcheck(torch.mul, x, y)
    torch.autograd.gradcheck(torch.sin, (x,), 1e-6, 1e-4)
    ```

    Use instead:
    ```python
    torch.autograd.gradcheck(torch.mul, (x, y))
    torch.autograd.gradcheck(torch.sin, (x,), eps=1e-6, atol=1e-4)
    ```

    ## Fix safety
    Wrapping separate inputs into one tuple, and naming positional settings with the
    keywords of the old signature (`eps`, `atol`, `rtol`, `raise_exception`), are safe:
    the original call cannot have worked. Making a generator a `tuple(...)` is safe for
    the same reason. Turning a set into a tuple, or unwrapping a nested tuple, is unsafe:
    the order of a set is not defined, and a function written for one tuple argument
    needs changing too. `tuple(...)` around a NamedTuple is safe: the call cannot have
    worked.

    ## References
    - [pytorch/pytorch#65165](https://github.com/pytorch/pytorch/issues/65165)
    """

    code = "GL003"
    name = "gradcheck-inputs-not-one-argument"
    severity = Severity.ERROR
    summary = "gradcheck inputs spread over arguments, settings passed positionally, or inputs in an opaque container"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            torch.autograd.gradcheck(torch.mul, (x, y), eps=1e-6, atol=1e-4)
            """),
        Valid("""
            import torch
            torch.autograd.gradcheck(torch.sin, x)
            """, why="a bare tensor is accepted"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch.autograd import gradcheck

            def test_mul():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                y = torch.randn(3, dtype=torch.float64, requires_grad=True)
                assert gradcheck(torch.mul, x, y)
            """,
            message="gradcheck takes all inputs as one tuple; `y` is a separate argument (TypeError)",
            range=(7, 36, 7, 37),
            fixed="""
            import torch
            from torch.autograd import gradcheck

            def test_mul():
                x = torch.randn(3, dtype=torch.float64, requires_grad=True)
                y = torch.randn(3, dtype=torch.float64, requires_grad=True)
                assert gradcheck(torch.mul, (x, y))
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch
            torch.autograd.gradcheck(torch.sin, (x,), 1e-6, 1e-4)
            """,
            message="gradcheck settings are keyword-only; `1e-6`, `1e-4` are passed positionally (TypeError)",
            range=(2, 43, 2, 53),
            fixed="""
            import torch
            torch.autograd.gradcheck(torch.sin, (x,), eps=1e-6, atol=1e-4)
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            star = call.star_inputs
            if star is not None:
                report = self._spread(block, call, star)
                if report is not None:
                    yield report
                continue
            if call.has_star_args or call.inputs is None:
                continue
            report = (self._positional(block, call) or self._grad_outputs_trap(block, call)
                      or self._container(block, call))
            if report is not None:
                yield report

    # gradcheck(f, x, y) / gradcheck(f, (x,), 1e-6) ----------------------------------
    def _positional(self, block: BlockAnalysis, call: GradcheckCall) -> Report | None:
        extra = call.extra_positional
        if not extra:
            return None
        assert call.inputs is not None
        settings = [a for a in extra if _is_setting(a.value)]
        leading = [a for a in extra if not _is_setting(a.value)]
        shown = ", ".join(f"`{block.code(a.value)}`" for a in (leading or settings))
        if leading and extra[: len(leading)] == tuple(leading) and \
                not isinstance(call.inputs.value, (cst.Tuple, cst.List)) and call.variant == "gradcheck":
            message = (f"{call.variant} takes all inputs as one tuple; {shown} "
                       f"{'is a separate argument' if len(leading) == 1 else 'are separate arguments'} (TypeError)")
            values = [call.inputs.value, *(a.value for a in leading)]
            fix = self._rebuild(block, call, values, settings, "Pass the inputs as one tuple")
            return Report(extra[0].value, message, call.site, fix, end_node=extra[-1].value)
        if not leading:
            message = (f"{call.variant} settings are keyword-only; {shown} "
                       f"{'is' if len(settings) == 1 else 'are'} passed positionally (TypeError)")
            fix = self._rebuild(block, call, None, settings, "Pass the settings by keyword")
            return Report(extra[0].value, message, call.site, fix, end_node=extra[-1].value)
        message = f"{call.variant} takes 2 positional arguments but {2 + len(extra)} are given (TypeError)"
        if call.variant == "gradgradcheck":
            message = f"{call.variant} takes 3 positional arguments but {3 + len(extra)} are given (TypeError)"
        return Report(extra[0].value, message, call.site, None, end_node=extra[-1].value)

    def _rebuild(self, block: BlockAnalysis, call: GradcheckCall,
                 inputs: Sequence[cst.BaseExpression] | None, settings: Sequence[cst.Arg],
                 title: str) -> FixProposal | None:
        """The call with inputs wrapped into one tuple and settings made keywords."""
        names = _LEGACY[call.variant]  # the first positional setting was always `eps`
        keywords: list[cst.Arg] = []
        for index, arg in enumerate(settings):
            if index >= len(names) or call.keyword(names[index]) is not None:
                return None
            keywords.append(arg.with_changes(
                keyword=cst.Name(names[index]),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                      whitespace_after=cst.SimpleWhitespace(""))))
        removed = {id(a) for a in settings}
        args = list(call.node.args)
        if inputs is not None:
            assert call.inputs is not None
            tuple_node = cst.Tuple([cst.Element(v) for v in inputs])
            first = args.index(call.inputs)
            drop = {id(a) for a in call.extra_positional[: len(inputs) - 1]}
            args[first] = call.inputs.with_changes(value=tuple_node)
            args = [a for a in args if id(a) not in drop]
        kept = [a for a in args if id(a) not in removed]
        new_args = _respace(kept + keywords, call.node.args)
        new_call = call.node.with_changes(args=new_args)
        return FixProposal(title, Applicability.SAFE,
                           (Replacement(call.node, block.code(new_call), call.site),))

    # gradcheck(f, *inputs) -----------------------------------------------------------
    def _spread(self, block: BlockAnalysis, call: GradcheckCall, star: cst.Arg) -> Report | None:
        fact = block.evaluator.fact(star.value, call.site)
        if not isinstance(fact, SequenceFact) or fact.elements is None or len(fact.elements) < 2:
            return None  # one element spread is that element: a valid inputs argument
        shown = block.code(star.value)
        count = len(fact.elements)
        if call.variant == "gradgradcheck" and count == 2:
            effect = "the second becomes grad_outputs"
        else:
            effect = "TypeError"
        message = (f"{call.variant} takes all inputs as one tuple; `*{shown}` spreads {count} "
                   f"inputs over separate arguments ({effect}); pass `tuple({shown})`")
        args = [a.with_changes(star="", value=cst.Call(cst.Name("tuple"), [cst.Arg(star.value)]))
                if a is star else a for a in call.node.args]
        fix = FixProposal("Pass the inputs as one tuple", Applicability.SAFE,
                          (Replacement(call.node, block.code(call.node.with_changes(args=args)),
                                       call.site),))
        return Report(star, message, call.site, fix)

    # gradgradcheck(f, x, y) with a 2-input f / gradgradcheck(f, (x,), 1e-6) -----------
    def _grad_outputs_trap(self, block: BlockAnalysis, call: GradcheckCall) -> Report | None:
        if call.variant != "gradgradcheck" or call.grad_outputs is None:
            return None
        if call.grad_outputs not in call.node.args or call.grad_outputs.keyword is not None:
            return None
        value = call.grad_outputs.value
        assert call.inputs is not None
        if _is_setting(value):
            shown = f"`{block.code(value)}`"
            message = (f"gradgradcheck's third positional parameter is grad_outputs; {shown} is "
                       f"a setting, pass it by keyword")
            fix = self._rebuild(block, call, None, [call.grad_outputs, *call.extra_positional],
                                "Pass the settings by keyword")
            return Report(value, message, call.site, fix)
        inputs = call.inputs.value
        if isinstance(inputs, (cst.Tuple, cst.List)) or isinstance(
                block.evaluator.fact(inputs, call.site), SequenceFact):
            return None
        arity = _required_arity(block, call)
        if arity is None or arity < 2:
            return None
        func = call.func.value if call.func is not None else None
        if isinstance(func, cst.Lambda):
            func_name = "the lambda"
        elif isinstance(func, (cst.Name, cst.Attribute)) and len(block.code(func)) <= 40:
            func_name = f"`{block.code(func)}`"
        else:
            func_name = "the function"
        message = (f"gradgradcheck's third positional parameter is grad_outputs: "
                   f"`{block.code(value)}` is not an input of {func_name}; pass the inputs as one tuple")
        new_args = [a for a in call.node.args if a is not call.grad_outputs]
        index = new_args.index(call.inputs)
        new_args[index] = call.inputs.with_changes(value=cst.Tuple([cst.Element(inputs), cst.Element(value)]))
        new_call = call.node.with_changes(args=_respace(new_args, call.node.args))
        fix = FixProposal("Pass the inputs as one tuple", Applicability.SAFE,
                          (Replacement(call.node, block.code(new_call), call.site),))
        return Report(value, message, call.site, fix)

    # generators, dicts, sets, nested tuples --------------------------------------------
    def _container(self, block: BlockAnalysis, call: GradcheckCall) -> Report | None:
        assert call.inputs is not None
        inputs = call.inputs.value
        fact = block.evaluator.fact(inputs, call.site)
        if isinstance(fact, OpaqueFact) and fact.kind in ("generator", "dict", "set"):
            message = (f"{call.variant} inputs is a {fact.kind}, which {call.variant} passes as one "
                       f"non-tensor argument (ValueError); pass a tuple")
            fix = None
            if fact.kind == "generator" and isinstance(inputs, cst.GeneratorExp):
                code = block.code(inputs)
                code = f"tuple{code}" if code.startswith("(") else f"tuple({code})"
                fix = FixProposal("Make the inputs a tuple", Applicability.SAFE,
                                  (Replacement(inputs, code, call.site),))
            elif fact.kind == "set" and isinstance(inputs, cst.Set):
                new = cst.Tuple(elements=[cst.Element(e.value) for e in inputs.elements])
                fix = FixProposal("Make the inputs a tuple", Applicability.UNSAFE,
                                  (Replacement(inputs, block.code(new), call.site),))
            return Report(inputs, message, call.site, fix)
        if isinstance(fact, OpaqueFact) and fact.kind == "namedtuple":
            return _named_tuple_inputs(block, call, inputs)
        if not isinstance(fact, SequenceFact) or fact.elements is None or fact.node is None:
            return None
        nested = [i for i, e in enumerate(fact.elements) if isinstance(e, SequenceFact)]
        if not nested:
            return None
        others = [e for i, e in enumerate(fact.elements) if i not in nested]
        if not all(_certainly_no_grad(e) for e in others):
            return None  # a nested list next to real inputs can be a constant argument
        index = nested[0]
        element = fact.node.elements[index].value
        kind = fact.elements[index].kind  # type: ignore[union-attr]
        message = (f"{call.variant} input #{index} is itself a {kind}; {call.variant} only sees "
                   f"tensors at the top level of its inputs (ValueError); pass the {kind} itself")
        node = element if fact.node is inputs else inputs
        fix = None
        if fact.node is inputs and len(fact.elements) == 1:
            fix = FixProposal(f"Pass the {kind} itself", Applicability.UNSAFE,
                              (Replacement(inputs, block.code(element.with_changes(lpar=[], rpar=[]))
                                           if isinstance(element, (cst.Tuple, cst.List)) and element.lpar
                                           else block.code(element), call.site),))
        return Report(node, message, call.site, fix)


def _named_tuple_inputs(block: BlockAnalysis, call: GradcheckCall,
                        inputs: cst.BaseExpression) -> Report | None:
    """gradcheck rebuilds a sequence of inputs with ``type(inputs)(map(...))``, which a
    NamedTuple's constructor cannot take (analysis/tuple_classes.py); not with
    ``masked=True``, nor in gradgradcheck (it hands gradcheck a tuple of its own)."""
    if call.variant != "gradcheck" or call.may_pass("masked"):
        return None
    masked = call.keyword("masked")
    if masked is not None and not (isinstance(masked.value, cst.Name) and
                                   masked.value.value in ("False", "None")):
        return None
    message = ("gradcheck inputs is a NamedTuple, which gradcheck rebuilds with `type(inputs)(...)`: "
               "its constructor takes the fields one by one (TypeError); pass `tuple(...)` of it")
    fix = FixProposal("Pass a plain tuple", Applicability.SAFE,
                      (Replacement(inputs, f"tuple({block.code(inputs)})", call.site),))
    return Report(inputs, message, call.site, fix)


def _is_setting(expr: cst.BaseExpression) -> bool:
    """A literal that can only be a setting (eps, atol, rtol, raise_exception...)."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return True
    return isinstance(expr, cst.Name) and expr.value in ("True", "False")


def _certainly_no_grad(fact) -> bool:
    if isinstance(fact, TensorFact):
        return fact.requires_grad is False
    return isinstance(fact, OpaqueFact)


def _respace(args: list[cst.Arg], original: Sequence[cst.Arg]) -> list[cst.Arg]:
    """Commas between arguments; after the last one only if the call had a trailing comma."""
    out = []
    for index, arg in enumerate(args):
        if index < len(args) - 1:
            if not isinstance(arg.comma, cst.Comma):
                arg = arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        else:
            trailing = original[-1].comma if original else cst.MaybeSentinel.DEFAULT
            arg = arg.with_changes(comma=trailing)
        out.append(arg)
    return out


def _required_arity(block: BlockAnalysis, call: GradcheckCall) -> int | None:
    """How many positional arguments the checked function requires, when known."""
    if call.func is None:
        return None
    func = call.func.value
    if isinstance(func, cst.Lambda):
        return _params_required(func.params)
    if isinstance(func, cst.Name):
        owner = call.site.scope.binding_scope(func.value)
        if owner is None:
            return None
        bindings = owner.table.bindings.get(func.value, [])
        if len(bindings) == 1 and bindings[0].kind is BindingKind.DEF:
            node = bindings[0].node
            assert isinstance(node, cst.FunctionDef)
            if node.decorators:
                return None
            return _params_required(node.params)
        return None
    if isinstance(func, cst.Attribute) and func.attr.value == "apply":
        for function in _functions_named(block, func.value, call):
            inputs = function.forward_inputs()
            if inputs is not None:
                return inputs[1]
    return None


def _functions_named(block: BlockAnalysis, expr: cst.BaseExpression, call: GradcheckCall):
    from ...analysis.autograd_functions import find_autograd_functions

    if not isinstance(expr, cst.Name):
        return []
    owner = call.site.scope.binding_scope(expr.value)
    if owner is None:
        return []
    bindings = owner.table.bindings.get(expr.value, [])
    if len(bindings) != 1 or bindings[0].kind is not BindingKind.CLASS:
        return []
    node = bindings[0].node
    models = [m for m in block.autograd_functions if m.node is node]
    if models or owner.kind != "module":
        return models
    context = block.context
    site = statement_site(context.statements, context.scope, node)
    if site is None:
        return []
    return list(find_autograd_functions(context.statements, [site.frames[0].index], context))


def _params_required(params: cst.Parameters) -> int | None:
    if isinstance(params.star_arg, cst.Param):
        return None
    return sum(1 for p in (*params.posonly_params, *params.params) if p.default is None)
