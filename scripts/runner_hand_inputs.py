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

# -- heldout2 -----------------------------------------------------------------------------------------
# Every Function is called through its own module's globals (Class.apply, or a wrapper defined in the same
# module), so that a mutant written as a sibling module is the one that runs.

_PQ_GPSR_CIRCUIT = ("pyq.QuantumCircuit(3, [pyq.Y(1), pyq.RX(0, 'theta0'), pyq.PHASE(0, 'theta1'), "
                    "pyq.CSWAP(0, (1, 2)), pyq.CRX(1, 2, 'theta2'), pyq.X(1), pyq.Z(0), pyq.Y(0), pyq.H(0), pyq.T(1), "
                    "pyq.S(1), pyq.SDagger(0), pyq.CPHASE(1, 2, 'theta3'), pyq.CNOT(0, 1), pyq.Toffoli((0, 1), 2)])")
_PQ_OBSERVABLE = "pyq.Observable(pyq.Add([pyq.Z(0), pyq.X(1), pyq.Y(2), pyq.X(0)]))"
_PQ_NAMES = "['theta0', 'theta1', 'theta2', 'theta3']"
_F64 = "torch.set_default_dtype(torch.float64)"

HELDOUT2: dict[str, list[dict]] = {
    # zuko 1.6.0 (zuko/utils.py): implicit differentiation, quadrature, ODE adjoint
    "zuko/utils.py::Bisection": [{
        "inputs": "((1.98 * torch.rand(5, dtype=%s) - 0.99), torch.tensor(1.3, dtype=%s))" % (D, D),
        "fn": "lambda y, alpha: bisection(lambda x: torch.cos(alpha * x), y, torch.pi / 1.3, 0.0, n=60, phi=(alpha,))",
        "why": "zuko's test_bisection: f = cos(alpha x), y in (-0.99, 0.99), bounds pi/alpha and 0, phi=(alpha,); "
               "n=60 iterations instead of the test's 24, so that the root is resolved to float64 precision (with "
               "n=24 the forward is a staircase of step 2^-24, finer than nothing gradcheck's 1e-6 step can see)",
    }],
    "zuko/utils.py::GaussLegendre": [{
        "inputs": "(torch.randn(4, dtype=%s), torch.randn(4, dtype=%s), torch.tensor(1.0, dtype=%s))" % (D, D, D),
        "fn": "lambda a, b, alpha: gauss_legendre(lambda x: alpha * x ** 5 - x ** 2, a, b, n=3, phi=(alpha,))",
        "why": "zuko's test_gauss_legendre: a degree-5 polynomial, integrated exactly by 3 nodes (backward returns "
               "the derivative of the exact integral: -f(a), f(b))",
    }],
    "zuko/utils.py::AdaptiveCheckpointAdjoint": [{
        "inputs": "(torch.randn(4, dtype=%s), torch.tensor(0.2, dtype=%s), torch.tensor(1.5, dtype=%s), "
                  "torch.tensor(1.3, dtype=%s))" % (D, D, D, D),
        "fn": "lambda x0, t0, t1, alpha: odeint(lambda t, x: -alpha * x + torch.sin(t), x0, t0, t1, phi=(alpha,), "
              "atol=1e-9, rtol=1e-9)",
        "expect": "fail",
        "why": "a real bug: the gradient for the initial time t0 has the wrong sign. backward returns "
               "grad_t0 = sum(f(t0, x0) * a(t0)), but x(t1) moves by -Phi f(t0, x0) when t0 grows, so it must be "
               "-sum(f(t0, x0) * a(t0)) (gradcheck: numerical = -analytical exactly, for any tolerance; zuko's "
               "test_odeint never asks for t0's gradient). Inputs from odeint's docstring and test_odeint: "
               "f(t, x) with params phi, scalar t0 and t1 (all differentiable per the docstring), tight tolerances",
    }, {
        "inputs": "(torch.randn(4, dtype=%s), torch.tensor(1.5, dtype=%s), torch.tensor(1.3, dtype=%s))" % (D, D, D),
        "fn": "lambda x0, t1, alpha: odeint(lambda t, x: -alpha * x + torch.sin(t), x0, 0.2, t1, phi=(alpha,), "
              "atol=1e-9, rtol=1e-9)",
        "why": "the same without t0: x0, t1 and phi's gradients are right (informative, the label comes from #0)",
    }],
    # mambapy 1.2.0: Blelloch parallel scan H[t] = A[t] H[t-1] + X[t]
    "mambapy/pscan.py::PScan": [{
        "inputs": "(0.5 + 0.4 * torch.rand(2, 8, 3, 2, dtype=%s), torch.randn(2, 8, 3, 2, dtype=%s))" % (D, D),
        "why": "PScan.forward's docstring: A_in, X_in (B, L, D, N); mamba.py calls pscan(deltaA, BX) with "
               "deltaA = exp(delta A) in (0, 1); L a power of two",
    }, {
        "inputs": "(0.5 + 0.4 * torch.rand(2, 6, 3, 2, dtype=%s), torch.randn(2, 6, 3, 2, dtype=%s))" % (D, D),
        "why": "L = 6, not a power of two: the padded path of forward and backward",
    }],
    # memory-efficient-attention-pytorch 0.1.6: tiled (flash) attention in plain PyTorch, reversible blocks.
    # Its accumulators are made in the default dtype (torch.full(..., -finfo(q.dtype).max) overflows float32
    # for float64 q), so the checks run with float64 as the default dtype.
    "memory_efficient_attention_pytorch/flash_attention.py::FlashAttentionFunction": [{
        "inputs": "(torch.randn(1, 2, 6, 4, dtype=%s), torch.randn(1, 2, 6, 4, dtype=%s), "
                  "torch.randn(1, 2, 6, 4, dtype=%s))" % (D, D, D),
        "fn": "(%s, lambda q, k, v: FlashAttentionFunction.apply(q, k, v, None, True, 4, 4))[1]" % _F64,
        "why": "FlashAttention.forward: q, k, v (b, h, n, d), causal, bucket sizes smaller than n (two tiles "
               "each way)",
    }, {
        "inputs": "(torch.randn(1, 2, 6, 4, dtype=%s), torch.randn(1, 2, 9, 4, dtype=%s), "
                  "torch.randn(1, 2, 9, 4, dtype=%s))" % (D, D, D),
        "fn": "(%s, lambda q, k, v: FlashAttentionFunction.apply(q, k, v, torch.tensor([[True] * 7 + [False] * 2]), "
              "False, 4, 3))[1]" % _F64,
        "why": "cross-attention (context longer than x, FlashAttention's `context`) with a key padding mask (b, n), "
               "unequal buckets. Not checked: causal with more keys than queries, where this code masks keys "
               "j > i - (n_k - n_q), so the first rows attend to nothing (softmax over an empty set)",
    }],
    "memory_efficient_attention_pytorch/cosine_sim_flash_attention.py::FlashAttentionFunction": [{
        "inputs": "(l2norm(torch.randn(1, 2, 6, 4, dtype=%s)), l2norm(torch.randn(1, 2, 6, 4, dtype=%s)), "
                  "torch.randn(1, 2, 6, 4, dtype=%s))" % (D, D, D),
        "fn": "(%s, lambda q, k, v: FlashAttentionFunction.apply(q, k, v, None, 16, False, 4, 4))[1]" % _F64,
        "expect": "fail",
        "why": "a real bug: forward clamps each key tile's row sum at EPSILON = 1e-6 (`block_row_sums.clamp(min="
               "EPSILON)`); with cosine-sim logits scale*(cos - 1) a tile whose keys are all far from the query sums "
               "below 1e-6, so the normaliser is wrong (the output is off the softmax by up to ~0.4 here) and "
               "backward, which differentiates the unclamped softmax, disagrees with it (with EPSILON = 1e-300 "
               "the same check passes). Inputs from the module FlashAttention: l2norm'd q and k, its default "
               "scale 16, bucket sizes below n",
    }],
    "memory_efficient_attention_pytorch/reversible.py::_ReversibleFunction": [{
        "inputs": "(torch.randn(2, 5, 6, dtype=%s),)" % D,
        "fn": "(lambda blocks: lambda x: _ReversibleFunction.apply(x, blocks, [{'f_args': {}, 'g_args': {}}] * 2))"
              "(nn.ModuleList([ReversibleBlock(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), "
              "nn.Sequential(nn.Linear(3, 3), nn.Tanh())) for _ in range(2)]).double())",
        "why": "ReversibleSequence.forward: x (b, n, 2d) split in two halves on dim 2, two ReversibleBlock(f, g), "
               "route args as dicts of f_args/g_args; the blocks' parameters get their gradients by side effect "
               "(only x's is returned)",
    }],
    # pyqtorch 1.7.8: gradients of a circuit's expectation value by adjoint differentiation and by parameter
    # shifts (pyqtorch.expectation with DiffMode.ADJOINT / GPSR, called here through the classes themselves)
    "pyqtorch/differentiation/adjoint.py::AdjointExpectation": [{
        "inputs": "tuple(torch.rand(2, dtype=%s) for _ in range(4))" % D,
        "fn": "(lambda pyq: (lambda circ, obs, state: lambda *v: AdjointExpectation.apply(circ, state, obs, None, "
              "%s, *v))(%s, %s, pyq.random_state(3)))(__import__('pyqtorch'))" % (_PQ_NAMES, _PQ_GPSR_CIRCUIT,
                                                                               _PQ_OBSERVABLE),
        "expect": "fail",
        "why": "a real bug: backward rewinds ctx.out_state and ctx.projected_state in place (applying each gate's "
               "dagger to them), so a second backward of the same graph (retain_graph=True) starts from the "
               "rewound states and returns wrong gradients (first call: right, e.g. [-0.43, -0.85]; second call: "
               "[-0.10, 0.46]); gradcheck reports it as 'Backward is not reentrant'. Inputs from pyqtorch's "
               "test_gpsr circuit_gpsr (3 qubits, RX/PHASE/CRX/CPHASE parameters), a Pauli-sum observable, a "
               "random state, a batch of 2 values per parameter",
    }],
    "pyqtorch/differentiation/gpsr.py::PSRExpectation": [{
        "inputs": "tuple(torch.rand(2, dtype=%s) for _ in range(4))" % D,
        "fn": "(lambda pyq: (lambda circ, obs, state: lambda *v: PSRExpectation.apply(circ, state, obs, None, "
              "pyq.api.analytical_expectation, %s, *v))(%s, %s, pyq.random_state(3)))(__import__('pyqtorch'))"
              % (_PQ_NAMES, _PQ_GPSR_CIRCUIT, _PQ_OBSERVABLE),
        "why": "pyqtorch's test_gpsr: circuit_gpsr (multi-gap generalized shift rule), an observable, a random "
               "state, a batch of 2 values per parameter, analytical_expectation as expectation.py passes it",
    }, {
        "inputs": "tuple(torch.rand(3, dtype=%s) for _ in range(3))" % D,
        "fn": "(lambda pyq: (lambda circ, obs, state: lambda *v: PSRExpectation.apply(circ, state, obs, None, "
              "pyq.api.analytical_expectation, ['x', 'y', 'theta'], *v))(pyq.QuantumCircuit(2, [pyq.RX(0, 'x'), "
              "pyq.RY(1, 'y'), pyq.X(1), pyq.Z(0), pyq.Y(0), pyq.H(0), pyq.T(1), pyq.S(1), pyq.SDagger(0), "
              "pyq.RX(0, 'theta'), pyq.RY(1, torch.pi / 2), pyq.CNOT(0, 1)]), pyq.Observable(pyq.Add([pyq.Z(0), "
              "pyq.X(1)])), pyq.random_state(2)))(__import__('pyqtorch'))",
        "why": "pyqtorch's test_gpsr circuit_psr: single-gap rotations (the plain parameter-shift rule)",
    }],
    # difftopk 0.2.0: differentiable top-k (sorting networks) and the smooth top-k SVM loss
    "difftopk/functional.py::NormalCDF": [{
        "inputs": "(0.3 * torch.randn(3, 4, dtype=%s), 1 / 10.0)" % D,
        "why": "execute_topk(..., distribution='gaussian'): NormalCDF.apply(b - a, 1 / steepness), steepness 10",
    }],
    "difftopk/smooth_topk.py::LogSumExp_F": [{
        "inputs": "(torch.randn(4, 6, dtype=%s),)" % D,
        "fn": "lambda x: LogSumExp(1)(x)",
        "expect": "fail",
        "why": "a real bug for k = 1: forward returns log sigma_0 (a constant 0) and log sigma_1 of exp(x), but "
               "backward gives log sigma_0 a gradient of 1 for every entry instead of 0 (recursion() has no terms "
               "for j = 0 and both parts fall back to the same placeholder). k = 1 is the top-1 smooth SVM: "
               "SmoothTopKLoss(num_classes, k=1) calls LogSumExp(1) on the scores (n_samples, n_classes - 1)",
    }, {
        "inputs": "(torch.randn(4, 6, dtype=%s),)" % D,
        "fn": "lambda x: LogSumExp(3)(x)",
        "why": "k = 3: right (informative, the label comes from #0)",
    }],
    # revlib 1.7.2 (reversible networks): two of its Functions carry activations through the gradient channel
    # (by design, see HELDOUT2_NOT_A_DERIVATIVE); these checks confirm they are not derivatives
    "revlib/core.py::_ReplaceGrad": [{
        "inputs": "(torch.randn(3, 4, dtype=%s), torch.randn(3, 4, dtype=%s), torch.zeros(3, 4, dtype=%s), "
                  "torch.zeros(3, 4, dtype=%s))" % (D, D, D, D),
        "expect": "fail",
        "why": "by design: backward returns the saved activations as the 'gradients' of the dummy inputs "
               "(ReversibleSequential.forward passes zeros as back)",
    }],
    "revlib/core.py::_ReversibleHalfResidualSwapFn": [{
        "inputs": "(torch.randn(3, 4, dtype=%s), torch.randn(3, 4, dtype=%s), torch.zeros(3, 4, dtype=%s), "
                  "torch.zeros(3, 4, dtype=%s))" % (D, D, D, D),
        "fn": "(lambda mod: lambda x0, x1, b0, b1: _ReversibleHalfResidualSwapFn.apply(x0, x1, b0, b1, mod, '', False, "
              "None, (), {})[:4])(ReversibleWrapper(torch.nn.Linear(4, 4).double()))",
        "expect": "fail",
        "why": "by design: backward returns the reconstructed activations x0, y0 as the 'gradients' of back_x0, "
               "back_x1 (ReversibleModule.forward: reverse_and_swap(x0, x1, *back, ...))",
    }],
    "revlib/core.py::TensorOffload": [{
        "inputs": "(torch.randn(3, 4, dtype=%s), torch.zeros(2, dtype=%s))" % (D, D),
        "why": "its docstring: offload `inp` to `reference`'s device (here both on the CPU); reference only "
               "gives the device",
    }],
}

