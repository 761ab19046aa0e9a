"""worker/inputs/constraints.py: what the code says its tensors look like, read before synthesis."""
import importlib.util
import sys
import textwrap

import pytest

from gradlint.worker.inputs import constraints

SOURCE = textwrap.dedent('''
    import torch
    from torch.autograd import Function


    class Interp(Function):
        @staticmethod
        def forward(ctx, x, xp, fp):
            """
            x : (D, P) query points
            xp : (D, N) grid
            fp : (D, N) values
            """
            i = torch.searchsorted(xp.contiguous(), x.contiguous())
            return fp.gather(-1, i.clamp(max=fp.shape[-1] - 1))


    class Lpc(Function):
        @staticmethod
        def forward(ctx, x, A, zi):
            B, T = x.shape
            return x


    def lpc(x, a, zi):
        """Filter.

        Shape:
            - x: (B, T)
            - a: (B, T, order)
            - zi: (B, order)
        """
        assert x.ndim == 2
        return Lpc.apply(x, a, zi)


    class Points(Function):
        @staticmethod
        def forward(ctx, p, q, w):
            if p.dim() != 2:
                raise ValueError("p must be 2-D")
            pairs = q[..., 0] + q[..., 1]
            return p.view(-1, 3).sum(-1) + torch.log(w).sum() + torch.acos(pairs).sum()


    class Solve(Function):
        @staticmethod
        def forward(ctx, A, b):
            if A.layout != torch.sparse_csr:
                raise ValueError("A must be CSR")
            return A @ b

        @staticmethod
        def backward(ctx, g):
            A, b = ctx.saved_tensors
            return A.col_indices(), None


    class Clamped(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clamp(0.0, 1.0)
''')


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("constraints") / "constraint_cases.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("constraint_cases", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["constraint_cases"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("constraint_cases", None)


def infer(cls, names):
    return constraints.infer(cls.apply, cls, names)


def test_a_grid_searchsorted_reads_is_sorted_and_docstring_shapes_share_sizes(module):
    found = infer(module.Interp, ["x", "xp", "fp"])
    assert found["xp"].domain == "sorted"
    shapes = constraints.shapes_for(["x", "xp", "fp"], found)
    assert shapes[0][0] == shapes[1][0] == shapes[2][0]  # D is one size
    assert shapes[1] == shapes[2] and shapes[0][1] != shapes[1][1]  # N shared, P another


def test_a_wrappers_docstring_and_asserts_speak_for_the_function(module):
    found = infer(module.Lpc, ["x", "A", "zi"])
    assert found["x"].ndim == 2
    x, a, zi = constraints.shapes_for(["x", "A", "zi"], found)
    assert len(x) == 2 and len(a) == 3 and len(zi) == 2
    assert a[:2] == x and zi[0] == x[0] and zi[1] == a[2]  # (B, T), (B, T, order), (B, order)


def test_ranks_views_pairs_and_value_ranges(module):
    found = infer(module.Points, ["p", "q", "w"])
    assert found["p"].ndim == 2 and found["p"].dims[-1] == 3
    assert found["q"].min_last == 2
    assert found["w"].domain == "positive"
    p, q, w = constraints.shapes_for(["p", "q", "w"], found)
    assert len(p) == 2 and p[-1] == 3 and q[-1] == 2


def test_layouts_from_forward_and_backward(module):
    found = infer(module.Solve, ["A", "b"])
    assert found["A"].layouts[0] == "csr"
    assert "b" not in found


def test_clamp_bounds_are_a_range(module):
    assert infer(module.Clamped, ["x"])["x"].domain == ("range", 0.0, 1.0)


def test_a_tensor_forward_requires_to_be_boolean_is_a_mask(tmp_path):
    # `if masks.dtype != torch.bool: raise` decides, over the annotation and the tensor uses
    # (ncut-pytorch's EigvecOuterProduct: "masks must be boolean")
    from gradlint.worker.inputs import params as P

    source = textwrap.dedent('''
        import torch


        class Projector(torch.autograd.Function):
            @staticmethod
            def forward(ctx, A: torch.Tensor, masks: torch.Tensor, other: torch.Tensor):
                if masks.dtype != torch.bool:
                    raise ValueError("masks must be boolean")
                ctx.save_for_backward(A, masks, other)
                return (A * masks.sum(1, keepdim=True) * other).sum(0)

            @staticmethod
            def backward(ctx, g):
                return None, None, None
    ''')
    path = tmp_path / "projector_fixture.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("projector_fixture", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["projector_fixture"] = module
    spec.loader.exec_module(module)
    kinds = dict((p.name, p.kind) for p in P.infer(module.Projector.forward, module.Projector))
    assert kinds == {"A": P.TENSOR, "masks": P.MASK, "other": P.TENSOR}, kinds


