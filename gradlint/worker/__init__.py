"""gradlint's gradcheck worker: a fork server ("zygote") that proves gradients.

This package uses the standard library and torch only, keeps to Python 3.8 syntax, and
never imports the rest of gradlint: it runs in the *user's* interpreter, which may not
have gradlint installed. The supervisor (``gradlint.runner``) starts it as::

    python -u /abs/path/to/gradlint/worker/__main__.py

``__main__`` loads this folder as a private package (``_gradlint_worker``), so the
modules below import each other relatively and never shadow the user's own modules.

The modules, one idea each (a test keeps this list complete):

- ``__main__``: the entry point, run as a file; loads this folder as ``_gradlint_worker``;
- ``protocol``: the wire constants, JSON encoding and the result skeleton;
- ``text``: short formatting of numbers, exceptions and signals;
- ``userframes``: which frames of a traceback are the user's code;
- ``torch_setup``: importing torch once and warming gradcheck up before any fork;
- ``tensors``: small tensor helpers (real views, comparisons, away-from-kink values);
- ``introspect``: what a Function class defines (setup_context, jvp, once_differentiable, its parameters);
- ``outcome``: how a run ends early, and how user exceptions are reported and located;
- ``loading``: importing the user's module and reaching the target (call-site capture);
- ``inputs``: finding inputs when none are declared or captured (a subpackage; its own
  ``__init__`` lists its modules): what each parameter takes, synthesis, the project's callers and tests;
- ``customops``: torch.library custom ops as targets: the op, its schema, and opcheck;
- ``links``: tensors another argument holds (a module and its parameters), kept holding them on every call;
- ``subject``: the function under check with its inputs, ready to be called again and again;
- ``checks``: forward, input mutation, randomness, backward determinism;
- ``writes``: which line of the user's code wrote to an input in place;
- ``jacobian``: Jacobians recomputed to find the worst entries and the mismatch pattern;
- ``patterns``: the pattern behind a Jacobian mismatch (a factor, a sign, a swap, a wrong dim), in one line;
- ``surrogates``: backwards that are not meant to be derivatives (gradient hooks, straight-through estimators);
- ``narrowing``: a fast-mode failure too large to recompute: which inputs fail alone, and which backward drops;
- ``directional``: signed random-direction probes, a second opinion for inputs too large for a Jacobian;
- ``gradchecks``: gradcheck, gradgradcheck, forward AD and the as-written re-run;
- ``funcchecks``: torch.func checks (vmap, jacrev) for Functions that declare torch.func support;
- ``proof``: which inputs and outputs a passing gradcheck compared a non-zero Jacobian for (a ✓ is a proof);
- ``through_forward``: autograd through a Function's forward, its custom backward bypassed;
- ``compiled``: eager gradients against torch.compile and torch.func (``compile``);
- ``precision``: the precision-relative verdict at a low dtype (``dtype``);
- ``resolution``: a forward that computes in float32 (or lower) inside: finite differences it resolves;
- ``branches``: arms of backward's ``if``s no checked input took, and inputs that take them;
- ``layouts``: opcheck's fake-tensor test again on dense permuted inputs;
- ``verdict``: the run's conclusion from its check records, and which failure explains the others;
- ``explore``: where a run looks beyond its first inputs (the project's callers instead, other inputs
  for inputs nothing moved with, ties and equal inputs, each mode the code names);
- ``job``: one run from request to result;
- ``inprocess``: the same run in the caller's own process (``check_gradients``, ``pytest --gradlint``);
- ``world``: a torch.distributed process group of one, for code that needs one to run at all;
- ``child`` / ``zygote``: the forked run process, and the fork server around it;
- ``proctree``: every process a run started (child subreapers, /proc), and killing them all.

The request and result formats are documented in docs/run-result-schema.md.
"""