# -- heldout3 -----------------------------------------------------------------------------------------

# A robot for pytorch-kinematics (its sdist ships no URDF): a tree with revolute joints about tilted axes, a
# prismatic joint, a fixed tool frame and a side branch, rotated origins throughout.
_PK_URDF = ("<robot name='arm'><link name='base'/><link name='l1'/><link name='l2'/><link name='l3'/>"
            "<link name='tool'/><link name='side'/>"
            "<joint name='j1' type='revolute'><parent link='base'/><child link='l1'/>"
            "<origin xyz='0 0 0.3' rpy='0 0 0'/><axis xyz='0 0 1'/>"
            "<limit lower='-3' upper='3' effort='1' velocity='1'/></joint>"
            "<joint name='j2' type='revolute'><parent link='l1'/><child link='l2'/>"
            "<origin xyz='0.1 0 0.2' rpy='0.3 0 0.1'/><axis xyz='0 1 0'/>"
            "<limit lower='-3' upper='3' effort='1' velocity='1'/></joint>"
            "<joint name='j3' type='prismatic'><parent link='l2'/><child link='l3'/>"
            "<origin xyz='0 0.2 0.1' rpy='0 0.2 0'/><axis xyz='1 0 0'/>"
            "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
            "<joint name='j4' type='fixed'><parent link='l3'/><child link='tool'/>"
            "<origin xyz='0 0 0.05' rpy='0.1 0.2 0.3'/></joint>"
            "<joint name='j5' type='revolute'><parent link='l1'/><child link='side'/>"
            "<origin xyz='0 0.1 0' rpy='0 0 0.5'/><axis xyz='0.6 0 0.8'/>"
            "<limit lower='-3' upper='3' effort='1' velocity='1'/></joint></robot>")


# TorchDiffEqPack's ODE right-hand side: an nn.Module f(t, y) (its adjoints read func.parameters()), made inside the
# checked module's namespace; t may be a float32 tensor (odesolve_adjoint casts t0) or a float
def _tdep(inner: str) -> str:
    """`inner` (an expression using `_tdep_func()`, which makes the ODE's nn.Module) as one expression."""
    return ("(lambda _tdep_func: %s)(lambda: (lambda m: (setattr(m, 'a', torch.nn.Parameter(0.5 + torch.rand(4, "
            "dtype=torch.float64))), m)[1])(type('ODEFunc', (torch.nn.Module,), {'forward': lambda self, t, y: "
            "-self.a * y + 0.5 * torch.sin(torch.as_tensor(t, dtype=y.dtype)) * y.flip(-1) - 0.3 * y ** 3})()))"
            % inner)


