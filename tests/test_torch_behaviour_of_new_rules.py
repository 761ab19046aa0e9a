"""What GL010-GL029 say about torch is what torch 2.13 does: one test per claim in a rule's
docs (exception type and text, or "silent"), measured by running torch.

Tests may import torch; gradlint itself never does outside the gradcheck worker.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
from torch.autograd import Function, gradcheck, gradgradcheck  # noqa: E402
from torch.autograd.function import once_differentiable  # noqa: E402
from torch.autograd.gradcheck import GradcheckError  # noqa: E402

MISMATCH = "Jacobian mismatch for output 0 with respect to input 0"


def _x(values=(1.0, 2.0, 3.0)):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


class _Saved(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * g * x


# GL010 -----------------------------------------------------------------------------------
class _OnCtx(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g * ctx.x


class _OutputOnCtx(Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.result = result
        return result

    @staticmethod
    def backward(ctx, g):
        return g * ctx.result


def test_gl010_ctx_attribute_has_no_version_check():
    x = _x()
    h = x * 1
    y = _OnCtx.apply(h)
    h.add_(10)
    y.sum().backward()
    assert x.grad.tolist() == [22.0, 24.0, 26.0]  # silently wrong: 2 * x is [2, 4, 6]
    x = _x()
    h = x * 1
    y = _Saved.apply(h)
    h.add_(10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_gl010_output_on_ctx_is_a_reference_cycle():
    node = weakref.ref(_OutputOnCtx.apply(_x()).grad_fn)
    assert node() is not None  # the output is gone, its graph is not
    gc.collect()
    assert node() is None


def test_gl010_ctx_attribute_outlives_backward_and_double_backward_is_fine():
    x = _x()
    y = _OnCtx.apply(x)
    y.sum().backward()
    y.sum().backward()  # a saved tensor would be freed: "backward through the graph a second time"
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    assert gradgradcheck(_OnCtx.apply, (_x(),))


def test_gl010_ctx_attributes_bypass_saved_tensor_hooks():
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        _OnCtx.apply(_x()).sum().backward()
        assert packed == []
        _Saved.apply(_x()).sum().backward()
        assert len(packed) == 1


# GL011, GL012 ----------------------------------------------------------------------------
def test_gl011_second_save_replaces_the_first():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x)
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g, g

    x, w = _x(), _x((4.0, 5.0, 6.0))
    saved = Twice.apply(x, w).grad_fn.saved_tensors
    assert len(saved) == 1 and saved[0] is w


@pytest.mark.parametrize("args, text", [
    ("x, alpha", "argument 1 is of type float"),
    ("(x, x)", "argument 0 is of type tuple"),
    ("x, x.shape", "argument 1 is of type torch.Size"),
])
def test_gl012_non_tensor_saved_raises_type_error_only_when_grad_is_needed(args, text):
    namespace = {"Function": Function}
    exec(f"""
