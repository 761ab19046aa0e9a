"""The gradlint language server (`gradlint lsp`)."""