HELDOUT3: dict[str, list[dict]] = {
    # torch-hyperbolic 0.0.3 (torch_hyperbolic/utils.py): inverse hyperbolic functions computed in float64, used by
    # its PoincareBall (artanh of sqrt(c) |x| < 1) and Hyperboloid (arcosh of a Minkowski product >= 1) manifolds
    "torch_hyperbolic/utils.py::Artanh": [{
        "inputs": "(0.9 * (2 * torch.rand(3, 4, dtype=%s) - 1),)" % D,
        "why": "artanh(x) on (-1, 1), where the Poincare ball calls it (sqrt(c) * norm < 1); away from the clamp at "
               "1 - 1e-15",
    }],
    "torch_hyperbolic/utils.py::Arsinh": [{
        "inputs": "(3 * torch.randn(3, 4, dtype=%s),)" % D,
        "why": "arsinh(x) on the whole real line",
    }],
    "torch_hyperbolic/utils.py::Arcosh": [{
        "inputs": "(1.1 + 3 * torch.rand(3, 4, dtype=%s),)" % D,
        "why": "arcosh(x) for x > 1 (the Hyperboloid's sqrt(c) <x, y>_L); away from the clamp at 1 + 1e-15",
    }],
    # hypll 0.1.1: the Frechet mean on the Poincare ball, by a fixed-point iteration forward and implicit
    # differentiation (inverse Hessian of the Frechet variance) backward
    "hypll/manifolds/poincare_ball/math/stats.py::FrechetMean": [{
        "inputs": "((lambda x: 0.7 * x / (1 + x.norm(dim=-1, keepdim=True)))(torch.randn(2, 5, 3, dtype=%s)), "
                  "torch.tensor(1.0, dtype=%s))" % (D, D),
        "fn": "lambda x, c: frechet_mean(x, c, -1, [1], True)",
        "expect": "fail",
        "why": "a real bug: with keepdim=True forward unsqueezes the mean back to (2, 1, 3) but backward never "
               "removes those dimensions from grad_output, so frechet_ball_backward's torch.autograd.grad gets a "
               "gradient of shape (2, 2, 3) for an output (2, 3) and raises ('Mismatch in shape'), for any batch "
               "of more than one mean. frechet_variance(x, c) calls frechet_mean(..., keepdim=True) whenever mu is "
               "not given, and PoincareBall.frechet_mean exposes keepdim. Inputs: 2 sets of 5 points in the unit "
               "ball (vec_dim=-1, batch_dim=1), c = 1 (the unbatched (5, 3) case passes only because backward's "
               "bare .squeeze() happens to drop the single kept dimension)",
    }, {
        "inputs": "((lambda x: 0.7 * x / (1 + x.norm(dim=-1, keepdim=True)))(torch.randn(5, 3, dtype=%s)), "
                  "torch.tensor(1.0, dtype=%s))" % (D, D),
        "fn": "lambda x, c: frechet_mean(x, c, -1, 0, False)",
        "why": "PoincareBall.frechet_mean(x, batch_dim=0): frechet_mean(x, c=self.c(), vec_dim=man_dim, batch_dim) "
               "with points inside the ball of radius 1/sqrt(c) and the positive curvature c = softplus(value) "
               "of Curvature (learnable with requires_grad=True: backward returns its gradient too). Right "
               "(informative: the label comes from #0)",
    }, {
        "inputs": "((lambda x: 0.7 * x / (1 + x.norm(dim=1, keepdim=True)))(torch.randn(2, 3, 4, dtype=%s)), "
                  "torch.tensor(0.7, dtype=%s))" % (D, D),
        "fn": "lambda x, c: frechet_mean(x, c, 1, [2], False)",
        "why": "a batch of 2 means, the manifold dimension not last (vec_dim=1, as a ManifoldTensor's man_dim "
               "may be), the points on the last dimension (batch_dim=[2], as HAvgPool2d's frechet_mean(x, "
               "batch_dim=2)), curvature 0.7: right without keepdim (informative)",
    }],
    # pytorch-kinematics 0.10.0: forward kinematics computed on a detached th, then _FKAnalyticalBackward attaches
    # the geometric Jacobian as the gradient of the link poses w.r.t. the joint values
    "pytorch_kinematics/chain.py::_FKAnalyticalBackward": [{
        "inputs": "(torch.rand(2, 4, dtype=%s) * 2 - 1,)" % D,
        "fn": "(lambda c: lambda th: Chain(c.to(dtype=torch.float64)._root, dtype=torch.float64)"
              ".forward_kinematics_tensor(th))"
              "(__import__('pytorch_kinematics').build_chain_from_urdf(%r))" % _PK_URDF,
        "why": "Chain.forward_kinematics_tensor(th) with th (B, n_joints) requiring grad (the analytical path, its "
               "default), its only call site. The Function itself passes T_world_link through and returns the gradient "
               "for th, so it is checked through that method, on a tree robot (revolute joints about tilted axes, "
               "a prismatic joint, a fixed frame, two branches) built from a URDF string as in "
               "build_chain_from_urdf's docstring; the Chain made in float64 (chain.to(dtype=torch.float64))",
    }],
    # torchgw 0.4.2: entropic optimal transport (log-domain Sinkhorn) for sampled Gromov-Wasserstein
    "torchgw/_solver.py::_SinkhornImplicit": [{
        "inputs": "(torch.rand(4, 5, dtype=%s),)" % D,
        "fn": "(lambda a, b: lambda C: _SinkhornImplicit.apply(C, a, b, 0.3, 5000, 1e-13, 10))"
              "(torch.ones(4, dtype=%s) / 4, (lambda w: w / w.sum())(torch.rand(5, dtype=%s) + 0.5))" % (D, D),
        "why": "_sinkhorn_differentiable(C, a, b, reg, grad_mode='implicit') as test_sinkhorn_grad calls it: a cost "
               "C (N, K), marginals a, b; iterated to a marginal error of 1e-13 (the implicit gradient is the one of "
               "the fixed point). The marginals are constants (sampled_gw's p and q: uniform, or weights the user "
               "gives; backward returns None for them by design of the API), passed through the wrapper",
    }],
    "torchgw/_solver.py::_SinkhornApproximate": [{
        "inputs": "(torch.rand(4, 5, dtype=%s),)" % D,
        "fn": "(lambda a, b: lambda C: _SinkhornApproximate.apply(C, a, b, 0.3, 5000, 1e-13, 10, False, 1.0))"
              "(torch.ones(4, dtype=%s) / 4, (lambda w: w / w.sum())(torch.rand(5, dtype=%s) + 0.5))" % (D, D),
        "expect": "fail",
        "why": "by design: 'frozen-potentials approximation ... dT/dC ~ -T/eps (treats potentials as constants). "
               "Fast but inexact' (its docstring; grad_mode='approximate')",
    }],
    # TorchDiffEqPack 1.0.1: the adaptive checkpoint adjoint (ACA, odesolve_adjoint) and the asynchronous leapfrog
    # adjoint (MALI, odesolve_adjoint_sym12) of Neural ODEs; both end backward with `del ctx.z0, ctx.state0` (and
    # MALI `ctx.ans`), so a graph can be differentiated once only
    "TorchDiffEqPack/odesolver_mem/adjoint.py::Checkpointing_Adjoint": [{
        "inputs": "(torch.randn(4, dtype=%s), torch.tensor(1.0, dtype=%s))" % (D, D),
        "fn": _tdep("(lambda m: lambda y0, t1: odesolve_adjoint(m, y0, {'method': 'dopri5', 'h': None, "
                    "'t0': 0.0, 't1': t1, 'rtol': 1e-8, 'atol': 1e-8, 'print_neval': False, 'neval_max': 500000}))"
                    "(_tdep_func())"),
        "expect": "fail",
        "why": "a real bug: backward ends with `del z0, ctx.z0, state0, ctx.state0`, so a second backward of the same "
               "graph (retain_graph=True, as gradcheck's reentrancy check and any user computing two gradients do) "
               "raises AttributeError: 'Checkpointing_AdjointBackward' object has no attribute 'z0'. A first "
               "backward alone is right (checked by hand on this ODE: its gradients for y0, t1 and the parameter "
               "agree with central differences to ~1e-4). Inputs from odesolve_adjoint's docstring: func an "
               "nn.Module f(t, y), y0, options method 'dopri5', t0, t1, rtol, atol, print_neval, neval_max; func's "
               "parameter is held fixed here (odesolve_adjoint flattens func.parameters() into the Function's "
               "flat_params input)",
    }, {
        "inputs": "(torch.randn(4, dtype=%s),)" % D,
        "fn": _tdep("(lambda m: lambda y0: odesolve_adjoint(m, y0, {'method': 'rk2', 'h': 0.1, 't0': 0.0, "
                    "'t1': 1.0, 'print_neval': False}))(_tdep_func())"),
        "expect": "fail",
        "why": "a second real bug: with the fixed-grid methods odesolve_adjoint's docstring lists ('euler', 'rk2'), "
               "the first backward already raises TypeError: 'NoneType' object is not iterable (their step returns "
               "error=None and backward calls list(error)); h 0.1 as the docstring requires for fixed-step solvers",
    }],
    "TorchDiffEqPack/odesolver_mem/adjoint_mem.py::Checkpointing_Adjoint": [{
        "inputs": "(torch.randn(4, dtype=%s), torch.tensor(1.0, dtype=%s))" % (D, D),
        "fn": _tdep("(lambda m: lambda y0, t1: odesolve_adjoint_sym12(m, y0, {'method': 'sym12async', "
                    "'h': None, 't0': 0.0, 't1': t1, 'rtol': 1e-6, 'atol': 1e-6, 'print_neval': False, "
                    "'neval_max': 500000}))(_tdep_func())"),
        "expect": "fail",
        "why": "a real bug: backward ends with `del state0, ctx.state0, ans, ctx.ans, ctx.z0`, so a second backward "
               "of the same graph (retain_graph=True) raises AttributeError ('... has no attribute ...'). A first "
               "backward alone is right within MALI's tolerance (checked by hand on this ODE: y0's and t1's "
               "gradients agree with central differences to ~1e-3). Inputs from odesolve_adjoint_sym12's "
               "docstring: method 'sym12async', h None, t0, t1, rtol and atol (1e-6, tighter than the suggested "
               "1e-3), print_neval, neval_max; func's parameter held fixed as above",
    }],
    # pytopk 0.1.0: the smoothed top-k of Garcin et al. (ICML 2022), the k-th largest of x + epsilon * Z averaged
    # over noise samples Z; backward is the exact gradient for those samples (the averaged one-hot of the argmax)
    "pytopk/noised_topk.py::_NoisedTopK": [{
        "inputs": "(torch.randn(3, 6, dtype=%s),)" % D,
        "fn": "(lambda Z: lambda x: _NoisedTopK.apply(x, Z, 2, 1.0, -1, -1))(torch.randn(3, 6, 5, dtype=%s))" % D,
        "why": "NoisedTopK(k=2, epsilon=1.0, n_sample=5, dim=-1).forward: Z = randn(*x.size(), n_sample), "
               "_noised_topk(x, Z, k, epsilon, dim, dim_offset=-1). Z is the sampled noise, not a parameter (its "
               "gradient is None by design): drawn once and held fixed by the wrapper",
    }, {
        "inputs": "(torch.randn(6, 3, dtype=%s),)" % D,
        "fn": "(lambda Z: lambda x: _NoisedTopK.apply(x, Z, 3, 0.5, 0, 0))(torch.randn(6, 3, 4, dtype=%s))" % D,
        "why": "dim=0 (dim_offset 0, the other branch of NoisedTopK._set_offset), k=3, epsilon=0.5, 4 samples",
    }],
    # magic-clamp 0.0.4: clamps and projections whose backward is a straight-through / projected-gradient rule
    "magic_clamp/autograd.py::ClampWithConditionalSTEFunction": [{
        "inputs": "(2 * torch.randn(3, 4, dtype=%s),)" % D,
        "fn": "lambda x: ClampWithConditionalSTEFunction.apply(x, -1.0, 1.0, True)",
        "expect": "fail",
        "why": "by design: 'Clamps in the forward pass and applies the conditional STE in the backward pass' "
               "(magic_clamp(x, -1, 1)); some entries outside [-1, 1]",
    }],
    "magic_clamp/autograd.py::ConstraintWithHyperPGDFunction": [{
        "inputs": "(2 * torch.randn(3, 4, dtype=%s),)" % D,
        "fn": "lambda x: ConstraintWithHyperPGDFunction.apply(x, lambda v: v * (v.norm(dim=-1, keepdim=True)"
              ".clamp(max=1.0) / v.norm(dim=-1, keepdim=True).clamp(min=1e-12)), True, -1)",
        "expect": "fail",
        "why": "by design: 'Applies an idempotent constraint in the forward pass, and uses it in the backward pass "
               "as a projection operator for hyper PGD' (magic_sphere(x, radius=1): project_to_sphere); rows of "
               "norm above 1",
    }],
}

# -- heldout4 -----------------------------------------------------------------------------------------

_C = "torch.complex128"
# an SPD matrix with a repeated eigenvalue: Q diag(1, 1, 2, 3) Q^T (Q orthogonal)
_SPD_TIED = ("(lambda Q: (Q * torch.tensor([1.0, 1.0, 2.0, 3.0], dtype=%s)) @ Q.mT)(torch.linalg.qr(torch.randn(4, 4, "
             "dtype=%s))[0])" % (D, D))
# a batch of well-conditioned SPD matrices (2, 4, 4)
_SPD_BATCH = "(lambda A: A @ A.mT + 4 * torch.eye(4, dtype=%s))(torch.randn(2, 4, 4, dtype=%s))" % (D, D)
# a single-process gloo group (a file store, no network), for ring-attention-pytorch's collective
_GLOO = ("(dist.is_initialized() or dist.init_process_group('gloo', init_method='file://' + "
         "__import__('tempfile').mktemp(), rank=0, world_size=1))")
# srf-attention computes in float32 inside (its README: 'All intermediate computations done in FP32'): finite
# differences of step 1e-3, tolerances above float32 rounding
_FP32_INSIDE = {"eps": 1e-3, "atol": 1e-3, "rtol": 1e-3}
_RING = "RingFlashAttentionFunction.apply(q, k, v, %s)"

