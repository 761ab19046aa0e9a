"""The real-code sets ``runner_accuracy.py`` measures: pinned PyPI releases with custom autograd Functions.

- ``old``: the 11 packages the runner was developed with in earlier rounds;
- ``tune``: packages new to this project, used to develop the runner's mechanisms for issue 23;
- ``heldout``: packages new to this project, kept aside and measured once, at the end;
- ``heldout2``: a second held-out set of packages never used before by this project (labelled by hand gradchecks only);
- ``heldout3``: a third held-out set, again of packages no file of this project had named (labelled by hand gradchecks
  only);
- ``heldout4``: a fourth held-out set, again of packages no file of this project had named (labelled by hand
  gradchecks only);
- ``heldout5``: a fifth held-out set, again of packages no file of this project had named (labelled by hand
  gradchecks only);
- ``heldout6``: a sixth held-out set, again of packages no file of this project had named (labelled by hand
  gradchecks only);
- ``heldout7``: a seventh held-out set, again of packages no file of this project had named (labelled by hand
  gradchecks only).

Each set names its packages (PyPI name, version, what the run interpreter needs besides the set's
base requirements), the Functions whose backward is not the derivative of forward by design (with the
reason), and — for the new sets — the hand gradchecks (``runner_hand.py``) that label each Function
and confirm each wrong-backward mutant.
"""

from __future__ import annotations

# -- old: the packages used so far --------------------------------------------------------------

OLD_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("entmax", "1.3", []),
    ("sparsemax", "0.1.9", []),
    ("pytorch-wavelets", "1.3.0", ["PyWavelets==1.9.0", "setuptools==80.9.0", "dtcwt==0.14.0",  # pkg_resources, tests
                                   "py3nvml==0.2.7"]),  # its tests import it
    ("roma", "1.8.0", []),
    ("pypose", "0.9.5", []),
    ("pyro-ppl", "1.9.2", ["pyro-api==0.1.2", "opt_einsum==3.4.0", "tqdm==4.70.1"]),
    ("torch-struct", "0.5", []),
    ("e3nn", "0.6.0", ["sympy==1.14.0", "opt-einsum-fx==0.1.4", "opt_einsum==3.4.0"]),
    ("gpytorch", "1.15.2", ["linear_operator==0.6.1", "jaxtyping==0.3.11", "scikit-learn==1.9.1",
                            "mpmath==1.3.0"]),
    ("kornia", "0.9.0", ["kornia-rs==0.2.0"]),
    ("monai", "1.6.1", []),
]
OLD_BASE = ["torch==2.13.0", "numpy==1.26.4", "scipy==1.17.1", "pytest==9.2.0"]  # numpy<2: dtcwt (wavelets tests)

