"""What GL045-GL047 say about torch.compile is what torch 2.13 does: each rule's examples (the
class's and its fixtures', `all_examples`) are run, eager and compiled (aot_eager), and
compared with the behaviour its docs state. A new fixture says here how it is called.
(Tests may import torch; gradlint itself never does.)"""

from __future__ import annotations

import itertools
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")

from gradlint.rules import RULES_BY_CODE  # noqa: E402
from gradlint.rules.examples import all_examples  # noqa: E402

_NAMESPACES = itertools.count()


def _module(code: str) -> dict:
    namespace = {}
    source = textwrap.dedent(code).replace("mylib::", "gltruth%d::" % next(_NAMESPACES))
    ns = source.split("gltruth", 1)[1].split("::", 1)[0] if "gltruth" in source else None
    if ns is not None:
        source = source.replace("torch.ops.mylib.", "torch.ops.gltruth%s." % ns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "<example>", "exec"), namespace)
    return namespace


def _grad(fn, x, compiled=False, fullgraph=True):
    torch._dynamo.reset()
    if compiled:
        fn = torch.compile(fn, backend="aot_eager", fullgraph=fullgraph)
    x = x.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(fn(x).sum(), x)
    torch._dynamo.reset()
    return g


X = torch.tensor([0.5, -1.25, 2.0], dtype=torch.float64)


# GL045 -----------------------------------------------------------------------------------

def test_gl045_same_tensor_twice_breaks_the_graph_and_a_copy_compiles():
    rule = RULES_BY_CODE["GL045"]
    bad = _module(rule.INVALID[0].code)["square"]
    with pytest.raises(torch._dynamo.exc.Unsupported, match="duplicate tensor input"):
        _grad(bad, X, compiled=True)
    eager = _grad(bad, X)
    assert torch.allclose(_grad(bad, X, compiled=True, fullgraph=False), eager)  # graph break: eager
    fixed = _module(rule.INVALID[0].fixed)["square"]
    assert torch.allclose(_grad(fixed, X, compiled=True), eager)  # fullgraph=True, same gradient
    valid = _module(rule.VALID[0].code)["square"]
    assert torch.allclose(_grad(valid, X, compiled=True), eager)


# How each example of GL045 and GL046 is called: (kind, index) -> the expression giving the
# callable. Every example that imports torch has an entry.
CALLS = {
    "GL045": {("VALID", 0): "square", ("VALID", 1): "f", ("VALID", 2): "lambda x: square(x)", ("VALID", 4): "f",
              ("VALID", 5): "f", ("VALID", 6): "gram", ("VALID", 7): None, ("VALID", 8): "square_sum",
              ("INVALID", 0): "square", ("INVALID", 1): "Block()",
              ("INVALID", 2): "square", ("INVALID", 3): "f"},
    "GL046": {("VALID", 0): "f", ("VALID", 1): "f", ("VALID", 2): "f", ("VALID", 3): "f",
              ("INVALID", 0): "f", ("INVALID", 1): "f", ("INVALID", 2): "f"},
}
# calls of a function under torch.compiler.disable: compiled code calling it breaks the graph
# there (fullgraph=True raises), and it runs eagerly. (torch.compile applied to the disabled
# function itself compiles the function it wraps: measured, torch 2.13.)
DISABLED = {("GL045", "VALID", 2)}
# Functions whose code breaks the graph anyway (ctypes with data_ptr(), .item()): the duplicate
# changes nothing; fullgraph=True fails with a copy too, and without it the call runs eagerly
BREAKS_ANYWAY = {("GL045", "VALID", 6), ("GL045", "VALID", 8)}
# None in CALLS: the example cannot run here (it imports a module of its project's own)


def _examples(code):
    for example in all_examples(RULES_BY_CODE[code]):
        if "import torch" in example.code and CALLS[code].get((example.kind, example.index), "") is not None:
            yield pytest.param(example, id=example.id)