HELDOUT4: dict[str, list[dict]] = {
    # torch-betainc 0.2.1: the regularized incomplete beta function I_x(a, b) by a continued fraction, with the
    # derivatives in a and b carried through the same recurrence (after Zwaenepoel's IncBetaDer, its docstring says)
    "torch_betainc/betainc.py::Betainc": [{
        "inputs": "(0.5 + 3 * torch.rand(8, dtype=%s), 0.5 + 3 * torch.rand(8, dtype=%s), 0.05 + 0.9 * torch.rand(8, "
                  "dtype=%s), DEFAULT_EPSILON, DEFAULT_MIN_APPROX, DEFAULT_MAX_APPROX)" % (D, D, D),
        "why": "betainc(a, b, x)'s docstring: a, b > 0, x in [0, 1], element-wise batches, the default epsilon, "
               "min_approx and max_approx; x on both sides of a / (a + b), so both branches of the symmetry "
               "I_x(a, b) = 1 - I_{1-x}(b, a) run (test_gradcheck checks the single point (2, 3, 0.5))",
    }, {
        "inputs": "(torch.tensor(2.5, dtype=%s), 0.5 + 3 * torch.rand(3, 1, dtype=%s), torch.tensor([[-0.2, 0.15, "
                  "0.5, 0.85, 1.3]], dtype=%s))" % (D, D, D),
        "fn": "lambda a, b, x: betainc(a, b, x)",
        "why": "broadcasting (a scalar, b (3, 1), x (1, 5)), as its 'Batch computation' example; x outside [0, 1] "
               "at both ends (test_x_below_zero, test_x_above_one: the constant 0 and 1), through the public betainc",
    }],
    # torchesnufft 0.1.2: spreading and interpolation with the exponential-of-semicircle kernel, the two halves of
    # a NUFFT (nufft1 spreads, nufft2 interpolates, nufft3 and get_density both); alpha, h and n are the grid's
    # kernel width, spacing and size from helpers.setup (functions of the integer grid size only: backward returns
    # None for them by design)
    "torchesnufft/utils/spreadinterp.py::SpreadFunction": [{
        "inputs": "(lambda p: (2 * torch.pi * torch.rand(1, 7, dtype=%s), torch.randn(2, 3, 7, dtype=%s), p[0], p[1], "
                  "1, p[2], p[3]))(helpers.setup(1, (5,), 1e-3, torch.float64, 'cpu'))" % (D, _C),
        "no_grad": [2, 5],
        "why": "nufft1 in 1-D: x (d, M) in [0, 2 pi) as the tests draw it, c (B, C, M) complex strengths, the grid "
               "parameters from helpers.setup(d, N, eps) (N = (5,), eps 1e-3); alpha and h are not differentiable "
               "inputs (grid constants)",
    }, {
        "inputs": "(lambda p: (2 * torch.pi * torch.rand(2, 6, dtype=%s), torch.rand(1, 2, 6, dtype=%s) + 0.5, p[0], "
                  "p[1], 2, p[2], p[3]))(helpers.setup(2, (4, 3), 1e-2, torch.float64, 'cpu'))" % (D, D),
        "no_grad": [2, 5],
        "why": "2-D, real positive strengths (get_density spreads its real density weights), N = (4, 3), eps 1e-2",
    }],
    "torchesnufft/utils/spreadinterp.py::InterpFunction": [{
        "inputs": "(lambda p: (2 * torch.pi * torch.rand(1, 7, dtype=%s), torch.randn(2, 3, int(p[3]), dtype=%s), "
                  "p[0], p[1], 1, p[2], p[3]))(helpers.setup(1, (5,), 1e-3, torch.float64, 'cpu'))" % (D, _C),
        "no_grad": [2, 5],
        "why": "nufft2 in 1-D: targets x (d, M) in [0, 2 pi), b (B, C, n) the complex oversampled grid, grid "
               "parameters from helpers.setup as nufft2 calls it (N = (5,), eps 1e-3)",
    }, {
        "inputs": "(lambda p: (2 * torch.pi * torch.rand(2, 6, dtype=%s), torch.randn((1, 2) + tuple(p[3].tolist()), "
                  "dtype=%s), p[0], p[1], 2, p[2], p[3]))(helpers.setup(2, (4, 3), 1e-2, torch.float64, 'cpu'))"
                  % (D, _C),
        "no_grad": [2, 5],
        "why": "2-D (N = (4, 3), eps 1e-2): b (B, C, *n)",
    }],
    # torchspd 0.1.2: F(A) = V f(L) V^T of a symmetric matrix with the Daleckii-Krein backward; one Function, its
    # modes chosen by the public wrappers (f and the divided-difference builder g_builder)
    "src/torchspd/torchspd.py::_SpectralCore": [{
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda a: sqrtm(a)",
        "why": "the README's usage: A = X X^T + n I, batched; sqrtm (the closed-form G for sqrt)",
    }, {
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda a: invsqrtm(a)",
        "why": "invsqrtm on the same SPD batch",
    }, {
        "inputs": "(%s,)" % _SPD_TIED,
        "fn": "lambda a: logm(a)",
        "why": "logm of an SPD matrix with a repeated eigenvalue: the series in delta replaces the divided "
               "difference (the README: 'numerically stable near repeated ... eigenvalues')",
    }, {
        "inputs": "(0.5 * %s,)" % _SPD_BATCH,
        "fn": "lambda a: expm(a, return_eig=True)[0]",
        "why": "expm with return_eig=True (without it expm falls back to torch.linalg.matrix_exp, not this "
               "Function); the eigenpairs it also returns are marked non-differentiable",
    }, {
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda a: (powm(a, 0.3), powm(a, -0.7))",
        "why": "the README's powm(A, 0.3), and a negative power",
    }, {
        "inputs": "(%s,)" % _SPD_TIED,
        "fn": "lambda a: apply_quad(a, torch.log1p, lambda x: 1 / (1 + x))",
        "why": "the README's apply_quad(A, log1p, 1 / (1 + x)), on a repeated eigenvalue (the Gauss-Legendre "
               "branch for close eigenvalues)",
    }, {
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda a: sqrtm(a, eig=_eig_sym(a))",
        "why": "the README's 'Reuse eigenpairs': sqrtm(A, eig=(L, V)) with L, V the eigenpairs of A (here made from "
               "A at every call, so the output moves with A)",
    }],
    # torchsolve 0.0.1: conjugate gradient on regularised normal equations, differentiated implicitly (one more
    # solve backward, and a pseudo-loss for the parameters the operator closes over)
    "src/torchsolve/_cg.py::_ImplicitSolve": [{
        "inputs": "(torch.randn(6, dtype=%s), torch.tensor(0.7, dtype=%s))" % (D, D),
        "fn": "(lambda B: lambda rhs, w: conjugate_gradient(lambda v: B @ v + w * v, rhs, max_iter=300, rtol=1e-14, "
              "parameters=[w]).solution)((lambda M: M @ M.T + 6 * torch.eye(6, dtype=%s))(torch.randn(6, 6, "
              "dtype=%s)))" % (D, D),
        "why": "test_gradient_reaches_an_operator_parameter: an SPD operator basis @ v + weight * v, the weight "
               "named in parameters=, the right-hand side differentiable too (conjugate_gradient's docstring: "
               "'Differentiable in rhs and in parameters'); max_iter 300, rtol 1e-14 as the tests use, so that "
               "the solve is converged",
    }, {
        "inputs": "(torch.randn(2, 6, dtype=%s), torch.tensor(0.7, dtype=%s), torch.randn(2, 6, dtype=%s))"
                  % (_C, D, _C),
        "fn": "(lambda B, grad, div: lambda rhs, w, bias: conjugate_gradient(lambda v: v @ B.T, rhs, regularizers=["
              "Regularizer(0.1), Regularizer(0.5, operator=lambda v: w * grad(v), adjoint=lambda u: w * div(u), "
              "bias=bias)], preconditioner=lambda r: r / 7.0, batch_dim=0, max_iter=300, rtol=1e-14, "
              "parameters=[w]).solution)((lambda M: (M @ M.T + 6 * torch.eye(6, dtype=%s)).to(%s))(torch.randn(6, 6, "
              "dtype=%s)), lambda v: torch.diff(v, dim=-1, append=v[..., :1]), lambda u: -torch.diff(u, dim=-1, "
              "prepend=u[..., -1:]))" % (D, _C, D),
        "why": "the README's regularised solve: complex data (its README times a complex volume), a Tikhonov term and a shaped term "
               "Regularizer(0.5, operator=gradient, adjoint=divergence) with a bias (a periodic finite difference "
               "and its adjoint), a preconditioner, a batch of 2 independent systems (batch_dim=0); the weight "
               "inside the shaped term's operator is a parameter, the bias reaches the solve through the "
               "right-hand side",
    }, {
        "inputs": "(torch.randn(6, dtype=%s), torch.randn(6, dtype=%s))" % (D, D),
        "fn": "(lambda B: lambda rhs, x0: conjugate_gradient(lambda v: B @ v, rhs, x0=x0, max_iter=300, rtol=1e-14)"
              ".solution)((lambda M: M @ M.T + 6 * torch.eye(6, dtype=%s))(torch.randn(6, 6, dtype=%s)))" % (D, D),
        "no_grad": [1],
        "why": "a starting iterate x0 (its docstring); x0 only starts the iteration (the converged solution does not "
               "depend on it, and backward returns None for it), so it is not checked",
    }],
    # srf-attention 1.0.16: linear (simplex random feature) attention, out = (S v) / (S 1) with S = q k^T on positive
    # features, recomputed chunk by chunk in backward; it computes in float32 whatever the input dtype
    "srf_attention/torch_low_mem_attn.py::Attention": [{
        "inputs": "(0.2 + torch.rand(1, 2, 6, 4, dtype=%s), 0.2 + torch.rand(1, 2, 6, 4, dtype=%s), torch.randn(1, 2, "
                  "6, 4, dtype=%s))" % (D, D, D),
        "fn": "lambda q, k, v: low_mem_attn(q, k, v, 1.0, True, 4)",
        "options": _FP32_INSIDE,
        "expect": "fail",
        "why": "a real bug: backward ignores sm_scale and always uses the default q.shape[-1] ** -0.5 (`s = (q_chunk "
               "@ k.transpose(-1, -2)) * q.shape[-1] ** -0.5` and the same in dS), while forward's row sums are "
               "made with the sm_scale passed; the scale cancels in the output (the same output for any sm_scale) "
               "but every gradient comes out multiplied by default / sm_scale (0.5 here, with sm_scale = 1.0 and "
               "d = 4). sm_scale is the public low_mem_attn's (exported in __init__) fourth argument. Inputs: "
               "positive q, k (the module Attention feeds it softmax-kernel features, exp(...) > 0), v any, "
               "(B, H, L, D), causal, chunk_size 4 < L (two chunks); float32 inside, so finite differences of "
               "step 1e-3 and tolerances 1e-3 (with sm_scale 0.5, the default for d = 4, the same check passes)",
    }, {
        "inputs": "(0.2 + torch.rand(1, 2, 6, 4, dtype=%s), 0.2 + torch.rand(1, 2, 6, 4, dtype=%s), torch.randn(1, 2, "
                  "6, 4, dtype=%s))" % (D, D, D),
        "fn": "lambda q, k, v: low_mem_attn(q, k, v, None, True, 4)",
        "options": _FP32_INSIDE,
        "why": "sm_scale None, as att.Attention.forward_train_torch calls it (low_mem_attn(q, k, v, None, causal, "
               "chunk_size)): right (informative: the label comes from #0)",
    }, {
        "inputs": "(0.2 + torch.rand(2, 1, 5, 3, dtype=%s), 0.2 + torch.rand(2, 1, 5, 3, dtype=%s), torch.randn(2, 1, "
                  "5, 3, dtype=%s))" % (D, D, D),
        "fn": "lambda q, k, v: low_mem_attn(q, k, v, None, False, None)",
        "options": _FP32_INSIDE,
        "why": "not causal, one chunk (chunk_size None): right (informative)",
    }],
    # ring-attention-pytorch 0.5.20: flash attention (tiled online softmax) whose key/value tiles can travel around a
    # ring of processes; on one process (no process group: world size 1) the ring is a single pass. Its
    # accumulators are made in the default dtype, so the checks run with float64 as the default dtype. Not
    # checked: ring_reduce_col / striped_ring_attn, which send tiles to the other ranks (a world of one cannot
    # connect its gloo pair to itself). ring_flash_attention_cuda.py::RingFlashAttentionCUDAFunction has no
    # hand check: it runs only on CUDA (its forward imports the Triton kernels of triton_flash_attn.py)
    "ring_attention_pytorch/ring_flash_attention.py::RingFlashAttentionFunction": [{
        "inputs": "tuple(torch.randn(1, 8, 2, 4, dtype=%s) for _ in range(3))" % D,
        "fn": "(%s, lambda q, k, v: %s)[1]" % (_F64, _RING % "None, True, 4, False, False, None, None, False, 50.0"),
        "why": "ring_flash_attn(q, k, v, causal=True, bucket_size=4) as RingAttention.forward calls it on one "
               "process: q, k, v (b, n, h, d), two buckets each way",
    }, {
        "inputs": "tuple(torch.randn(1, 8, 2, 4, dtype=%s) for _ in range(3))" % D,
        "fn": "(%s, lambda q, k, v: %s)[1]" % (_F64, _RING % "torch.tensor([[True] * 6 + [False] * 2]), False, 4, "
                                                              "False, False, None, None, False, 50.0"),
        "why": "not causal, with a key padding mask (b, n) hiding the last two keys",
    }, {
        "inputs": "(torch.randn(1, 8, 4, 4, dtype=%s), torch.randn(1, 8, 2, 4, dtype=%s), torch.randn(1, 8, 2, 4, "
                  "dtype=%s))" % (D, D, D),
        "fn": "(%s, lambda q, k, v: %s)[1]" % (_F64, _RING % "None, True, 2, False, False, 4, None, True, 2.0"),
        "why": "grouped-query attention (4 query heads, 2 key/value heads: RingAttention's num_grouped_query_heads), "
               "softclamped logits (ring_flash_attn's softclamp_qk_sim, value 2 so that the tanh bends), a causal "
               "lookback window (RingAttention's max_lookback_seq_len, 4) with buckets of 2",
    }, {
        "inputs": "(torch.randn(2, 6, 2, 4, dtype=%s), torch.randn(2, 9, 2, 4, dtype=%s), torch.randn(2, 9, 2, 4, "
                  "dtype=%s))" % (D, D, D),
        "fn": "(%s, lambda q, k, v: %s)[1]" % (_F64, _RING % "torch.tensor([[True] * 9, [True] * 7 + [False] * 2]), "
                                                              "False, 4, False, False, None, None, False, 50.0"),
        "why": "cross-attention (6 queries, 9 keys: the Function's cross_attn case) with a per-batch key padding "
               "mask, buckets of 4 (a last partial bucket)",
    }],
    "ring_attention_pytorch/distributed.py::AllGatherFunction": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D,
        "fn": "(%s, lambda x: AllGatherFunction.apply(x, 0, None)[0])[1]" % _GLOO,
        "why": "AllGather(dim=0)(x) as sharded_batch_to_sharded_seq calls it, in an initialised process group (a "
               "single gloo process here): gathers x from every rank along dim, backward takes this rank's slice "
               "of the gradient",
    }, {
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D,
        "fn": "(%s, lambda x: AllGatherFunction.apply(x, 1, torch.tensor([4]))[0])[1]" % _GLOO,
        "why": "another dim (sharded_seq_to_sharded_batch gathers along -2), with AllGather.forward's sizes given "
               "(no gather_sizes call)",
    }],
    # egnlib 0.2.2: spectral functions of SPD matrices (one eigh, Loewner-matrix backward), the trunk of its
    # equivariant geodesic networks; force_sym=True (or sym() first, as geometry.py does) because eigh reads one
    # triangle only
    "src/egn/functional.py::_SpectralMap": [{
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda M: logm(M, force_sym=True)",
        "why": "test_gradcheck_spectral: logm on a batch of SPD matrices (spd(2, 4, 4)); force_sym=True",
    }, {
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda M: (expm(0.3 * M, force_sym=True), sqrtm(M, force_sym=True), invsqrtm(M, force_sym=True))",
        "why": "test_gradcheck_spectral's other operators: expm, sqrtm, invsqrtm",
    }, {
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda M: powm(sym(M), 0.3)",
        "why": "geometry.geodesic: powm(sym(inv @ B @ inv), t) with t in (0, 1)",
    }, {
        "inputs": "((lambda Q: (Q * torch.tensor([0.3, 0.6, 1.5, 2.5], dtype=%s)) @ Q.mT)(torch.linalg.qr("
                  "torch.randn(4, 4, dtype=%s))[0]),)" % (D, D),
        "fn": "lambda M: reeig(M, 1.0, force_sym=True)",
        "why": "ReEig (layers.py: reeig(S, self.floor)) with the floor (1.0) between the eigenvalues, so that two "
               "of them are clamped to the same value (the tied case its Loewner guard is for)",
    }, {
        "inputs": "(%s,)" % _SPD_TIED,
        "fn": "lambda M: logm(M, force_sym=True)",
        "why": "test_gradcheck_with_repeated_eigenvalues: 'The Loewner backward must survive an exact eigenvalue "
               "tie'",
    }],
    "src/egn/functional.py::_SqrtPair": [{
        "inputs": "(%s,)" % _SPD_BATCH,
        "fn": "lambda M: sqrtm_pair(M, force_sym=True)",
        "why": "sqrtm_pair(S): (S^1/2, S^-1/2) from one eigh, as geometry.py and manifolds.py use it; both "
               "outputs",
    }, {
        "inputs": "(%s,)" % _SPD_TIED,
        "fn": "lambda M: sqrtm_pair(sym(M))",
        "why": "a repeated eigenvalue (the Loewner guard), sym() first as geometry.py does",
    }],
    # gsmc-torch 0.2.0: the Heaviside spike of its spiking cells with surrogate gradients (by design, see
    # HELDOUT4_NOT_A_DERIVATIVE); these checks confirm they are not derivatives
    "gsmc_torch/surrogate.py::ATanSurrogate": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D,
        "fn": "lambda x: surrogate_spike(x)",
        "expect": "fail",
        "why": "by design: the Heaviside step forward, the arctan surrogate derivative backward (surrogate_spike, "
               "gradient_mode='surrogate'); membrane values away from the threshold 0",
    }],
    "gsmc_torch/surrogate.py::ExactSpike": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D,
        "fn": "lambda x: surrogate_spike(x, theta=torch.tensor(0.5, dtype=torch.float64), gradient_mode='exact')",
        "expect": "fail",
        "why": "by design: the Heaviside step forward, a spike-time (IFT) flux backward (surrogate_spike, "
               "gradient_mode='exact', theta 0.5)",
    }],
}