# Functions whose backward is not meant to be the derivative of forward (`file::Class` patterns),
# each checked by reading the code; gradcheck cannot agree with them, and should not.
OLD_NOT_A_DERIVATIVE = {
    "*::QuantizeCategorical": "straight-through estimator (pyro relaxed_straight_through)",
    "*::QuantizeBernoulli": "straight-through estimator (pyro relaxed_straight_through)",
    "pyro/distributions/*::_*Sample": "a sampler whose backward is a variance-reduced gradient estimator "
                                      "(control variates, transport), not the pathwise derivative (pyro)",
    "pyro/contrib/oed/eig.py::_EwmaLogFn": "gradient from a moving average of past inputs (pyro docstring)",
    "pypose/lietensor/operation.py::*": "Lie-group maps: gradients in the tangent space, not the Euclidean "
                                        "derivative of the input coordinates (pypose)",
    "roma/mappings.py::_ProcrustesRegularization*": "adds a regularization term to the gradient; 'cannot be "
                                                    "expressed as the derivative of any function' (roma docstring)",
    "kornia/geometry/epipolar/essential.py::_NullSpaceBasis": "differentiates the spanned subspace, not the "
                                                             "returned basis (gauge-invariant by design)",
    "*::_AutoGradReLU": "guided backpropagation for saliency maps (monai visualize)",
    "*::_UncheckedAssign": "gradient rerouting for an in-place assignment (torchdiffeq)",
    "*::_StitchGradient": "gradient rerouting (torchdiffeq)",
    "*::ImplicitFnGradientRerouting": "gradient rerouting (torchdiffeq)",
    "*::_SampledLogSumExp": "forward samples; backward is a score-function estimate (torch-struct)",
    "*::_MultiSampledLogSumExp": "forward samples; backward is a score-function estimate (torch-struct)",
    "torch_struct/semirings/sparse_max.py::_SparseMaxGrad": "forward is the identity; backward applies "
                                                             "sparsemax's Jacobian: a gradient hook (torch-struct)",
    "gpytorch/variational/*::_NaturalToMuVarSqrt": "backward returns the natural gradient (the gradient w.r.t. "
                                                   "the expectation parameters) for NGD: 'Calculates the natural "
                                                   "gradient with respect to nat_mean, nat_covar' (gpytorch)",
    "gpytorch/variational/*::_TrilNaturalToMuVarSqrt": "backward is _NaturalToMuVarSqrt's natural gradient, "
                                                       "carried to the Cholesky parameterisation (gpytorch NGD)",
    "gpytorch/variational/ciq_variational_strategy.py::_NgdInterpTerms": "'the gradients will be with respect to the "
                                                                         "cannonical parameters … rather than the "
                                                                         "natural parameters … natural gradient "
                                                                         "descent' (gpytorch docstring)",
}

# -- new sets (issue 23): base requirements shared by tune and heldout -------------------------------

NEW_BASE = ["torch==2.13.0", "numpy==2.3.5", "scipy==1.17.1", "pytest==9.2.0", "numba==0.62.1"]

TUNE_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("torchinterp1d", "1.1", []),
    ("torchlpc", "0.7.2", []),
    ("tslearn", "0.10.0", ["scikit-learn==1.9.1", "joblib==1.6.0", "statsmodels==0.15.0"]),
    ("pytorch-revgrad", "0.2.0", []),
    ("torchsparsegradutils", "0.2.7", ["packaging==25.0"]),
    ("brevitas", "0.13.4", ["dependencies==2.0.1", "packaging==25.0", "setuptools==80.9.0", "sympy==1.14.0",
                            "typing-extensions==4.15.0", "unfoldNd==0.2.3"]),
    ("xitorch", "0.5.1", []),
]

HELDOUT_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("kymatio", "0.3.0", ["appdirs==1.4.4", "configparser==7.2.0", "packaging==25.0"]),
    ("pysdtw", "0.0.5", []),
    ("ddtw", "0.1.2", []),
    ("bitorch", "0.4.1", ["pandas==2.3.3", "matplotlib==3.10.7"]),
    ("sinabs", "3.1.3", []),
    ("reformer-pytorch", "1.4.4", ["axial-positional-embedding==0.3.12", "einops==0.8.1",
                                   "local-attention==1.11.2", "product-key-memory==0.2.11"]),
    ("snntorch", "1.0.0", []),
]

TUNE_NOT_A_DERIVATIVE = {
    "pytorch_revgrad/functional.py::RevGrad": "gradient reversal: forward is the identity, backward returns "
                                              "-alpha × the gradient (the package's purpose)",
    "brevitas/ops/autograd_ste_ops.py::*Ste*": "straight-through estimators of clamp/round/floor/ceil/sign "
                                              "(brevitas: 'straight-through gradient estimator')",
    "brevitas/core/function_wrapper/stochastic_round.py::StochasticRoundSteFn": "stochastic rounding with a "
                                                                                "straight-through estimator",
    "xitorch/integrate/mcquad.py::_MCQuad": "Monte-Carlo quadrature: backward draws samples of its own, a "
                                            "stochastic estimate of the expectation's gradient (not reentrant "
                                            "by design)",
    "brevitas/export/*::*": "ONNX export markers: forward stands in for an exported op, with no backward "
                           "(only `symbolic` is meant to run)",
}

HELDOUT_NOT_A_DERIVATIVE: dict[str, str] = {}  # written at the end, when the held-out set is measured

