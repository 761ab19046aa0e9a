"""Finding inputs for a run: what each parameter takes, and where its values come from.

Used by ``job`` when a run has neither declared inputs nor a captured call. The modules, one
idea each (a test keeps this list complete); names used across them are public:

- ``kinds``: the kinds of value a parameter can take (tensor, index, mask, int, str, ...);
- ``param_usage``: evidence of what a parameter takes, from how forward (and its helpers,
  and backward) use it;
- ``callers``: literal values the module's own code passes to the target;
- ``params``: each parameter's kind and candidate values, decided from the annotation, the
  default, the evidence, the callers' values and the name;
- ``constraints``: what the tensors must look like, read from the code before synthesis (shapes
  from asserts, unpacking, ``x[..., 1]`` and docstrings; sparse layouts; value ranges from
  ``log``/``acos``/``clamp``; sorted grids for ``searchsorted``);
- ``coo``: a sparse matrix passed in pieces (values, int64 rows and columns, a square shape),
  recognised by the parameters' names and drawn as one symmetric positive definite matrix;
- ``error_hints``: what forward's errors say about the inputs it wants (shapes, a string's values,
  an input's sign, a dtype it refuses);
- ``synthesis``: inputs made from the signature: shape strategies times value domains, searched
  until forward and one backward accept them;
- ``caller_inputs``: inputs captured from the package's own code that calls the target (a
  Module's forward, a wrapper), run on synthesized inputs and stopped at the call;
- ``test_callers``: inputs captured from the project's tests that reach the target;
- ``absent``: stand-ins for the modules a test module imports that this interpreter does not have
  (a plotting library used after the call), so that its tests still give inputs;
- ``doc_examples``: inputs captured from the ``>>>`` examples in the project's docstrings that
  name the target or a caller of it, each run as a function body in its module's namespace;
- ``time_limits``: a time limit (``SIGALRM``) for a piece of the project's code run while inputs
  are looked for: a test, an example, forward on one synthesized input set;
- ``fixtures``: the project's pytest fixtures (the test module's and its conftest.py files',
  parametrized ones combined as pytest does), for calling its tests without pytest.
"""