# -- heldout5 -----------------------------------------------------------------------------------------

_SEMIRING = "__import__('torch_semiring_einsum').compile_equation(%r)"
# a random symmetric matrix (6, 6): ncut-pytorch's affinities are symmetric
_SYM6 = "(lambda M: 0.5 * (M + M.T))(torch.randn(6, 6, dtype=%s))" % D

# torchdae's test problem (tests/test_adjoint_sensitivity.py::_make_F): an index-1 DAE whose residual closes over p
_DAE_F = ("(lambda t, y, yp: torch.stack([yp[..., 0] + y[..., 0] - p[0] * y[..., 1], y[..., 0] + y[..., 1] - p[1] * "
          "torch.sin(torch.as_tensor(t, dtype=y.dtype))], dim=-1))")

HELDOUT5: dict[str, list[dict]] = {
    # torch-dxdt 0.1.1: the Whittaker-Eilers smoother z = (I + lmbda D^T D)^-1 x by a Cholesky solve, the same factor
    # reused backward (A is symmetric); lmbda and d_order are Whittaker's constructor constants (floats, ints)
    "torch_dxdt/whittaker.py::WhittakerFunction": [{
        "inputs": "(torch.randn(2, 12, dtype=%s), 100.0, 2)" % D,
        "why": "Whittaker(lmbda=100.0).smooth / dxdt(kind='whittaker', lmbda=100.0) as the tests call it: x (B, T), "
               "lmbda 100, a second-order difference penalty (the default d_order)",
    }, {
        "inputs": "(torch.sin(torch.linspace(0, 3, 9, dtype=%s)).repeat(3, 1) + 0.1 * torch.randn(3, 9, dtype=%s), "
                  "0.5, 1)" % (D, D),
        "why": "a noisy sine batch (B = 3), little smoothing (lmbda 0.5), a first-order penalty (d_order 1)",
    }, {
        "inputs": "(torch.randn(1, 10, dtype=%s), 3.0, 3)" % D,
        "why": "a third-order penalty (d_order 3, the highest _build_difference_matrix supports)",
    }],
    # torch-semiring-einsum 1.2.0: einsum in the log semiring (logsumexp of sums), summed block by block; backward
    # recomputes the blocks, optionally from the saved maxima and sums of exponentials
    "torch_semiring_einsum/log_differentiable.py::LogEinsumFunction": [{
        "inputs": "(torch.randn(2, 3, 4, dtype=%s), torch.randn(2, 4, 5, dtype=%s))" % (D, D),
        "fn": "lambda a, b: log_einsum(%s, a, b, block_size=2)" % (_SEMIRING % "bik,bkj->bij"),
        "why": "log_einsum's docstring: a pre-compiled equation (compile_equation) and its operands; a batched "
               "log-space matrix product, summed in blocks of 2 (block_size), saving the maxima and sums "
               "(save_max, save_sumexpsub: the defaults)",
    }, {
        "inputs": "(torch.randn(3, 4, dtype=%s), torch.randn(4, 2, dtype=%s), torch.randn(2, 3, dtype=%s))" % (D, D, D),
        "fn": "lambda a, b, c: log_einsum(%s, a, b, c, block_size=3, save_max=False, save_sumexpsub=False)"
              % (_SEMIRING % "ij,jk,kl->il"),
        "why": "three operands, two summed variables, nothing saved (save_max=False, save_sumexpsub=False: backward "
               "recomputes the maxima and sums)",
    }, {
        "inputs": "(torch.randn(3, 4, dtype=%s), torch.randn(4, dtype=%s))" % (D, D),
        "fn": "lambda a, b: log_einsum(%s, a, b)" % (_SEMIRING % "ij,j->"),
        "why": "a reduction to a scalar output, the automatic block size",
    }],
    # efficientnet-pytorch 0.7.1: MemoryEfficientSwish, x * sigmoid(x) with a hand-written derivative
    "efficientnet_pytorch/utils.py::SwishImplementation": [{
        "inputs": "(3 * torch.randn(2, 3, 4, 4, dtype=%s),)" % D,
        "why": "MemoryEfficientSwish.forward(x) = SwishImplementation.apply(x), the activation of EfficientNet's "
               "blocks: a (B, C, H, W) feature map",
    }],
    # koopman 0.1.0: Z = [z0, K z0, ..., K^T z0] by a forward scan, the adjoint recurrence backward
    "koopman/torch/linear_powers.py::LinearPowersSequenceFn": [{
        "inputs": "(torch.randn(4, 4, dtype=%s), torch.randn(4, dtype=%s), 6)" % (D, D),
        "why": "test_gradcheck: K (n, n), z0 (n,), n = 4, T = 6, float64",
    }, {
        "inputs": "(0.4 * torch.randn(3, 3, dtype=%s), torch.randn(3, dtype=%s), 1)" % (D, D),
        "why": "a single step (T = 1), a contracting K",
    }],
    # ncut-pytorch 3.2.0: projectors U_S U_S^T onto chosen eigenvectors of a symmetric matrix (one eigh), the
    # eigengap-divided backward
    "ncut_pytorch/utils/grad.py::EigvecOuterProduct": [{
        "inputs": "(%s, torch.tensor([[True, True, False, False, False, False], [False, False, True, True, True, "
                  "False]]), 1e-6, True)" % _SYM6,
        "why": "eigvec_outer_product(A, masks) as its __main__ example calls it: A symmetric, masks (B, N) bool in "
               "descending eigen-order (the top 2, then the next 3), the default gap_eps and symmetrize=True",
    }, {
        "inputs": "(torch.randn(5, 5, dtype=%s), torch.tensor([[False, False, False, False, True]]), 1e-6, True)" % D,
        "why": "a non-symmetric A, symmetrised by forward (symmetrize=True, the default: 'symmetric (or will be "
               "symmetrized if symmetrize=True)'), the smallest eigenvector's projector",
    }],
    # diffcb 0.1.15: Silverman's critical bandwidth h_crit (the smallest KDE bandwidth with one mode) by root finding
    # on a smooth mode count, differentiated by the implicit function theorem; float64 throughout (DCBLayer takes
    # X's dtype)
    "dcb/layer.py::DCBFunction": [{
        "inputs": "(torch.cat([torch.randn(30) - 1.0, torch.randn(30) + 1.0]).double(),)",
        "fn": "lambda X: DCBLayer(use_fft=False, use_richardson=False)(X)",
        "options": {"eps": 1e-3, "atol": 0.05, "rtol": 0.2},
        "why": "test_gradcheck_smooth_path: a bimodal sample of 60 points, the default DCBLayer "
               "(forward_path='smooth', 'forward and backward use the same smooth surrogate') without FFT or "
               "Richardson, the test's tolerances (eps 1e-3, atol 0.05, rtol 0.2: 'the hard bisection root-finder "
               "introduces O(1%) quantisation noise')",
    }],
    "dcb/layer.py::DCBFunctionBatched": [{
        "inputs": "(torch.stack([torch.cat([torch.randn(25) - 1.0, torch.randn(25) + 1.0]), torch.cat([torch.randn(25) "
                  "- 1.5, 0.5 * torch.randn(25) + 1.0])]).double(),)",
        "fn": "lambda xs: DCBFunctionBatched.apply(xs, __import__('dcb.training', fromlist=['TrainingLayer'])"
              ".TrainingLayer(use_fft=False, use_richardson=False)._b5_config())",
        "options": {"eps": 1e-3, "atol": 0.05, "rtol": 0.2},
        "why": "DCBFunctionBatched.apply(xs_stacked, cfg) as TrainingLayer.forward_batched_grad(xs) calls it (cfg = "
               "the layer's _b5_config(); its docstring: K distributions of the same n, stacked (K, n)), "
               "K = 2 bimodal samples of 50 points, the same layer settings and tolerances as "
               "test_gradcheck_smooth_path",
    }],
    "dcb/_fold_search.py::_FoldAggregate": [{
        "inputs": "(torch.cat([torch.randn(40) - 1.5, torch.randn(40) + 1.5]).double(),)",
        "fn": "lambda z: fold_h_crit_z(z)",
        "options": {"eps": 1e-4, "atol": 1e-3, "rtol": 1e-2},
        "why": "fold_h_crit_z(z) as h_tilde and signal_recovery call it: the largest fold bandwidth of a bimodal 1-D "
               "sample, the fold (x*, h*) found from z.detach() outside and passed in, so only through the public "
               "wrapper is the output a function of z",
    }],
    # qsparse 2.0.1: quantisers with straight-through gradient estimators (by design, see HELDOUT5_NOT_A_DERIVATIVE);
    # these checks confirm they are not derivatives
    "qsparse/quantize.py::DecimalQuantization": [{
        "inputs": "(torch.randn(2, 3, 4, dtype=%s), 8, 5, -1, False, False, False)" % D,
        "expect": "fail",
        "why": "by design: quantize_with_decimal's defaults (8 bits, decimal 5, channel_index -1); a step function "
               "forward, the straight-through gradient backward",
    }],
    "qsparse/quantize.py::ScalerQuantization": [{
        "inputs": "(torch.randn(2, 3, 4, dtype=%s), 8, 0.1, -1, False, False, False)" % D,
        "expect": "fail",
        "why": "by design: quantize_with_scaler's defaults (8 bits, scaler 0.1)",
    }],
    "qsparse/quantize.py::LineQuantization": [{
        "inputs": "(torch.rand(2, 3, 4, dtype=%s) - 0.1, 8, (-0.1, 0.9), -1, False, True)" % D,
        "expect": "fail",
        "why": "by design: quantize_with_line's defaults (8 bits, lines (-0.1, 0.9)), values inside the lines",
    }],
    # torchdae 0.1.1: a discrete adjoint of the implicit (backward Euler, BDF1) DAE solver: forward solves without a
    # graph, backward runs the adjoint recurrence (M^T + h J^T) lam_n = M_{n+1}^T lam_{n+1} + h grad_ys[n] back to y0
    # and accumulates the parameters' gradients from F's closure
    "torchdae/adjoint_sensitivity.py::DAEAdjointFunction": [{
        "inputs": "(torch.tensor([[0.5, -0.5]], dtype=%s), torch.tensor([1.5, 1.0], dtype=%s))" % (D, D),
        "fn": "lambda y0, p: DAEAdjointFunction.apply(y0, (0.0, 0.5), 0.1, %s, "
              "__import__('torchdae.bdf', fromlist=['solve_bdf1']).solve_bdf1, p)" % _DAE_F,
        "expect": "fail",
        "why": "a real bug: forward returns the whole trajectory ys, whose first row is y0 itself (solve_bdf1: "
               "ys = [y0.clone()] + steps), but backward never adds grad_ys[0] to grad_y0 (its loop stops at n = 1 and "
               "grad_y0 = M^T lam / h only), so d ys[0] / d y0 = I comes back as 0 (the gradcheck's first Jacobian "
               "column: numerical 1, analytical 0). Inputs from test_adjoint_gradient_correctness: the index-1 "
               "problem y1' + y1 - p1 y2 = 0, y1 + y2 = p2 sin t, y0 = [[0.5, -0.5]], p = [1.5, 1.0] passed as params, "
               "solver_fn solve_bdf1; h 0.1 on (0, 0.5) instead of 0.01 on (0, 1) (fewer steps)",
    }, {
        "inputs": "(torch.tensor([[0.5, -0.5]], dtype=%s), torch.tensor([1.5, 1.0], dtype=%s))" % (D, D),
        "fn": "lambda y0, p: DAEAdjointFunction.apply(y0, (0.0, 0.5), 0.1, %s, "
              "__import__('torchdae.bdf', fromlist=['solve_bdf1']).solve_bdf1, p)[1:]" % _DAE_F,
        "why": "the same solve, every row but ys[0]: right (informative: the steps' adjoint and the parameters' "
               "gradients are exact; the test's loss reads ys[-1] only)",
    }],
    # exact-snn-nn 3.2.3: time-to-first-spike neurons, spike times found by a grid scan, bisection and Newton, their
    # gradients by the implicit function theorem (u(t*) = theta); float64 as the tests use (DTYPE = torch.float64).
    # Not checked (no hand check): event.py::_ExactEventLayerFn, extended.py::_ExactMultiSpikeFn,
    # extended.py::_ExactTTFSConvFn, recurrent.py::_ExactTTFSRnnStepFn (not labelled within this round's time)
    "exact_snn/__init__.py::_ExactTTFSLayerFn": [{
        "inputs": "(torch.cat([0.5 + 0.5 * torch.rand(3, 4, dtype=%s), torch.full((3, 1), 0.5, dtype=%s)], 1), "
                  "torch.tensor([[0.3, 0.8], [0.6, 0.2], [1.0, 1.2], [6.0, 7.0]], dtype=%s))" % (D, D, D),
        "fn": "lambda W, t: _ExactTTFSLayerFn.apply(W, t, 0.0, 1.0, 15.0, 4.0, False, ExactTTFSLinear._compute_k_peak("
              "15.0, 4.0), torch.linspace(0.0, 40.0, 2001, dtype=torch.float64), 1e-2)",
        "options": {"eps": 1e-2, "atol": 5e-3, "rtol": 2e-2},
        "why": "ExactTTFSLinear(4, 3).forward's call with its defaults (tm 15, ts 4, theta 1, t_max 40, grid_pts 2001, "
               "t_bias 0, peak_tol 1e-2): W (n_out, n_in + 1) with the bias column last (bias 0.5), input spike times "
               "(n_in, B); every neuron fires (~1.7-2.0), three inputs spike before that and one after (it must get "
               "no gradient), and no input spike lies within 0.1 of an output, so the causal set does not change "
               "under the step. The spike time is found to ~3e-7 only (16 bisections of a grid cell of 0.02), so "
               "finite differences of step 1e-2 and tolerances above that",
    }],
    "exact_snn/attention.py::ExactAttentionCombineFn": [{
        "inputs": "tuple(5.0 + 10.0 * torch.rand(3, 2, dtype=%s) for _ in range(3))" % D,
        "fn": "lambda q, k, v: ExactAttentionCombineFn.apply(q, k, v, 15.0, 4.0, False, 1.0, 1.0, 40.0, 'gaussian')",
        "expect": "fail",
        "why": "a real bug: out[q, b] = sum_k attn[q, k, b] t_v[k, b], so d out / d t_v[k, b] = sum_q grad_out[q, b] "
               "attn[q, k, b], but backward returns attn.sum(dim=0) * grad_out, i.e. (sum_q attn[q, k, b]) * "
               "grad_out[k, b] (grad_out indexed by the key): right only when grad_out is the same for every query "
               "(gradcheck: a diagonal analytical Jacobian for t_v, a full numerical one; the t_q and t_k gradients "
               "agree). Inputs as ExactSpikingAttention.forward calls it: Q, K, V spike times (n, B) with nq = nk "
               "(test_square_requirement), finite, combine 'gaussian' (the default), temp 1, t_max 40; k_peak is "
               "unused by the gaussian alignment",
    }],
}