# -- heldout2: a second held-out set, of packages no script or benchmark of this project had named -------
# (ODE adjoint / implicit differentiation / quadrature, a parallel scan, tiled attention, quantum-circuit
# adjoints and parameter shifts, smooth top-k, reversible networks); measured once, at the end.

HELDOUT2_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("zuko", "1.6.0", []),
    ("mambapy", "1.2.0", []),
    ("memory-efficient-attention-pytorch", "0.1.6", ["einops==0.8.1"]),
    ("pyqtorch", "1.7.8", []),
    ("difftopk", "0.2.0", ["diffsort==0.2.0"]),  # difftopk/__init__ imports diffsort
    ("revlib", "1.7.2", []),
]

HELDOUT2_NOT_A_DERIVATIVE = {
    "revlib/core.py::_ReplaceGrad": "forward is the identity on (inp0, inp1); backward returns the saved activations "
                                    "inp0, inp1 as the 'gradients' of the dummy inputs tmp_inp0, tmp_inp1: revlib's "
                                    "memory_mode autograd_function carries activations back through the gradient "
                                    "channel (ReversibleSequential passes zeros as those inputs)",
    "revlib/core.py::_ReversibleHalfResidualSwapFn": "backward returns the reconstructed activations x0, y0 as the "
                                                     "'gradients' of back_x0, back_x1 (and reads the incoming ones "
                                                     "as activations): revlib's reversible backward passes the "
                                                     "inverted states to the previous block through the autograd "
                                                     "graph instead of storing them",
}

# -- heldout3: a third held-out set, of packages no script, benchmark or note of this project had named ----------
# (hyperbolic geometry and an implicitly differentiated Fréchet mean, robot forward kinematics with an analytical
# geometric Jacobian, entropic optimal transport by implicit differentiation, reverse-accurate ODE adjoints, a
# perturbed (noised) top-k, straight-through clamps); measured once, at the end.

HELDOUT3_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("torch-hyperbolic", "0.0.3", []),
    ("hypll", "0.1.1", []),
    ("pytorch-kinematics", "0.10.0", ["arm-pytorch-utilities==0.5.0", "pytorch-seed==0.2.0", "lxml==6.2.0",
                                      "absl-py==2.5.1", "pyyaml==6.0.4", "matplotlib==3.10.7"]),
    ("torchgw", "0.4.2", ["scikit-learn==1.9.1", "joblib==1.6.0"]),
    ("torchdiffeqpack", "1.0.1", []),
    ("pytopk", "0.1.0", []),
    ("magic-clamp", "0.0.4", []),
]

HELDOUT3_NOT_A_DERIVATIVE = {
    "torchgw/_solver.py::_SinkhornApproximate": "'Differentiable Sinkhorn with frozen-potentials approximation. "
                                                "Backward: dT/dC ~ -T/eps (treats potentials as constants). Fast but "
                                                "inexact - use _SinkhornImplicit for exact gradients' (torchgw "
                                                "docstring; grad_mode='approximate')",
    "magic_clamp/autograd.py::ClampWithConditionalSTEFunction": "'Clamps in the forward pass and applies the "
                                                                "conditional STE in the backward pass' (magic-clamp "
                                                                "docstring): a straight-through estimator",
    "magic_clamp/autograd.py::ConstraintWithHyperPGDFunction": "'Applies an idempotent constraint in the forward pass, "
                                                               "and uses it in the backward pass as a projection "
                                                               "operator for hyper PGD' (magic-clamp docstring): "
                                                               "backward returns x - P(P(x) - grad), not a vjp",
}

# -- heldout4: a fourth held-out set, of packages no script, benchmark or note of this project had named ---------
# (a special function by continued fractions, NUFFT spreading/interpolation, matrix functions of SPD matrices by
# Daleckii-Krein / Loewner backwards, an implicitly differentiated conjugate-gradient solve, linear and ring (flash)
# attention, a process-group all-gather, surrogate spike gradients); measured once, at the end.