def test_the_values_an_error_lists():
    from gradlint.worker.inputs.error_hints import choices

    assert choices("Unknown method: auto. Available: cg, bicgstab, gmres") == ["cg", "bicgstab", "gmres"]
    assert choices("reduction must be one of ['sum', 'mean', 'none'], got x") == ["sum", "mean", "none"]
    assert choices("Supported backends: scipy | pytorch") == ["scipy", "pytorch"]
    assert choices("Expected 4D input (got 3D input)") == []
    assert choices("expected a tensor") == []


def test_a_helper_of_a_package_whose_name_starts_with_torch_is_followed(tmp_path):
    # ``torchwave.pick`` is the package's own helper, not torch's: its literals name the modes
    from gradlint.worker.inputs import params as P

    source = textwrap.dedent('''
        import torch


        def pick(x, wavelet="haar", levels=3):
            if wavelet == "haar":
                return x * levels
            if wavelet == "db2":
                return 2 * x * levels
            raise ValueError(wavelet)


        class Transform(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, wavelet, levels):
                ctx.wavelet = wavelet
                return pick(x, wavelet, levels=levels)

            @staticmethod
            def backward(ctx, g):
                return g, None, None
    ''')
    path = tmp_path / "torchwave.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("torchwave", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["torchwave"] = module
    try:
        spec.loader.exec_module(module)
        params = dict((p.name, p) for p in P.infer(module.Transform.forward, module.Transform))
    finally:
        del sys.modules["torchwave"]
    assert params["wavelet"].kind == P.STR and params["wavelet"].candidates[:2] == ["haar", "db2"], params
    assert params["levels"].kind == P.INT, params  # the helper's default is an int


def test_an_error_asking_for_a_square_matrix_is_a_shape_hint():
    from gradlint.worker.inputs.error_hints import shape_hints

    assert shape_hints("det requires a square matrix, got (2, 7)")[:2] == [(4, 4), (3, 3)]
    assert (4, 4) in shape_hints("linalg.inv: A must be batches of square matrices, but they are 3 by 4 matrices")
    assert shape_hints("the square root of a negative number") == []


def test_the_sign_an_error_names_for_an_input():
    from gradlint.worker.inputs import params as P
    from gradlint.worker.inputs.error_hints import learn_domains

    ps = [P.Param(n, P.TENSOR) for n in ("x_obs", "z_obs", "length", "centroid_depth", "dip")]
    cases = {
        "Okada convention requires z <= 0. Use z=0 at surface": {"z_obs": "negative"},
        "length must be strictly positive": {"length": "positive"},
        "centroid_depth must be >= 0, got -1.2": {"centroid_depth": "positive"},
        "dip must be in (0, pi/2)": {},
        "x must be positive": {"x_obs": "positive"},  # the only parameter whose name starts with x_
        "the index must be positive": {},
    }
    for message, expected in cases.items():
        found = {}
        learn_domains(message, ps, found)
        assert dict((k, c.domain) for k, c in found.items()) == expected, (message, found)


def test_numpy_style_entries_give_shapes_in_their_descriptions():
    doc = textwrap.dedent("""
        Parameters
        ----------
        x_obs, y_obs : Tensor
            East/north observation coordinates [B, N] in metres.
        z_obs : Tensor
            Observation depth [B] (or per-pixel [B, N]).
        dip : float
            (default: 0)
    """)
    found = {}
    constraints._doc_shapes(doc, dict((n, n) for n in ("x_obs", "y_obs", "z_obs", "dip")), found, "here")
    assert dict((k, c.symbols) for k, c in found.items()) == {"x_obs": ["B", "N"], "y_obs": ["B", "N"], "z_obs": ["B"]}