# -- heldout6 -----------------------------------------------------------------------------------------

# torchdeform: observation points around a buried fault, B = 2 scenes of N = 4 points (kilometre-scale numbers in its
# metre units: Okada's fields are scale-free), none on the fault trace or its singular lines; z (B,) below the surface
_OK_OBS = ("torch.tensor([[-3.0, 1.5, 4.0, 0.7], [2.5, -1.2, 0.4, -4.1]], dtype=%s), "
           "torch.tensor([[2.0, -2.5, 1.0, 3.3], [-1.7, 3.1, -2.6, 0.9]], dtype=%s)" % (D, D))
_OK_SRC = ("torch.tensor([0.2, -0.3], dtype=%s), torch.tensor([-0.1, 0.4], dtype=%s), "  # source_x, source_y
           "torch.tensor([0.7, 1.1], dtype=%s), torch.tensor([0.3, 2.0], dtype=%s), "  # dip, strike (radians)
           "torch.tensor([3.0, 4.0], dtype=%s), torch.tensor([4.0, 3.0], dtype=%s), "  # centroid depth, length
           "torch.tensor([2.0, 1.5], dtype=%s), torch.tensor([1.0, -0.5], dtype=%s), "  # width, strike slip
           "torch.tensor([0.5, 0.8], dtype=%s), torch.tensor([0.2, 0.1], dtype=%s)" % ((D,) * 10))  # dip slip, opening

# torch-sla: a 5 x 5 sparse matrix in COO (row, col fixed; values the checked input), diagonally dominant
_SLA_ROW = "torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4])"
_SLA_COL = "torch.tensor([0, 1, 4, 0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4])"
_SLA_VAL = ("(torch.where(%s == %s, 4.0, -1.0).to(%s) + 0.3 * torch.rand(14, dtype=%s))" % (_SLA_ROW, _SLA_COL, D, D))