def _entry(code, example, source=None):
    fn = eval(CALLS[code][(example.kind, example.index)], _module(source or example.code))
    return getattr(fn, "_torchdynamo_orig_callable", fn)  # under @torch.compile: compiled here


@pytest.mark.parametrize("example", list(_examples("GL045")))
def test_gl045_examples_compile_as_the_rule_says(example):
    fn = _entry("GL045", example)
    eager = _grad(fn, X)
    if (example.rule.code, example.kind, example.index) in DISABLED:
        with pytest.raises(torch._dynamo.exc.Unsupported, match="disable"):
            _grad(fn, X, compiled=True)
        assert torch.allclose(_grad(fn, X, compiled=True, fullgraph=False), eager)
        return
    if (example.rule.code, example.kind, example.index) in BREAKS_ANYWAY:
        with_copy = example.code.replace(".apply(x, x)", ".apply(x, x.clone())")
        assert with_copy != example.code
        copied = _entry("GL045", example, with_copy)
        for f in (fn, copied):  # the copy the rule would suggest compiles no better (with .item(),
            # torch 2.13 raises InternalTorchDynamoError: PendingUnbackedSymbolNotFound)
            with pytest.raises((torch._dynamo.exc.Unsupported, torch._dynamo.exc.InternalTorchDynamoError)):
                _grad(f, X, compiled=True)
            assert torch.allclose(_grad(f, X, compiled=True, fullgraph=False), eager)
        return
    if example.kind == "VALID":  # compiles with fullgraph=True, same gradient
        assert torch.allclose(_grad(fn, X, compiled=True), eager)
        return
    with pytest.raises(torch._dynamo.exc.Unsupported, match="duplicate tensor input"):
        _grad(fn, X, compiled=True)
    assert torch.allclose(_grad(fn, X, compiled=True, fullgraph=False), eager)  # graph break: eager
    fixed = _entry("GL045", example, example.case.fixed)
    assert torch.allclose(_grad(fixed, X, compiled=True), eager)  # the copy compiles, same gradient


@pytest.mark.parametrize("example", list(_examples("GL046")))
def test_gl046_examples_compile_right_in_2_13(example):
    fn = _entry("GL046", example)
    eager = _grad(fn, X)
    assert torch.allclose(_grad(fn, X, compiled=True), eager)  # fixed by pytorch#184267 before 2.13
    if example.kind == "INVALID":
        fixed = _entry("GL046", example, example.case.fixed)
        assert torch.allclose(_grad(fixed, X), eager)
        assert torch.allclose(_grad(fixed, X, compiled=True), eager)


def test_every_example_says_how_it_is_called():
    for code, calls in CALLS.items():
        ran = {(e.kind, e.index) for e in all_examples(RULES_BY_CODE[code]) if "import torch" in e.code}
        assert ran == set(calls), code


# GL046 -----------------------------------------------------------------------------------

def test_gl046_discarded_mark_dirty_result_compiles_right_in_2_13():
    rule = RULES_BY_CODE["GL046"]
    bad = _module(rule.INVALID[0].code)["f"]
    fixed = _module(rule.INVALID[0].fixed)["f"]
    eager = _grad(bad, X)
    assert torch.allclose(eager, _grad(fixed, X))
    assert torch.allclose(_grad(bad, X, compiled=True), eager)  # fixed by pytorch#184267 before 2.13
    assert torch.allclose(_grad(fixed, X, compiled=True), eager)


def test_gl046_a_forward_returning_the_in_place_call_breaks_the_graph():
    ns = _module("""
        import torch
        class Scale_(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x.mul_(3)
            @staticmethod
            def backward(ctx, g):
                return g * 3
        def kept(x):
            y = x * 2
            y = Scale_.apply(y)
            return y * y
        """)
    with pytest.raises(torch._dynamo.exc.Unsupported, match="mark_dirty input not returned"):
        _grad(ns["kept"], X, compiled=True)
    assert torch.allclose(_grad(ns["kept"], X, compiled=True, fullgraph=False), _grad(ns["kept"], X))


# GL047 -----------------------------------------------------------------------------------

