"""Gradient checks in a project's own tests: ``check_gradients``, ``assert_gradients``,
``@gradlint.inputs`` and the pytest plugin (``pytest --gradlint``).

Needs torch (in the interpreter that runs the tests), never the language server's
stack: importing ``gradlint`` and these names loads neither pygls, lsprotocol nor libcst.
"""
