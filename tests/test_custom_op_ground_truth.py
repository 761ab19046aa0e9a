"""What the custom-op and torch.func rules say is what torch 2.13 does.

Every INVALID example of GL030-GL044 is run with torch: it fails the way the rule's docs
and message say (when the module is imported, or when the op is called, run through
`opcheck` or differentiated), and its fixed version (for safe fixes) works. VALID examples
run cleanly. (Tests may import torch; gradlint itself never does.)
"""

from __future__ import annotations

import itertools
import re
import textwrap
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradlint.rules import RULES_BY_CODE  # noqa: E402
from gradlint.rules.examples import all_examples  # noqa: E402

_NAMESPACES = itertools.count()

# How each INVALID example fails: (code, index) -> (call to run after import or None,
# exception type, regular expression on its text). `call` None: importing raises.
X = "torch.randn(3, dtype=torch.float64, requires_grad=True)"
CONTIGUOUS = "torch.randn(3, 4)"
COMPILED = "torch.compile(lambda t: {}(t) + 1, backend='eager', fullgraph=True)(torch.ones(3))"
GUARD = r"Could not guard on data-dependent expression|data-dependent"
FAILS = {
    ("GL030", 0): (None, ValueError, r"Parameter x must have a type annotation"),
    ("GL030", 1): (None, ValueError, r"We do not support Tuple inputs in schema"),
    ("GL030", 2): (None, ValueError, r"Parameter extra has unsupported type typing.Optional\[list"),
    ("GL030", 3): (None, ValueError, r"We do not support positional-only args, varargs, or varkwargs"),
    ("GL030", 4): (None, ValueError, r"Unsupported type annotation Tensor. It is not a type. "
                                     r"\(name 'Tensor' is not defined\)"),
    ("GL030", 5): (None, ValueError, r"Parameter self must have a type annotation"),
    ("GL031", 0): (None, ValueError, r"\{'output'\} in mutates_args were not found in the custom "
                                     r"op's signature"),
    ("GL031", 1): (None, ValueError, r"mutates_args must either be a sequence of the names"),
    ("GL031", 2): (None, ValueError, r"Parameter n is in mutable_args but only Tensors"),
    ("GL031", 3): (None, ValueError, r"Attempted to create a custom op with `mutates_args="),
    ("GL032", 0): ("torch.library.opcheck(sin_into, (torch.ones(3), torch.zeros(3)))",
                   "OpCheckError", r"Argument out is not defined as mutable but was mutated"),
    ("GL032", 1): ("torch.library.opcheck(scatter_rows, (torch.ones(2, 3), torch.zeros(4, 3), [0, 2]))",
                   "OpCheckError", r"Argument out is not defined as mutable but was mutated"),
    ("GL032", 2): ("torch.library.opcheck(add_scaled, (torch.ones(3), torch.ones(3), torch.zeros(3)))",
                   "OpCheckError", r"Argument buf is not defined as mutable but was mutated"),
    ("GL032", 3): ("torch.library.opcheck(double, (torch.ones(3),))",
                   "OpCheckError", r"Argument x is not defined as mutable but was mutated"),
    ("GL032", 4): ("torch.library.opcheck(torch.ops.NS.fill.default, (torch.ones(3), torch.zeros(3)))",
                   "OpCheckError", r"Argument out is not defined as mutable but was mutated"),
    ("GL033", 0): (f"flatten({CONTIGUOUS})", RuntimeError, r"must not also be an input to this custom operator"),
    ("GL033", 1): (f"maybe_relu({CONTIGUOUS}, False)", RuntimeError, r"must not also be an input"),
    ("GL033", 2): (f"split_first({CONTIGUOUS})", RuntimeError, r"must not also be an input"),
    ("GL033", 3): (f"as_matrix({CONTIGUOUS})", RuntimeError, r"must not also be an input"),
    ("GL034", 0): (f"scale({X}, 2.0).sum().backward()", RuntimeError,
                   r"GeneratedBackwardFor_NS_scale_defaultBackward returned an incorrect number of "
                   r"gradients \(expected 3, got 2\)"),
    ("GL034", 1): (f"mul({X}, {X}).sum().backward()", RuntimeError,
                   r"returned an incorrect number of gradients \(expected 3, got 2\)"),
    ("GL034", 2): (f"scale({X}, 3.0).sum().backward()", RuntimeError,
                   r"returned an incorrect number of gradients \(expected 3, got 2\)"),
    ("GL034", 3): (f"mul({X}, alpha=2.0).sum().backward()", RuntimeError,
                   r"returned a gradient different than None at position 2, but the corresponding "
                   r"forward input was not a Variable"),
    ("GL035", 0): (f"sin({X})", TypeError, r"setup_context\(\) got an unexpected keyword argument 'output'"),
    ("GL035", 1): (f"mul({X}, alpha=2.0)", TypeError,
                   r"setup_context\(\) got an unexpected keyword argument 'keyword_only_inputs'"),
    ("GL035", 2): (f"sin({X})", TypeError, r"setup_context\(\) got an unexpected keyword argument 'inputs'"),
    ("GL036", 0): (f"sin({X}).sum().backward()", ValueError,
                   r"not enough values to unpack \(expected 1, got 0\)"),
    ("GL036", 1): (f"sin({X}).sum().backward()", AttributeError,
                   r"'GeneratedBackwardFor_NS_sin_defaultBackward' object has no attribute 'x'"),
    ("GL036", 2): (f"sin({X}).sum().backward()", ValueError,
                   r"not enough values to unpack \(expected 1, got 0\)"),
    ("GL037", 0): ("torch.library.opcheck(mul, (torch.ones(3), torch.ones(3)))", "OpCheckError",
                   r"_\(\) takes 1 positional argument but 2 were given"),
    ("GL037", 1): ("torch.library.opcheck(scale, (torch.ones(3),), {'alpha': 2.0})", "OpCheckError",
                   r"_\(\) got an unexpected keyword argument 'alpha'"),
    ("GL037", 2): ("torch.library.opcheck(scale, (torch.ones(3),))", "OpCheckError",
                   r"_\(\) missing 1 required positional argument: 'alpha'"),
    ("GL038", 0): ("torch.library.opcheck(nonzero, (torch.tensor([0., 1., 2.]),))", "OpCheckError", GUARD),
    ("GL038", 1): ("torch.library.opcheck(norm, (torch.ones(3),))", "OpCheckError", GUARD),
    ("GL038", 2): (COMPILED.format("copy"), "TorchRuntimeError",
                   r"Cannot access data pointer of Tensor \(e.g. FakeTensor, FunctionalTensor\)"),
    ("GL038", 3): ("torch.library.opcheck(copy, (torch.ones(3),))", "OpCheckError",
                   r"\.numpy\(\) is not supported for tensor subclasses|Numpy is not available"),
    ("GL039", 0): (None, RuntimeError, r"it must override the setup_context staticmethod"),
    ("GL039", 1): ("test_grad()", RuntimeError, r"it must override the setup_context staticmethod"),
    ("GL040", 0): (None, RuntimeError, r"You tried to vmap over Sin, but it does not have vmap support"),
    ("GL040", 1): (None, RuntimeError, r"You tried to vmap over Scale, but it does not have vmap support"),
    ("GL041", 0): (None, NotImplementedError, r"You must implement the jvp function for custom "
                                              r"autograd.Function to use it with forward mode AD"),
    ("GL042", 0): (None, ValueError, r"No return type annotation was provided. Please add one"),
    ("GL042", 1): (None, ValueError, r"Return has unsupported type typing.Optional\[torch.Tensor\]"),
    ("GL043", 0): (None, NotImplementedError, r"custom_op with kwarg-only Tensor args"),
    ("GL044", 0): (None, RuntimeError, r"Cannot register autograd formula for non-functional "
                                       r"operator <CustomOpDef\(NS::sin_\)> with schema "
                                       r"NS::sin_\(Tensor\(a0!\) x\) -> \(\)"),
    ("GL044", 1): (None, RuntimeError, r"Cannot register autograd formula for non-functional operator"),
}
# what proves a fixed example works (the same call as above when not listed)
FIXED_CALLS = {
    ("GL034", 2): f"scale({X}, 3.0).sum().backward(); scale({X}).sum().backward()",
}
# VALID examples that are run after import: (code, index) -> call
VALID_CALLS = {
    ("GL032", 0): "torch.library.opcheck(sin_into, (torch.ones(3), torch.zeros(3)))",
    ("GL032", 2): "x = torch.ones(3); shifted(x); assert bool((x == 1).all())",
    ("GL033", 0): f"flatten({CONTIGUOUS}); flatten(torch.ones(3))",
    ("GL033", 1): "sin_(torch.ones(3))",
    ("GL033", 2): "pick(torch.ones(3), torch.tensor([0, 2]))",
    ("GL033", 3): "alias(torch.ones(2, 2))",
    ("GL034", 0): f"scale({X}, 2.0, mode='b').sum().backward()",
    ("GL034", 1): f"mul({X}, alpha=2.0).sum().backward()",
    ("GL034", 2): f"sum_all([{X}, {X}], {X}).sum().backward()",
    ("GL034", 3): f"conv({X}, {X}, 1, 2, 3).sum().backward()",
    ("GL035", 0): f"mul({X}, alpha=2.0).sum().backward()",
    ("GL035", 1): f"sin({X}).sum().backward()",
    ("GL036", 0): f"sin({X}, 2.0).sum().backward()",
    ("GL037", 0): "torch.library.opcheck(mul, (torch.ones(3), torch.ones(3)), {'alpha': 2.0}); "
                  "torch.library.opcheck(mul, (torch.ones(3), torch.ones(3)))",
    ("GL038", 0): "torch.library.opcheck(pick, (torch.ones(5), torch.tensor(2)))",
    ("GL038", 1): "torch.library.opcheck(nonzero, (torch.tensor([0., 1., 2.]),))",
}
# VALID examples that name things only a real project has
NOT_RUNNABLE = {("GL030", 3), ("GL036", 1)}