class Save(Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward({args})
        return x * alpha

    @staticmethod
    def backward(ctx, g):
        return g, None
""", namespace)
    save = namespace["Save"]
    with pytest.raises(TypeError, match=f"save_for_backward can only save variables, but {text}"):
        save.apply(_x(), 2.0)
    save.apply(_x().detach(), 2.0)  # no input requires grad: accepted silently
    assert _Saved.apply(_x()) is not None


def test_gl012_none_may_be_saved():
    class SaveNone(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    assert SaveNone.apply(_x()).grad_fn.saved_tensors[1] is None


# GL013 -----------------------------------------------------------------------------------
class _Triple(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * g * x  # deliberately not 2: shows whether this backward ran


def test_gl013_instance_call_raises_and_instance_apply_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
            _Triple()(_x())
        x = _x()
        _Triple().apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 6.0, 9.0]
    assert any(issubclass(w.category, DeprecationWarning) and "should not be instantiated" in str(w.message)
               for w in caught)


def test_gl013_forward_called_directly_bypasses_backward():
    class Ctx:
        def save_for_backward(self, *tensors):
            self.saved = tensors

    x = _x()
    y = _Triple.forward(Ctx(), x)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'save_for_backward'"):
        _Triple.forward(None, _x())


# GL014, GL015, GL028 ---------------------------------------------------------------------
def test_gl014_change_after_save_is_silent():
    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            out = y * 2
            y.add_(1)
            return out

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return 2 * g * y

    x = _x()
    Exp.apply(x).sum().backward()
    assert torch.allclose(x.grad, 2 * (x.detach().exp() + 1))  # not 2 * exp(x)
    with pytest.raises(GradcheckError, match=MISMATCH):
        gradcheck(Exp.apply, (_x(),))


class _Double_(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 6


def test_gl015_input_modified_without_mark_dirty():
    x = _x()
    _Double_.apply(x).sum().backward()
    assert x.detach().tolist() == [2.0, 4.0, 6.0]  # the user's leaf, silently changed
    x = _x()
    h = x.exp()
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[torch.DoubleTensor \[3\]\], "
                                           r"which is output 0 of Exp, is at version 1"):
        _Double_.apply(h).sum().backward()
    with pytest.raises(GradcheckError, match=MISMATCH):
        gradcheck(_Double_.apply, (_x(),))


def test_gl028_marked_dirty_but_not_returned():
    class ViewOfDirty(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x.view(-1)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    for x in (_x() * 1, _x().detach()):
        with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward method "
                                               "were not returned as output"):
            ViewOfDirty.apply(x)


# GL016 -----------------------------------------------------------------------------------
def test_gl016_once_differentiable_and_no_grad_backward_fail_gradgradcheck():
    class Once(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x

    class NoGrad(_Saved):
        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            with torch.no_grad():
                result = 2 * g * x
            return result

    assert gradcheck(Once.apply, (_x(),))
    with pytest.raises(GradcheckError, match=MISMATCH):
        gradgradcheck(Once.apply, (_x(),))
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be zero"):
        gradgradcheck(NoGrad.apply, (_x(),))


# GL017 -----------------------------------------------------------------------------------
def test_gl017_failed_check_returns_false_silently():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

    assert gradcheck(Wrong.apply, (_x(),), raise_exception=False) is False


# GL018 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("func", [
    lambda t: F.dropout(t, 0.5),
    lambda t: t * torch.rand_like(t),
    lambda t: t[torch.randperm(3)],
    lambda t: F.rrelu(t - 2, training=True),
], ids=["dropout", "rand_like", "randperm", "rrelu"])
def test_gl018_random_ops_fail_gradcheck(func):
    torch.manual_seed(0)
    with pytest.raises(GradcheckError, match=MISMATCH):
        gradcheck(func, (_x(),))


def test_gl018_deterministic_variants_pass():
    def seeded(t):
        torch.manual_seed(0)
        return t * torch.rand_like(t)

    assert gradcheck(lambda t: F.dropout(t, 0.5, training=False), (_x(),))
    assert gradcheck(lambda t: F.dropout(t, 0.0), (_x(),))
    assert gradcheck(lambda t: F.rrelu(t), (_x(),))
    assert gradcheck(seeded, (_x(),))


# GL019 -----------------------------------------------------------------------------------
def _zeros():
    return torch.zeros(3, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("func", [
    torch.relu, F.relu6, F.leaky_relu, torch.sign, torch.sqrt, lambda t: t.clamp(min=0),
    lambda t: t.clamp(max=0), lambda t: t.max(), lambda t: t.amin(),
    lambda t: F.threshold(t, 0.0, 0.0),
], ids=["relu", "relu6", "leaky_relu", "sign", "sqrt", "clamp_min", "clamp_max", "max", "amin",
        "threshold"])
def test_gl019_kinks_at_zero_fail(func):
    with pytest.raises(GradcheckError, match=MISMATCH):
        gradcheck(func, (_zeros(),))


@pytest.mark.parametrize("func", [torch.abs, lambda t: torch.maximum(t, torch.zeros_like(t)),
                                  F.hardtanh, F.elu, torch.norm, lambda t: t.clamp(-1, 1)],
                         ids=["abs", "maximum", "hardtanh", "elu", "norm", "clamp_-1_1"])
def test_gl019_not_kinks_at_zero_pass(func):
    assert gradcheck(func, (_zeros(),))


@pytest.mark.parametrize("value", [float("nan"), 1e300, 5e-324])
def test_gl019_garbage_values_fail_a_correct_function(value):
    x = torch.full((3,), value, dtype=torch.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match=MISMATCH):
        gradcheck(torch.log if value == 5e-324 else torch.sin, (x,))


# GL020, GL027 ----------------------------------------------------------------------------
def test_gl020_forward_ad_without_jvp_raises_not_implemented():
    text = "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(NotImplementedError, match=text):
            gradcheck(_Saved.apply, (_x(),), check_forward_ad=True, raise_exception=False)
        with pytest.raises(NotImplementedError, match=text):
            gradgradcheck(_Saved.apply, (_x(),), check_fwd_over_rev=True)


def test_gl027_index_add_backward_is_deterministic_on_cpu():
    class Take(Function):
        @staticmethod
        def forward(ctx, src, index):
            ctx.save_for_backward(index)
            ctx.size = src.shape[0]
            return src[index]

        @staticmethod
        def backward(ctx, g):
            index, = ctx.saved_tensors
            out = g.new_zeros(ctx.size)
            out.index_add_(0, index, g)
            return out, None

    assert gradcheck(Take.apply, (_x(), torch.tensor([0, 0, 1, 2, 2, 2])))


# GL021, GL022 ----------------------------------------------------------------------------
def test_gl021_needs_input_grad_out_of_range():
    class Index(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g if ctx.needs_input_grad[2] else None, None

    with pytest.raises(IndexError, match="tuple index out of range"):
        Index.apply(_x(), _x()).sum().backward()


def test_gl022_gradient_for_a_number_raises_with_a_one_based_position():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, alpha: float):
            ctx.alpha = alpha
            return x * alpha

        @staticmethod
        def backward(ctx, g):
            return g * ctx.alpha, g.sum()

    text = ("function ScaleBackward returned a gradient different than None at position 2, but the "
            "corresponding forward input was not a Variable")
    for alpha in (2.0, 2, True):
        with pytest.raises(RuntimeError, match=text):
            Scale.apply(_x(), alpha).sum().backward()
    with pytest.raises(RuntimeError, match=text):
        gradcheck(Scale.apply, (_x(), 2.0), raise_exception=False)


# GL023, GL024, GL025, GL026, GL029 -------------------------------------------------------
def test_gl023_casting_inside_fails_without_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(GradcheckError, match=MISMATCH):
            gradcheck(lambda t: t.float().exp().double(), (_x(),))
    assert not [w for w in caught if "double precision" in str(w.message)]
    assert gradcheck(lambda t: t * (t > 0).float(), (_x(),))


def test_gl024_same_tensor_twice_checks_only_the_sum():
    class Swapped(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * 2 * a * b, g * b * b  # swapped

    x = _x()
    assert gradcheck(Swapped.apply, (x, x))
    assert gradcheck(Swapped.apply, (x,) * 2)
    with pytest.raises(GradcheckError, match=MISMATCH):
        gradcheck(Swapped.apply, (x, _x((4.0, 5.0, 6.0))))


def test_gl025_check_sparse_nnz_is_gone():
    with pytest.raises(TypeError, match="gradcheck\\(\\) got an unexpected keyword argument 'check_sparse_nnz'"):
        gradcheck(torch.sin, (_x(),), check_sparse_nnz=True)
    with pytest.raises(TypeError, match="gradgradcheck\\(\\) got an unexpected keyword argument"):
        gradgradcheck(torch.sin, (_x(),), check_sparse_nnz=False)
    assert gradcheck(torch.sin, (_x(),), masked=True)


def test_gl026_shared_leaf_makes_the_comparison_true():
    x = _x()
    g = torch.ones(3, dtype=torch.float64)
    (x * x).backward(g)
    ref = x.grad
    (x * 3).backward(g)  # a different "implementation"
    assert ref is x.grad and torch.allclose(ref, x.grad)
    torch.testing.assert_close(ref, x.grad)


def test_gl029_expanded_input_raises_runtime_error():
    text = "The 0th input has a dimension with stride 0. gradcheck only supports inputs that are non-overlapping"
    base = torch.randn(1, dtype=torch.float64, requires_grad=True)
    for inputs in ((base.expand(3),), (torch.broadcast_to(base, (3,)),)):
        with pytest.raises(RuntimeError, match=text):
            gradcheck(torch.sin, inputs, raise_exception=False)
    assert gradcheck(torch.sin, (base.expand(3).contiguous(),))
    assert gradcheck(torch.mul, (_x(), torch.randn(1, dtype=torch.float64).expand(3)))