_OP = """
import torch
@torch.library.custom_op("mylib::sin", mutates_args=())
def _sin(x: torch.Tensor) -> torch.Tensor:
    return x.sin()
@_sin.register_fake
def _(x):
    return torch.empty_like(x)
"""


def _gl047_invalid():
    for example in all_examples(RULES_BY_CODE["GL047"], "INVALID"):
        yield pytest.param(example, id=example.id)


@pytest.mark.parametrize("example", list(_gl047_invalid()))
def test_gl047_function_around_a_custom_op(example):
    """Eager autograd and torch.compile with autograd agree; a setup_context Function makes
    torch.compile(torch.func.grad(...)) raise TorchRuntimeError (a ctx one fails eager
    torch.func.grad already: GL039's business)."""
    code = textwrap.dedent(example.code)
    ns = _module(code if "custom_op(" in code else _OP + code)
    (cls,) = [v for k, v in ns.items() if isinstance(v, type) and issubclass(v, torch.autograd.Function)
              and v is not torch.autograd.Function and v.__module__ != "torch.autograd.function"]
    f = cls.apply
    eager = _grad(f, X)
    if "register_fake" in code or "custom_op(" not in code:  # the op has a fake (_OP's, or its own)
        assert torch.allclose(_grad(f, X, compiled=True), eager)
    if "setup_context" not in code:
        return
    assert torch.allclose(torch.func.grad(lambda t: f(t).sum())(X), eager)
    for fullgraph in (True, False):
        torch._dynamo.reset()
        compiled = torch.compile(torch.func.grad(lambda t: f(t).sum()), backend="aot_eager", fullgraph=fullgraph)
        with pytest.raises(torch._dynamo.exc.TorchRuntimeError, match="setup_context"):
            compiled(X)
    torch._dynamo.reset()


def test_gl047_the_op_with_register_autograd_compiles_with_fullgraph():
    rule = RULES_BY_CODE["GL047"]
    ns = _module(rule.VALID[0].code)
    torch._dynamo.reset()
    x = X.clone().requires_grad_()
    (g,) = torch.autograd.grad(ns["f"](x), x)  # f is @torch.compile(fullgraph=True)
    torch._dynamo.reset()
    assert torch.allclose(g, X.cos())


def test_gl047_the_registered_op_loses_eager_torch_func_and_compiled_func_grad_fails_both_ways():
    """The table in GL047's docs: the op with register_autograd, called directly, fails eager
    torch.func.grad (the wrapper passes it) and torch.compile(torch.func.grad(...)) (as the
    wrapper does): the registration is advice, hence a hint."""
    ns = _module(_OP + textwrap.dedent("""
        def _setup(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
        def _backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()
        _sin.register_autograd(_backward, setup_context=_setup)
        def f(x):
            return _sin(x)
        """))
    f = ns["f"]
    assert torch.allclose(_grad(f, X), X.cos())  # eager autograd
    assert torch.allclose(_grad(f, X, compiled=True), X.cos())  # compiled autograd, fullgraph
    with pytest.raises(RuntimeError, match="setup_context"):
        torch.func.grad(lambda t: f(t).sum())(X)
    torch._dynamo.reset()
    compiled = torch.compile(torch.func.grad(lambda t: f(t).sum()), backend="aot_eager")
    with pytest.raises(torch._dynamo.exc.TorchRuntimeError):
        compiled(X)
    torch._dynamo.reset()


def test_gl047_leaves_a_mutating_op_alone_register_autograd_refuses_it():
    """GL047/valid_06: the advice cannot be followed for an op that writes into an input."""
    from pathlib import Path

    code = (Path(__file__).parent / "fixtures/rules/GL047/valid_06.py").read_text()
    ns = _module(code)
    square = ns["Square"].apply
    assert torch.allclose(_grad(square, X), 2 * X)
    op = ns["square_into"]
    with pytest.raises(RuntimeError, match="non-functional operator"):
        op.register_autograd(lambda ctx, g: g, setup_context=lambda ctx, inputs, output: None)