HELDOUT4_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("torch-betainc", "0.2.1", []),
    ("torchesnufft", "0.1.2", []),
    ("torchspd", "0.1.2", []),
    ("torchsolve", "0.0.1", []),
    ("srf-attention", "1.0.16", ["einops==0.8.1"]),  # kernel.py imports einops (rfs.py: scipy, in the base)
    ("ring-attention-pytorch", "0.5.20", ["beartype==0.23.1", "einops==0.8.1", "jaxtyping==0.3.11"]),
    ("egnlib", "0.2.2", []),
    ("gsmc-torch", "0.2.0", []),
]

HELDOUT4_NOT_A_DERIVATIVE = {
    "gsmc_torch/surrogate.py::ATanSurrogate": "'Arctan surrogate gradient function ... Forward: Heaviside step "
                                              "function ... Backward: ds/dx = min(gamma, (alpha / 2) / (1 + (pi/2 * "
                                              "alpha * x)^2))' (gsmc-torch docstring): a surrogate gradient",
    "gsmc_torch/surrogate.py::ExactSpike": "'Binary threshold with an exact IFT spiking gradient (surrogate-free). "
                                           "Forward: Heaviside step function ... Backward (IFT): ... dt*/dx' "
                                           "(gsmc-torch docstring): the gradient of a modelled spike time, not of "
                                           "the step it returns",
}

# -- heldout5: a fifth held-out set, of packages no script, benchmark or note of this project had named ----------
# (Whittaker-Eilers smoothing by a Cholesky solve, log-space semiring einsum, a memory-efficient Swish, the adjoint of
# a linear Koopman recurrence, spectral projectors of a normalised-cut affinity, a discrete adjoint of an implicit
# DAE solver, a critical bandwidth by root finding with an implicit (IFT) backward, time-to-first-spike neurons with
# IFT spike-time gradients, straight-through quantisers); measured once, at the end.

HELDOUT5_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("torch-dxdt", "0.1.1", []),
    ("torch-semiring-einsum", "1.2.0", ["pynvml==11.5.3", "typing-extensions==4.15.0"]),  # equation.py imports pynvml
    ("efficientnet-pytorch", "0.7.1", []),
    ("koopman", "0.1.0", []),
    ("ncut-pytorch", "3.2.0", []),  # fpsample / torch_quickfps are optional (try/except)
    ("torchdae", "0.1.1", []),
    ("diffcb", "0.1.15", []),
    ("exact-snn-nn", "3.2.3", []),
    ("qsparse", "2.0.1", ["scikit-learn==1.9.1", "joblib==1.6.0", "typing-extensions==4.15.0"]),
]

HELDOUT5_NOT_A_DERIVATIVE = {
    "qsparse/quantize.py::DecimalQuantization": "'Straight-Through Gradient Estimator (with shift)' (qsparse "
                                                "docstring): power-of-2 quantisation forward, the incoming gradient "
                                                "(clamped) backward",
    "qsparse/quantize.py::ScalerQuantization": "'Straight-Through Gradient Estimator (with scaler)' (qsparse "
                                               "docstring)",
    "qsparse/quantize.py::LineQuantization": "'Straight-Through Gradient Estimator (asymmetric)' (qsparse docstring): "
                                             "backward returns grad_output unchanged",
}

# -- heldout6: a sixth held-out set, of packages no script, benchmark or note of this project had named ----------
# (Okada dislocation fields with a closed-form strain backward, a degeneracy-safe eigh backward, an implicitly
# differentiated fixed point (implicit deep learning), sparse direct/iterative solves, determinants and sparse
# products by adjoints, smooth-surrogate quantisers); measured once, at the end.

HELDOUT6_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("torchdeform", "0.3.0", []),
    ("torchspin", "0.6.0", []),
    ("torchidl", "0.0.4", ["scikit-learn==1.9.1", "joblib==1.6.0", "tqdm==4.70.1",
                              "matplotlib==3.10.7", "cvxpy==1.9.3"]),  # all imported by its __init__
    ("torch-sla", "0.4.0", ["pyamg==5.4.1"]),  # pyamg: the PyAMG backend (optional, imported lazily)
    ("omnibias-binary", "0.1.0a2", ["omnibias-core==0.5.0rc1", "omnibias-torch==0.5.0rc1",
                                    # `omnibias` is a namespace package (no __init__) split over three
                                    # distributions: the release itself must be installed for the
                                    # checkout's absolute imports (omnibias.binary...) to resolve
                                    "omnibias-binary==0.1.0a2"]),
]

