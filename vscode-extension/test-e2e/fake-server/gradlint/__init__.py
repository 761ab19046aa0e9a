"""A stand-in for the gradlint language server, used by the e2e scenario `client-contract`.

It implements the client/server contract of the VS Code extension with canned answers and
records every message it gets from the client in the JSON-lines file $GRADLINT_FAKE_LOG, so the
test can check exactly what the extension sends (initializationOptions, workspace/configuration
answers, executeCommand arguments, gradlint/setWorkspaceTrust, gradlint/lastReport).
"""

__version__ = "0.0.0-fake"
