"""A stand-in for the gradlint language server, used by the e2e scenario `client-contract`.

It implements the client/server contract of the VS Code extension with canned answers and
records every message it gets from the client in the JSON-lines file $GRADLINT_FAKE_LOG, so the
test can check exactly what the extension sends (initializationOptions, workspace/configuration
answers, executeCommand arguments, gradlint/setWorkspaceTrust, gradlint/lastReport).
"""

import os

# the extension's install check wants torch-gradlint of its own version: the scenario puts a
# matching torch_gradlint-<version>.dist-info on the path and the version here
__version__ = os.environ.get("GRADLINT_FAKE_VERSION", "0.0.0-fake")