HELDOUT6: dict[str, list[dict]] = {
    # torchdeform 0.3.0: Okada (1992) displacements of a rectangular dislocation; the analytic_grad mode's Function
    # returns the closed-form strain for the observation coordinates and the source position (translation
    # invariance), and autograd of the exact forward (with a finite-difference band near vertical dip) for the rest
    "torchdeform/sources/okada.py::_OkadaAnalyticFn": [{
        "inputs": "(%s, torch.tensor([-0.5, -1.0], dtype=%s), %s)" % (_OK_OBS, D, _OK_SRC),
        "fn": "lambda *a: _OkadaAnalyticFn.apply(OkadaSource(analytic_grad=True), *a)",
        "why": "OkadaSource(analytic_grad=True).forward(x_obs, y_obs, z_obs, source_x, ...) calls "
               "_OkadaAnalyticFn.apply(self, *args): _evaluate's shapes (x_obs, y_obs (B, N); z_obs (B,) <= 0; source "
               "parameters (B,)), a dipping fault (0.7 and 1.1 rad, away from the vertical band), buried (centroid depth "
               "> width/2 sin dip), observation points off the fault plane",
    }, {
        "inputs": "(%s, -torch.rand(2, 4, dtype=%s), %s)" % (_OK_OBS, D, _OK_SRC),
        "fn": "lambda *a: _OkadaAnalyticFn.apply(OkadaSource(analytic_grad=True), *a)",
        "why": "per-point observation depths z_obs (B, N) ('[B] (or per-pixel [B, N])'), between 0 and 1 below the "
               "surface",
    }],
    "torchdeform/sources/okada.py::_OkadaSimpleAnalyticFn": [{
        "inputs": "(%s, %s)" % (_OK_OBS, _OK_SRC),
        "fn": "lambda *a: _OkadaSimpleAnalyticFn.apply(OkadaSourceSimple(analytic_grad=True), *a)",
        "why": "OkadaSourceSimple(analytic_grad=True).forward(x_obs, y_obs, source_x, ...) (the surface-only z = 0 "
               "model), the same fault and observation points",
    }],
    # torchspin 0.6.0: torch.linalg.eigh with a backward that drops the 1/(l_j - l_i) terms of (near-)degenerate pairs
    # (exact for gauge-invariant losses); checked on a symmetrised input (eigh reads one triangle) and with eigenvector
    # signs / phases fixed (an eigenvector is defined up to one)
    "torchspin/_linalg.py::_EighDegenerateSafe": [{
        "inputs": "(torch.randn(2, 4, 4, dtype=%s),)" % D,
        "fn": "lambda A: (lambda L, V: (L, V * V[..., :1, :].sign()))(*_EighDegenerateSafe.apply(A + A.mT))",
        "why": "eigh(H) with H.requires_grad: a batch of real symmetric matrices (H + H^T, as torch's own eigh "
               "gradchecks build Hermitian inputs), distinct eigenvalues, eigenvectors' signs fixed by their first row",
    }, {
        "inputs": "(torch.randn(3, 3, dtype=torch.complex128),)",
        "fn": "lambda A: (lambda L, V: (L, V * (V[..., :1, :].conj() / V[..., :1, :].abs())))"
              "(*_EighDegenerateSafe.apply(A + A.mH))",
        "why": "a complex Hermitian matrix (torchspin's spin Hamiltonians are Hermitian), eigenvector phases fixed by "
               "making their first entries real and positive",
    }],
    # torchidl 0.0.4: the implicit model's hidden state X = relu(A X + B U) by Picard iterations, its gradients by the
    # implicit function theorem (a second fixed point for the adjoint); the initial guess X0 gets a zero gradient
    "torchidl/implicit_function.py::ImplicitFunction": [{
        "inputs": "(0.3 * torch.randn(5, 5, dtype=%s) / 5 ** 0.5, torch.randn(5, 3, dtype=%s), torch.zeros(5, 4, "
                  "dtype=%s), torch.randn(3, 4, dtype=%s))" % (D, D, D, D),
        "fn": "lambda A, B, X0, U: (ImplicitFunction.set_parameters(mitr=500, grad_mitr=500, tol=1e-13, "
              "grad_tol=1e-13, kappa=0.99), ImplicitFunction.apply(A, B, X0, U))[1]",
        "why": "ImplicitModel.forward's call f.apply(A, B, X0, U) with A (n, n) inside the well-posed ball "
               "(||A||_inf < kappa = 0.99, so Picard converges), B (n, p), X0 (n, m) zeros (its default), U (p, m) "
               "the transposed batch; tolerances tightened from the defaults 3e-6 to 1e-13 so the fixed point (and "
               "its independence of X0) is exact to round-off",
    }],
    # torch-sla 0.4.0: sparse solves A u = b (COO values val, indices row, col) with adjoint backwards
    # (grad_b = A^-H grad_u, grad_val = -grad_b[row] u[col]); checked on A's non-zero values and b
    "torch_sla/linear_solve.py::SparseLinearSolveScipySuperLU": [{
        "inputs": "(%s, torch.randn(5, dtype=%s))" % (_SLA_VAL, D),
        "fn": "lambda v, b: SparseLinearSolveScipySuperLU.apply(v, %s, %s, (5, 5), b, 'lu', 1e-10, 10000)"
              % (_SLA_ROW, _SLA_COL),
        "why": "spsolve(val, row, col, shape, b, backend='scipy') calls it with method 'lu' (SuperLU), atol 1e-10, "
               "maxiter 10000 (its defaults); a non-symmetric diagonally dominant 5 x 5 matrix, b (n,)",
    }, {
        "inputs": "(%s, torch.randn(5, 2, dtype=%s))" % (_SLA_VAL, D),
        "fn": "lambda v, b: SparseLinearSolveScipySuperLU.apply(v, %s, %s, (5, 5), b, 'lu', 1e-10, 10000)"
              % (_SLA_ROW, _SLA_COL),
        "why": "two right-hand sides, b (n, 2) (the '[n, nrhs] multi-RHS layout')",
    }],
    "torch_sla/linear_solve.py::SparseLinearSolvePyTorch": [{
        "inputs": "(%s, torch.randn(5, dtype=%s))" % (_SLA_VAL, D),
        "fn": "lambda v, b: SparseLinearSolvePyTorch.apply(v, %s, %s, (5, 5), b, 'bicgstab', 1e-14, 1e-14, 1000, "
              "'jacobi', False)" % (_SLA_ROW, _SLA_COL),
        "why": "spsolve(..., backend='pytorch', method='bicgstab') (a non-symmetric A: BiCGStab, not CG), the Jacobi "
               "preconditioner (the default), tolerances tightened to 1e-14 so the iterative solve is exact to "
               "round-off",
    }],
    "torch_sla/linear_solve.py::SparseLinearSolvePyAMG": [{
        "inputs": "(%s, torch.randn(5, dtype=%s))" % (_SLA_VAL, D),
        "fn": "lambda v, b: SparseLinearSolvePyAMG.apply(v, %s, %s, (5, 5), b, 1e-14, 1000, 'ruge_stuben')"
              % (_SLA_ROW, _SLA_COL),
        "options": {"nondet_tol": 1e-7}, "expect": "fail",
        "why": "a real bug, in forward: the AMG hierarchy (which holds the fine-level matrix) is cached under a key "
               "whose value fingerprint (solver_cache._value_fingerprint) samples only val[0], val[n//3], "
               "val[2n//3], val[-1] and sum(|val|), so two value vectors that differ only in unsampled entries but "
               "have the same abs-sum collide and the second solve reuses the first's hierarchy: the returned u "
               "solves the wrong matrix (measured: perturbing val[3] by 1e-3 after val[1] gives |u - u_SuperLU| = "
               "7.6e-5; gradcheck's numerical Jacobian rows for val[3], val[5], val[8], val[11], val[12] equal "
               "val[1]'s). Inputs: spsolve(..., backend='pyamg') with its default variant (Ruge-Stuben), tolerance "
               "tightened to 1e-14",
    }, {
        "inputs": "(%s, torch.randn(5, dtype=%s))" % (_SLA_VAL, D),
        "fn": "lambda v, b: (__import__('torch_sla.solver_cache', fromlist=['SOLVER_CACHE']).SOLVER_CACHE.clear(), "
              "SparseLinearSolvePyAMG.apply(v, %s, %s, (5, 5), b, 1e-14, 1000, 'ruge_stuben'))[1]"
              % (_SLA_ROW, _SLA_COL),
        "options": {"nondet_tol": 1e-7},
        "why": "the same solve with the cache cleared before each call (nondet_tol: an iterative V-cycle adjoint is "
               "reproducible to its tolerance only): right (informative: the adjoint backward "
               "itself is exact; only the cached forward is wrong)",
    }],
    "torch_sla/sparse_tensor/autograd.py::SparseSolveFunction": [{
        "inputs": "(%s, torch.randn(5, dtype=%s))" % (_SLA_VAL, D),
        "fn": "lambda v, b: SparseSolveFunction.apply(v, %s, %s, (5, 5), b, 'lu', 1e-10, 10000)" % (_SLA_ROW, _SLA_COL),
        "why": "the SparseTensor solve path: SciPy SuperLU ('lu'), the same matrix and b as spsolve's",
    }],
    "torch_sla/batch_solve.py::BatchSparseLinearSolveSameLayout": [{
        "inputs": "(torch.stack([%s, %s]), torch.randn(2, 5, dtype=%s))" % (_SLA_VAL, _SLA_VAL, D),
        "fn": "lambda V, B: BatchSparseLinearSolveSameLayout.apply(V, %s, %s, (5, 5), B, 'bicgstab', 1e-14, 10000)"
              % (_SLA_ROW, _SLA_COL),
        "why": "spsolve_batch_same_layout(val_batch [batch, nnz], row, col, shape, b_batch [batch, m]) with its "
               "default method (bicgstab), atol tightened from 1e-10 to 1e-14; two matrices of one pattern",
    }],
    "torch_sla/sparse_tensor/autograd.py::SparseSparseMatmulFunction": [{
        "inputs": "(%s, %s)" % (_SLA_VAL, _SLA_VAL),
        "fn": "lambda a, b: SparseSparseMatmulFunction.apply(a, %s, %s, (5, 5), b, %s, %s, (5, 5))[0]"
              % (_SLA_ROW, _SLA_COL, _SLA_ROW, _SLA_COL),
        "why": "SparseTensor @ SparseTensor calls it with both operands' (values, row, col, shape); the product's "
               "values (the returned indices are integers)",
    }],
    "torch_sla/sparse_tensor/autograd.py::DetAdjoint": [{
        "inputs": "(%s,)" % _SLA_VAL,
        "fn": "lambda v: DetAdjoint.apply(v, %s, %s, (5, 5), torch.device('cpu'), False)" % (_SLA_ROW, _SLA_COL),
        "why": "SparseTensor.det() calls DetAdjoint.apply(values, row, col, (M, N), device, is_cuda); a non-singular "
               "5 x 5 matrix on CPU",
    }],
    # omnibias-binary 0.1.0a2: hard quantisers with smooth-surrogate backwards, by design (HELDOUT6_NOT_A_DERIVATIVE)
    "omnibias/binary/torch/ops/quantize.py::_BinarizeFn": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D, "fn": "lambda z: _BinarizeFn.apply(z, 10.0)",
        "expect": "fail", "why": "by design: binarize(z) with its default beta 10",
    }],
    "omnibias/binary/torch/ops/quantize.py::_Binarize01Fn": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D, "fn": "lambda z: _Binarize01Fn.apply(z, 10.0)",
        "expect": "fail", "why": "by design: binarize01(z) with its default beta 10",
    }],
    "omnibias/binary/torch/ops/quantize.py::_TernarizeFn": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D, "fn": "lambda z: _TernarizeFn.apply(z, 10.0, 0.5)",
        "expect": "fail", "why": "by design: ternarize(z) with its defaults (beta 10, delta 0.5)",
    }],
    "omnibias/binary/torch/ops/quantize.py::_KBitQuantizeFn": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D, "fn": "lambda z: _KBitQuantizeFn.apply(z, 2, -1.0, 1.0, 10.0)",
        "expect": "fail", "why": "by design: kbit_quantize(z) with its defaults (2 bits on [-1, 1], beta 10)",
    }],
    "omnibias/binary/torch/ops/surrogate.py::_BinarizeCurvatureFn": [{
        "inputs": "(torch.randn(3, 4, dtype=%s),)" % D, "fn": "lambda z: _BinarizeCurvatureFn.apply(z, 10.0)",
        "expect": "fail", "why": "by design: binarize_curvature(z) with its default beta 10",
    }],
}

# -- heldout7 -----------------------------------------------------------------------------------------

# torchgdm: real arguments of its integer-order Bessel functions, away from Y's and K's singularity at 0 (its tests
# use linspace(0.01, 5)); the Functions take the complex tensor Jn/Yn/In/Kn make of a real one (_promote_cplx: "pass
# the (real-valued) complex tensor through unchanged") and are differentiated along the real axis
_GDM_X = "0.5 + 4.5 * torch.rand(6, dtype=%s)" % D
_GDM_REAL = "lambda n, x: %s.apply(n, x.to(torch.complex128))"
# a 2 x 2 x 2 cuboid of dipoles (step 20 nm, eps 6 + 0.3j: its adjoint tests' material) in vacuum at 700 nm, lit by a
# plane wave; the operator data (polarisabilities, self-terms, the FFT Green's lookup) and the right-hand side as
# LinearSystemIterativeFFT.solve builds them, promoted to complex128 (its DTYPE_COMPLEX is complex64), GMRES
# tolerances tightened from 1e-6 to 1e-13
_GDM_ITER = (
    "((tg := __import__('torchgdm')), (env := tg.env.EnvHomogeneous3D(env_material=1.0)), "
    "(st := tg.struct3d.StructDiscretizedCubic3D(discretization_config=tg.struct3d.cuboid(2, 2, 2), step=20.0, "
    "materials=tg.materials.MatConstant(eps=6.0 + 0.3j))), "
    "(sim := tg.Simulation(structures=[st], environment=env, illumination_fields=[tg.env.freespace_3d.PlaneWave("
    "inc_angle=0.3)], wavelengths=torch.tensor([700.0]))), (kop := GreensKernelFFT()), kop._setup_grid(sim), "
    "(sim._get_all_e0(700.0).to(torch.complex128), st.get_polarizability_pE(700.0, env).to(torch.complex128), "
    "st.get_selfterm_pE(700.0, env).to(torch.complex128), kop.get_kernel_fft(700.0, env, cache=False)"
    ".to(torch.complex128), None, kop, dict(rtol=1e-13, adjoint_rtol=1e-13, restart=100, max_restarts=50, "
    "preconditioner='jacobi', stats={}, x0=None, state=None)))[-1]")

# largesteps: the uniform Laplacian of an octahedron (6 vertices, 8 faces) as laplacian_uniform builds it (on the CPU:
# its code puts the values on 'cuda'), M = I + lambda L with lambda = 19 (compute_matrix)
_LS_LAPLACIAN = (
    "(lambda F: (lambda adj: torch.sparse_coo_tensor(torch.cat((adj, torch.arange(6).repeat(2, 1)), 1), "
    "torch.cat((-torch.ones(adj.shape[1], dtype=%s), torch.bincount(adj[0], minlength=6).to(%s))), (6, 6)))"
    "(torch.stack([torch.cat([F[:, [1, 2, 0]].flatten(), F[:, [2, 0, 1]].flatten()]), torch.cat([F[:, [2, 0, 1]]"
    ".flatten(), F[:, [1, 2, 0]].flatten()])], 0).unique(dim=1)))(torch.tensor([[0, 2, 4], [2, 1, 4], [1, 3, 4], "
    "[3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]]))")