HELDOUT6_NOT_A_DERIVATIVE = {
    "omnibias/binary/torch/ops/quantize.py::*": "'The backward formula is not the classical derivative of a "
                                               "discontinuous quantizer' (omnibias-binary README); 'Hard sign(z) ... "
                                               "Riccati surrogate backward', 'tanh-step surrogate backward' (docstrings)",
    "omnibias/binary/torch/ops/surrogate.py::_BinarizeCurvatureFn": "'Hard sign(z) with a 2nd-order, "
                                                                    "curvature-corrected surrogate backward' "
                                                                    "(omnibias-binary docstring)",
}

# -- heldout7: a seventh held-out set, of packages no script, benchmark or note of this project had named --------
# (integer-order Bessel functions with recurrence backwards and their imaginary-axis continuation (nano-optics),
# real transforms DCT/DST of all types and norms, batched isotonic regression by pool adjacent violators, a Cholesky
# solve for inverse rendering's reparameterised meshes, a matrix logarithm by a block Frechet trick, an RCWA
# eigendecomposition with Lorentzian broadening and a tabulated refractive index); measured once, at the end.

HELDOUT7_PACKAGES: list[tuple[str, str, list[str]]] = [
    ("torchgdm", "0.61", ["psutil==7.2.2", "tqdm==4.70.1", "matplotlib==3.10.7", "pyyaml==6.0.4",
                          "scikit-learn==1.9.1", "joblib==1.6.0"]),  # its requirements (psutil, tqdm: at import);
    # alphashape, imported only inside two 2D plotting functions, left out
    ("torch-bounds", "0.2.0", []),
    ("torchisotonic", "0.2.1", ["ninja==1.13.2"]),  # its C++ operators are built on first use (torch's JIT loader)
    ("largesteps", "0.2.2", ["cholespy==2.2.0"]),
    ("geomstats", "2.8.0", ["pandas==2.3.3", "matplotlib==3.10.7", "scikit-learn==1.9.1",
                            "joblib==1.6.0"]),  # its requirements; the pytorch backend's linalg is imported directly
    ("solwa", "0.1.0", []),
]

HELDOUT7_NOT_A_DERIVATIVE: dict[str, str] = {}

SETS = {
    "old": {"packages": OLD_PACKAGES, "base": OLD_BASE, "not_a_derivative": OLD_NOT_A_DERIVATIVE},
    "tune": {"packages": TUNE_PACKAGES, "base": NEW_BASE, "not_a_derivative": TUNE_NOT_A_DERIVATIVE},
    "heldout": {"packages": HELDOUT_PACKAGES, "base": NEW_BASE, "not_a_derivative": HELDOUT_NOT_A_DERIVATIVE},
    "heldout2": {"packages": HELDOUT2_PACKAGES, "base": NEW_BASE, "not_a_derivative": HELDOUT2_NOT_A_DERIVATIVE},
    "heldout3": {"packages": HELDOUT3_PACKAGES, "base": NEW_BASE, "not_a_derivative": HELDOUT3_NOT_A_DERIVATIVE},
    "heldout4": {"packages": HELDOUT4_PACKAGES, "base": NEW_BASE, "not_a_derivative": HELDOUT4_NOT_A_DERIVATIVE},
    "heldout5": {"packages": HELDOUT5_PACKAGES, "base": NEW_BASE, "not_a_derivative": HELDOUT5_NOT_A_DERIVATIVE},
    "heldout6": {"packages": HELDOUT6_PACKAGES, "base": NEW_BASE, "not_a_derivative": HELDOUT6_NOT_A_DERIVATIVE},
    "heldout7": {"packages": HELDOUT7_PACKAGES, "base": NEW_BASE, "not_a_derivative": HELDOUT7_NOT_A_DERIVATIVE},
}
