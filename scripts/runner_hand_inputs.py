"""Hand-written gradcheck inputs for the new sets' Functions (``runner_hand.py`` runs them).

``HAND[set]["file::Class"]`` is a list of checks; each has ``inputs`` (a Python expression evaluated in
the Function's module, with ``torch`` and ``F``), and optionally ``options`` (gradcheck keywords),
``no_grad`` (positions of floating tensors that must not require grad), ``fn`` (an expression for the
function to check, when not ``Class.apply``: a public wrapper, or a reparametrisation of a sparse input
by its values), ``expect: "fail"`` (a real bug; ``why`` says which) and ``why`` (where the inputs come
from). A Function is labelled correct when every check passes and some output moves with some checked
input; every floating-point tensor input requires grad unless ``no_grad`` says otherwise.
"""

D = "torch.float64"
_SPARSE_TRIL = ("(lambda L: L.masked_fill(L.abs() < 0.25, 0.0))(torch.tril(torch.rand(5, 5, dtype=%s)) "
                "+ torch.eye(5, dtype=%s))" % (D, D))

TUNE: dict[str, list[dict]] = {
    "torchinterp1d/interp1d.py::Interp1d": [{
        "inputs": "(torch.linspace(0, 1, 8, dtype=%s).repeat(2, 1) + 0.05 * torch.rand(2, 1, dtype=%s), "
                  "torch.randn(2, 8, dtype=%s), 0.1 + 0.8 * torch.rand(2, 5, dtype=%s))" % (D, D, D, D),
        "expect": "fail", "timeout": 60,
        "why": "a real bug under torch 2.13: forward saves its own output `ynew` and backward calls "
               "torch.autograd.grad(ynew, ...), which re-enters Interp1dBackward without end (backward never "
               "returns). Inputs from the docstring: x sorted, xnew inside the grid",
    }],
    "torchlpc/core.py::LPC": [{
        "inputs": "(torch.randn(2, 16, dtype=%s), 0.3 * torch.randn(2, 16, 2, dtype=%s), torch.randn(2, 2, dtype=%s))"
                  % (D, D, D),
        "why": "sample_wise_lpc's docstring: x (B, T), A (B, T, order), zi (B, order); small A is a stable filter",
    }],
    "torchlpc/recurrence.py::Recurrence": [{
        "inputs": "(0.5 * torch.rand(2, 16, dtype=%s), torch.randn(2, 16, dtype=%s), torch.randn(2, dtype=%s))"
                  % (D, D, D),
        "why": "sample_wise_lpc: Recurrence.apply(-a.squeeze(2), x, zi.squeeze(1)) for order 1",
    }],
    "tslearn/metrics/soft_dtw_loss_pytorch.py::_SoftDTWLossPyTorch": [{
        "inputs": "(torch.rand(2, 5, 6, dtype=%s) + 0.1, 1.0)" % D,
        "expect": "fail",
        "why": "a real bug: forward writes into its input D in place (`D[:, ~mask] = torch.inf`, also when the "
               "mask hides nothing), so a second call on the same D bumps its version and the first call's "
               "backward raises ('modified by an inplace operation'). Inputs from the docstring: D (b, m, n) "
               "pairwise distances, gamma a float",
    }],
    "pytorch_revgrad/functional.py::RevGrad": [{
        "inputs": "(torch.randn(3, 4, dtype=%s), torch.tensor(1.0, dtype=%s))" % (D, D),
        "expect": "fail", "why": "gradient reversal by design (listed in NOT_A_DERIVATIVE)",
    }],
    "torchsparsegradutils/sparse_solve.py::SparseTriangularSolve": [{
        "inputs": "(lambda A: (A.values(), torch.randn(5, 2, dtype=%s)))(%s.to_sparse_coo().coalesce())"
                  % (D, _SPARSE_TRIL),
        "fn": "(lambda A: lambda v, b: SparseTriangularSolve.apply(torch.sparse_coo_tensor(A.indices(), v, "
              "A.shape), b, False, False, False))(%s.to_sparse_coo().coalesce())" % _SPARSE_TRIL,
        "why": "its docstring: A sparse COO/CSR lower-triangular, B dense; checked on A's non-zero values",
    }, {
        "inputs": "(lambda A: (A.values(), torch.randn(5, 2, dtype=%s)))(%s.to_sparse_csr())" % (D, _SPARSE_TRIL),
        "fn": "(lambda A: lambda v, b: SparseTriangularSolve.apply(torch.sparse_csr_tensor(A.crow_indices(), "
              "A.col_indices(), v, A.shape), b, False, False, True))(%s.to_sparse_csr())" % _SPARSE_TRIL,
        "why": "CSR layout, transposed solve",
    }],
    "torchsparsegradutils/sparse_solve.py::SparseGenericSolve": [{
        "inputs": "(lambda A: (A.values(), torch.randn(5, 2, dtype=%s)))((torch.eye(5, dtype=%s) * 3 + "
                  "torch.rand(5, 5, dtype=%s).masked_fill(torch.rand(5, 5) < 0.6, 0.0)).to_sparse_coo().coalesce())"
                  % (D, D, D),
        "fn": "(lambda A: lambda v, b: SparseGenericSolve.apply(torch.sparse_coo_tensor(A.indices(), v, A.shape, is_coalesced=True), "
              "b, lambda a, y: torch.linalg.solve(a.to_dense(), y), lambda a, y: torch.linalg.solve(a.to_dense().T, y), "
              "{}))((torch.eye(5, dtype=%s) * 3 + torch.rand(5, 5, dtype=%s).masked_fill(torch.rand(5, 5) < 0.6, "
              "0.0)).to_sparse_coo().coalesce())" % (D, D),
        "seed": 0,
        "why": "its docstring: solve and transpose_solve (A^T); exact dense solves (the default minres needs a "
               "symmetric A)",
    }],
    "torchsparsegradutils/sparse_matmul.py::SparseMatMul": [{
        "inputs": "(lambda A: (A.values(), torch.randn(3, 2, dtype=%s)))(torch.randn(4, 3, dtype=%s)"
                  ".masked_fill(torch.rand(4, 3) < 0.4, 0.0).to_sparse_coo().coalesce())" % (D, D),
        "fn": "(lambda A: lambda v, b: SparseMatMul.apply(torch.sparse_coo_tensor(A.indices(), v, A.shape, is_coalesced=True), b))"
              "(torch.randn(4, 3, dtype=%s).masked_fill(torch.rand(4, 3) < 0.4, 0.0).to_sparse_coo().coalesce())" % D,
        "why": "sparse_mm's docstring: A sparse COO, B dense; checked on A's non-zero values",
    }],
    "torchsparsegradutils/sparse_lstsq.py::SparseGenericLstsq": [{
        "inputs": "(lambda A: (A.values(), torch.randn(6, 2, dtype=%s)))((torch.randn(6, 3, dtype=%s)"
                  ".masked_fill(torch.rand(6, 3) < 0.3, 0.0) + torch.eye(6, 3, dtype=%s)).to_sparse_coo().coalesce())"
                  % (D, D, D),
        "fn": "(lambda A: lambda v, b: SparseGenericLstsq.apply(torch.sparse_coo_tensor(A.indices(), v, A.shape, is_coalesced=True), b, "
              "lambda a, y: torch.linalg.lstsq(a.to_dense(), y).solution, "
              "lambda a, y: torch.linalg.pinv(a.to_dense().T) @ y))((torch.randn(6, 3, dtype=%s)"
              ".masked_fill(torch.rand(6, 3) < 0.3, 0.0) + torch.eye(6, 3, dtype=%s)).to_sparse_coo().coalesce())"
              % (D, D),
        "options": {"nondet_tol": 1e-9},
        "why": "docstring: a tall full-rank A, exact dense least squares as the solvers (lstsq's two backward "
               "passes can differ in the last bits: nondet_tol)",
    }],
    "src/brevitas/ops/autograd_ste_ops.py::AbsBinarySignGradFn": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D,
        "why": "abs: its derivative is sign(x) away from 0 (binary_sign only differs at 0)",
    }],
    "src/brevitas_examples/bnn_pynq/models/losses.py::squared_hinge_loss": [{
        "inputs": "(torch.randn(4, 3, dtype=%s), torch.randint(0, 2, (4, 3)).to(%s) * 2 - 1)" % (D, D),
        "expect": "fail",
        "why": "a real bug: backward overwrites grad_output (resize_as_/copy_), so it ignores the incoming "
               "gradient, and returns None for targets though the loss depends on them",
    }],
    "xitorch/linalg/solve.py::solve_torchfcn": [{
        "inputs": "(torch.randn(4, 4, dtype=%s) + 4 * torch.eye(4, dtype=%s), torch.randn(4, 2, dtype=%s))" % (D, D, D),
        "fn": "lambda A, B: solve(LinearOperator.m(A), B)",
        "why": "xitorch.linalg.solve's docstring: a LinearOperator A and B (nr, ncols); through the public API",
    }],
    "xitorch/linalg/symeig.py::symeig_torchfcn": [{
        "inputs": "(torch.randn(4, 4, dtype=%s),)" % D,
        "fn": "lambda A: symeig(LinearOperator.m((A + A.transpose(-1, -2)) / 2, is_hermitian=True))[0]",
        "why": "xitorch.linalg.symeig on a symmetric matrix (eigenvalues: eigenvectors have a sign gauge)",
    }],
    "xitorch/_impls/linalg/symeig.py::degen_symeig": [{
        "inputs": "(torch.randn(4, 4, dtype=%s),)" % D,
        "fn": "lambda A: degen_symeig.apply((A + A.transpose(-1, -2)) / 2)[0]",
        "why": "a symmetric matrix (eigenvalues; its eigenvectors have a sign gauge)",
    }],
    "xitorch/integrate/quad.py::_Quadrature": [{
        "inputs": "(torch.tensor(0.2, dtype=%s), torch.tensor(1.3, dtype=%s), torch.tensor(0.7, dtype=%s))" % (D, D, D),
        "fn": "lambda xl, xu, w: quad(lambda x, w: torch.sin(w * x) * x, xl, xu, params=(w,))",
        "why": "xitorch.integrate.quad's docstring: fcn(x, *params), bounds and params tensors",
    }],
    "xitorch/integrate/solve_ivp.py::_SolveIVP": [{
        "inputs": "(torch.tensor([1.0, 0.5], dtype=%s), torch.tensor(0.8, dtype=%s))" % (D, D),
        "fn": "lambda y0, a: solve_ivp(lambda t, y, a: -a * y + torch.sin(t), torch.linspace(0, 1, 5, dtype=%s), "
              "y0, params=(a,), method='rk4')" % D,
        "why": "xitorch.integrate.solve_ivp's docstring: fcn(t, y, *params), ts, y0, params",
    }],
    "xitorch/integrate/mcquad.py::_MCQuad": [{
        "inputs": "(torch.tensor(0.8, dtype=%s), torch.tensor(1.2, dtype=%s))" % (D, D),
        "fn": "lambda w, s: (torch.manual_seed(1), mcquad(lambda x, w: torch.sin(w * x) + w * x ** 2, "
              "lambda x, s: -0.5 * ((x / s) ** 2).sum(), torch.zeros(1, dtype=%s), fparams=(w,), pparams=(s,), "
              "method='mh', nsamples=300, nburnout=50))[1]" % D,
        "why": "xitorch.integrate.mcquad's docstring: ffcn(x, *fparams), log_pfcn(x, *pparams); the sampler "
               "reseeded before every call (a fixed set of Monte-Carlo samples)",
    }],
    "xitorch/optimize/rootfinder.py::_RootFinder": [{
        "inputs": "(torch.tensor([0.5, 0.1], dtype=%s), torch.tensor([1.3, 0.4], dtype=%s))" % (D, D),
        "fn": "lambda y0, a: rootfinder(lambda y, a: y ** 3 + y - a, y0, params=(a,))",
        "no_grad": [0],
        "why": "xitorch.optimize.rootfinder's docstring: fcn(y, *params), y0, params; y0 only starts the "
               "iteration (the root moves with it only within the solver's tolerance), so it is not checked",
    }],
}

HAND: dict[str, dict[str, list[dict]]] = {
    "tune": TUNE,
    "heldout": {},  # written at the end, when the held-out set is measured
}