def _namespaced(code: str) -> tuple[str, str]:
    namespace = f"gltruth{next(_NAMESPACES)}"
    code = textwrap.dedent(code)
    code = code.replace('"mylib::', f'"{namespace}::').replace('Library("mylib"', f'Library("{namespace}"')
    return code, namespace


def _run(code: str, call: str | None) -> None:
    code, namespace = _namespaced(code)
    scope: dict = {"__name__": f"{namespace}_module"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, f"<{namespace}>", "exec", dont_inherit=True), scope)
        if call is not None:
            call = call.replace("_NS_", f"_{namespace}_").replace("torch.ops.NS.", f"torch.ops.{namespace}.")
            exec(compile(call, f"<{namespace} call>", "exec", dont_inherit=True), scope)


def _cases(kind: str):
    """Every example of the rule (its class's and its fixtures'), as (code, index, example)."""
    for code in sorted(c for c in RULES_BY_CODE if "GL030" <= c <= "GL049"):
        for example in all_examples(RULES_BY_CODE[code], kind):
            yield pytest.param(code, example.index, example.case, id=f"{code}-{example.index}")


def _invalid_cases():
    return _cases("INVALID")


def _valid_cases():
    return _cases("VALID")


@pytest.mark.parametrize("code, index, example", list(_invalid_cases()))
def test_invalid_example_fails_as_documented(code, index, example):
    assert (code, index) in FAILS, "every INVALID example states how torch fails"
    call, kind, pattern = FAILS[(code, index)]
    with pytest.raises(Exception) as caught:
        _run(example.code, call)
    error = caught.value
    name = kind if isinstance(kind, str) else kind.__name__
    assert type(error).__name__ == name, f"{type(error).__name__}: {error}"
    namespace_free = re.sub(r"gltruth\d+", "NS", str(error))
    assert re.search(pattern, namespace_free), namespace_free