_LS_M = ("(torch.sparse_coo_tensor(torch.arange(6).repeat(2, 1), torch.ones(6, dtype=%%s), (6, 6)) + 19.0 * %s)"
         ".coalesce()" % _LS_LAPLACIAN)

# solwa: a tabulated dispersive material in its file layout (wavelength, n, k), 400-800 nm every 10 nm: a Cauchy
# index and a Lorentzian absorption band at 600 nm (a dye-doped film), interpolated by interp1d(kind='cubic') as
# Material does
_SW_NK = ("(lambda wl: __import__('numpy').stack([wl, 1.5 + 5e4 / wl ** 2, 0.3 * 30.0 ** 2 / ((wl - 600.0) ** 2 + "
          "30.0 ** 2)], 1))(__import__('numpy').linspace(400.0, 800.0, 41))")
_SW_INTERP = "__import__('scipy.interpolate', fromlist=['interp1d']).interp1d(%s[:, 0], %s[:, %d], kind='cubic')"

HELDOUT7: dict[str, list[dict]] = {
    # torchgdm 0.61: J_n, Y_n, I_n, K_n by recurrences from torch.special's orders 0 and 1, backwards by the
    # derivative recurrences (J' = (J_n-1 - J_n+1)/2, I' = (I_n-1 + I_n+1)/2, K' = -(K_n-1 + K_n+1)/2), each calling
    # the Function again for the neighbouring orders
    "torchgdm/tools/special.py::_gradJn": [{
        "inputs": "(torch.tensor(%d, dtype=torch.int), %s)" % (n, _GDM_X), "fn": _GDM_REAL % "_gradJn",
        "why": "Jn(n, x) for real x calls _gradJn.apply(n, x) (orders 0 and 1; higher orders on the elements with "
               "|x| >= |n|, the Miller recurrence elsewhere): order %d, x in (0.5, 5) (its tests: n from -3 to 3, "
               "x in [0.01, 5])" % n,
    } for n in (0, 1, 3, -2)],
    "torchgdm/tools/special.py::_gradYn": [{
        "inputs": "(torch.tensor(%d, dtype=torch.int), %s)" % (n, _GDM_X), "fn": _GDM_REAL % "_gradYn",
        "why": "Yn(n, x) for real x: _gradYn.apply(n, x), order %d, x > 0" % n,
    } for n in (0, 1, 3, -2)],
    "torchgdm/tools/special.py::_gradIn": [{
        "inputs": "(torch.tensor(%d, dtype=torch.int), %s)" % (n, _GDM_X), "fn": _GDM_REAL % "_gradIn",
        "why": "In(n, x) for real x: _gradIn.apply(n, x), order %d" % n,
    } for n in (0, 1, 3, -2)],
    "torchgdm/tools/special.py::_gradKn": [{
        "inputs": "(torch.tensor(%d, dtype=torch.int), %s)" % (n, _GDM_X), "fn": _GDM_REAL % "_gradKn",
        "why": "Kn(n, z) calls _gradKn.apply(n, z) with z real-valued complex (complex64 there; complex128 here): "
               "order %d, x > 0" % n,
    } for n in (0, 1, 3, -2)],
    # J/Y/H1/H2 on the positive imaginary axis z = i x by the K/I identities; backward is grad * conj(f'(z)) with the
    # holomorphic derivative, checked along the axis it is evaluated on (z = i x, x real: df/dx = i f'(z))
    "torchgdm/tools/special.py::_grad_cplx_axis": [{
        "inputs": "(%d, %d, %s)" % (n, kind, _GDM_X), "fn": "lambda n, kind, x: _grad_cplx_axis.apply(n, kind, 1j * x)",
        "why": "_dispatch_real_or_cplx calls _grad_cplx_axis.apply(n, axis_kind, z) for the elements on the positive "
               "imaginary axis (n in 0, 1, 2; kind 0 = H1, 1 = H2, 2 = J, 3 = Y): order %d, kind %d, z = i x with "
               "x in (0.5, 5) (its tests: 1j * linspace(0.05, 5))" % (n, kind),
    } for n, kind in ((0, 0), (1, 1), (2, 2), (1, 3), (2, 0))],
    # the coupled-dipole system (I - (S + G) alpha) x = b by batched GMRES, backward by the adjoint solve A^H lam = g
    # and a vjp of A(theta) x
    "torchgdm/linearsystem_iterative.py::_IterativeSolveFn": [{
        "inputs": _GDM_ITER, "options": {"fast_mode": True}, "timeout": 600,
        "why": "LinearSystemIterativeFFT.solve's call _IterativeSolveFn.apply(b, alphas, selfterms, Ktilde, rowphase, "
               "kernel_op, opts) for a 3D structure (rowphase None), with preconditioner='jacobi' (the branch whose "
               "block inverse and its adjoint the backward uses too) and a restart of 100; fast mode (random "
               "projections): the slow Jacobians of b, alphas and selfterms alone took 274 s (and Ktilde has 243 "
               "complex entries more)",
    }],
    # torch-bounds 0.2.0: DCT/DST of types I-III along one or several dimensions, each norm; backward is the transform
    # of the flipped type (II <-> III) with the inverse norm and the ortho pre/post scalings
    "bounds/_realtransforms_autograd.py::DCTN": [{
        "inputs": "(torch.randn(4, 6, dtype=%s), 2, -1, 'backward')" % D,
        "why": "dct(x) with its defaults: DCTN.apply(x, type=2, dim=-1, norm='backward')",
    }, {
        "inputs": "(torch.randn(3, 4, 5, dtype=%s), 3, [0, 2], 'ortho')" % D,
        "why": "dctn(x, dim=[0, 2], norm='ortho', type=3) (idctn of type II with norm 'ortho')",
    }, {
        "inputs": "(torch.randn(4, 6, dtype=%s), 1, [0, 1], 'forward')" % D,
        "why": "dctn(x, norm='forward', type=1) over both dimensions",
    }, {
        "inputs": "(torch.randn(5, 4, dtype=%s), 2, 0, 'ortho_scipy')" % D,
        "why": "dct(x, dim=0, norm='ortho_scipy') (scipy's orthogonalised type II)",
    }],
    "bounds/_realtransforms_autograd.py::DSTN": [{
        "inputs": "(torch.randn(4, 6, dtype=%s), 2, -1, 'backward')" % D,
        "why": "dst(x) with its defaults: DSTN.apply(x, type=2, dim=-1, norm='backward')",
    }, {
        "inputs": "(torch.randn(3, 4, 5, dtype=%s), 3, [1, 2], 'ortho_scipy')" % D,
        "why": "dstn(x, dim=[1, 2], norm='ortho_scipy', type=3)",
    }, {
        "inputs": "(torch.randn(4, 6, dtype=%s), 1, -1, 'forward')" % D,
        "why": "dst(x, norm='forward', type=1)",
    }, {
        "inputs": "(torch.randn(5, 4, dtype=%s), 2, [0, 1], 'ortho')" % D,
        "why": "dstn(x, norm='ortho') (type II over both dimensions)",
    }],
    # torchisotonic 0.2.1: pool-adjacent-violators fit (its C++ operator), backward averages the gradient over the
    # fit's blocks (and (y - fit) times it for the weights)
    "torchisotonic/_api.py::_Isotonic": [{
        "inputs": "(torch.randn(4, 13, dtype=%s), torch.rand(4, 13, dtype=%s) + 0.1, True, True)" % (D, D),
        "why": "isotonic(y, w) calls _Isotonic.apply(flat_y, flat_w, increasing, exact) on [batch, n] rows; its "
               "test_grad: y randn (4, 13), weights rand + 0.1, float64",
    }, {
        "inputs": "(torch.randn(3, 9, dtype=%s), None, False, True)" % D,
        "why": "isotonic(y, increasing=False) without weights (flat_w None)",
    }],
    # largesteps 0.2.2: x = M^-1 b by a prefactored sparse Cholesky (cholespy), backward the same solve (M symmetric)
    "largesteps/solvers.py::DifferentiableSolve": [{
        "inputs": "(CholeskySolver(%s), torch.randn(6, 3))" % (_LS_M % ("torch.float32", "torch.float32",
                                                                         "torch.float32")),
        "options": {"eps": 1e-3, "atol": 1e-4, "rtol": 1e-3},
        "why": "from_differential(M, u) (method 'Cholesky', its default) calls solve(CholeskySolver(M), u) with u "
               "(V, 3) vertex differential coordinates; CholeskySolverF is single precision (float32 M and u), and "
               "the solve is linear in u, so a larger step has no truncation error",
    }],
    # geomstats 2.8.0: logm by scipy, backward by the block-triangular Frechet identity logm([[A^H, G], [0, A^H]])
    "geomstats/_backend/pytorch/linalg.py::_Logm": [{
        "inputs": "((lambda B: B @ B.mT + 0.5 * torch.eye(4, dtype=%s))(torch.randn(4, 4, dtype=%s)),)" % (D, D),
        "why": "gs.linalg.logm of a symmetric positive definite matrix (its SPD manifolds' log maps)",
    }, {
        "inputs": "(2.0 * torch.eye(3, dtype=%s) + 0.3 * torch.randn(2, 3, 3, dtype=%s),)" % (D, D),
        "why": "a batch (the 'vectorized' ndim == 3 branch) of non-symmetric matrices near 2 I (real logarithms)",
    }],
    # solwa 0.1.0: torch.linalg.eig with a backward that broadens 1/(l_j - l_i) by a Lorentzian (1e-10); eigenvectors
    # are defined up to a complex scale each, so they are checked normalised by their first entries (RCWA's
    # S-matrices are invariant to that scale)
    "solwa/torch_eig.py::Eig": [{
        "inputs": "(torch.randn(4, 4, dtype=torch.complex128) + torch.diag(torch.arange(4, dtype=%s) * 2.0)"
                  ".to(torch.complex128),)" % D,
        "fn": "lambda A: (lambda L, V: (L, V / V[..., :1, :]))(*Eig.apply(A))",
        "why": "RCWA's Eig.apply(P @ Q): a complex (lossy) matrix with distinct eigenvalues",
    }, {
        "inputs": "(torch.randn(4, 4, dtype=%s),)" % D,
        "fn": "lambda A: (lambda L, V: (L, V / V[..., :1, :]))(*Eig.apply(A))",
        "why": "a real matrix (lossless layers; its backward takes the real part): complex-conjugate eigenpairs",
    }],
    "solwa/materials.py::_MaterialFn": [{
        "inputs": "(torch.tensor(633.0, dtype=%s), %s, %s, %s, 0.005)" % (
            D, _SW_NK, _SW_INTERP % (_SW_NK, _SW_NK, 1), _SW_INTERP % (_SW_NK, _SW_NK, 2)),
        "expect": "fail",
        "why": "a real bug: backward returns 2 Re(conj(g) dnk/dl) for the real wavelength, twice torch's gradient "
               "Re(conj(g) dnk/dl) of a complex output (torch's cotangent g of a complex output is already dL/dRe "
               "+ i dL/dIm); the central difference over dl = 0.005 itself is accurate (measured at 633 nm: autograd "
               "dRe(n)/dl = -7.89e-4, the table's derivative -3.94e-4; gradcheck: analytical -9.0e-3 vs numerical "
               "-4.5e-3 for k). Inputs: Material(nk_file).apply(wavelength) with a 400-800 nm table in its file "
               "layout, its default dl",
    }],
}

HAND: dict[str, dict[str, list[dict]]] = {
    "tune": TUNE,
    "heldout": {},  # written at the end, when the held-out set is measured
    "heldout2": HELDOUT2,
    "heldout3": HELDOUT3,
    "heldout4": HELDOUT4,
    "heldout5": HELDOUT5,
    "heldout6": HELDOUT6,
    "heldout7": HELDOUT7,
}