@pytest.mark.parametrize("code, index, example", list(_invalid_cases()))
def test_safe_fix_makes_it_work(code, index, example):
    if example.fixed is None or example.applicability != "safe":
        pytest.skip("no safe fix")
    call = FIXED_CALLS.get((code, index), FAILS[(code, index)][0])
    _run(example.fixed, call)


@pytest.mark.parametrize("code, index, example", list(_valid_cases()))
def test_valid_example_runs(code, index, example):
    if (code, index) in NOT_RUNNABLE:
        pytest.skip("names a module or helper that only a real project has")
    _run(example.code, VALID_CALLS.get((code, index)))


# -- the fixture tree (tests/fixtures/custom_ops) ---------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "custom_ops"
XD = "torch.rand(3, dtype=torch.float64).add(0.5).requires_grad_()"
# file -> (how the mistake fails: call or None for import, exception, pattern), what the
# correct twin passes
FIXTURE_TRUTH = {
    "sin_op.py": ((f"mysin({XD}).sum().backward()", TypeError,
                   r"setup_context\(\) got an unexpected keyword argument 'output'"),
                  f"assert torch.autograd.gradcheck(mysin, ({XD},)); "
                  f"torch.library.opcheck(mysin, ({XD},))"),
    "scale_op.py": ((f"scale({XD}, 2.0).sum().backward()", RuntimeError,
                     r"returned a gradient different than None at position 2"),
                    f"scale(torch.ones(3), 1.0); "
                    f"assert torch.autograd.gradcheck(lambda x, b: scale(x, 2.0, b), ({XD}, {XD}))"),
    "fill_op.py": ((None, ValueError, r"\{'output'\} in mutates_args were not found"),
                   "torch.library.opcheck(sin_into, (torch.ones(3), torch.zeros(3))); "
                   "torch.library.opcheck(fill_rows, (torch.zeros(3), [0, 2], 1.0))"),
    "signature_op.py": ((None, ValueError, r"Parameter size must have a type annotation"),
                        "resize(torch.ones(3), [2, 3], torch.ones(3))"),
    "fake_op.py": (("torch.library.opcheck(topk_mask, (torch.randn(5), 2), {'largest': False})",
                    "OpCheckError", r"got an unexpected keyword argument 'largest'"),
                   "torch.library.opcheck(topk_mask, (torch.randn(5), 2), {'largest': False})"),
    "func_transforms.py": (("batched_sin(torch.randn(4, 3))", RuntimeError,
                            r"must override the setup_context staticmethod"),
                           "xs = torch.randn(4, 3); assert torch.allclose(batched_sin(xs), xs.sin()); "
                           "x = torch.randn(3); "
                           "assert torch.allclose(cube_jacobian(x), torch.diag(3 * x ** 2))"),
}


def _fixture(kind: str, name: str) -> str:
    return (FIXTURES / kind / name).read_text().replace('"fixture::', '"mylib::')


def test_every_fixture_has_its_truth():
    assert {p.name for p in (FIXTURES / "mistakes").glob("*.py")} == set(FIXTURE_TRUTH)
    assert {p.name for p in (FIXTURES / "correct").glob("*.py")} == set(FIXTURE_TRUTH)


@pytest.mark.parametrize("name", sorted(FIXTURE_TRUTH))
def test_fixture_mistake_fails_and_twin_works(name):
    (call, kind, pattern), twin_call = FIXTURE_TRUTH[name]
    with pytest.raises(Exception) as caught:
        _run(_fixture("mistakes", name), call)
    assert type(caught.value).__name__ == (kind if isinstance(kind, str) else kind.__name__), caught.value
    assert re.search(pattern, str(caught.value)), caught.value
    _run(_fixture("correct", name), twin_call)


def test_torch_cusparselt_fake_bug():
    """The GL037 error on torch's own sources is a real torch 2.13 bug: the fake of
    semi_structured::cusparselt_mm fails whenever should_transpose_dense is False."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.sparse import semi_structured

    semi_structured._ensure_cusparselt_mm_registered()
    op = torch.ops.semi_structured.cusparselt_mm
    with FakeTensorMode():
        dense, packed = torch.empty(8, 16), torch.empty(64)
        assert op(dense, packed, None, 8, 8, 8, False, 0, True).shape == (8, 8)
        with pytest.raises(TypeError, match="missing 1 required positional argument: "
                                            "'should_transpose_dense'"):
            op(dense, packed, None, 8, 8, 8, False, 0, False)
