# The two commands of the README:
#   make run   - gradlint on the bundled examples/ (each rule shows up there)
#   make test  - the whole test suite
# Both create .venv on first use and install the pinned dependencies; later runs reuse it.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements-dev.txt pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)

.PHONY: run test pytest venv clean vscode vscode-test vscode-e2e

venv: $(STAMP)

$(STAMP): requirements-dev.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

run: $(STAMP)
	@echo '$$ gradlint check examples/'
	@$(VENV)/bin/gradlint check examples/ --statistics; status=$$?; \
	  if [ $$status -gt 1 ]; then exit $$status; fi

# Everything: the Python suite, the extension's unit tests, and the extension end to end in
# a real VS Code (code-server + headless Chromium; vscode-extension/test-e2e/install.sh
# installs what it needs once and caches it outside the repository).
test: pytest vscode-test vscode-e2e

pytest: $(STAMP)
	$(PY) -m pytest

EXT := vscode-extension
$(EXT)/node_modules/.package-lock.json: $(EXT)/package-lock.json $(EXT)/package.json
	cd $(EXT) && npm ci --no-audit --no-fund

# Builds vscode-extension/gradlint-<version>.vsix (offline).
vscode: $(EXT)/node_modules/.package-lock.json
	cd $(EXT) && npm run build && npm run package

vscode-test: $(EXT)/node_modules/.package-lock.json
	cd $(EXT) && npm test

vscode-e2e: $(STAMP) vscode
	$(EXT)/test-e2e/install.sh
	cd $(EXT) && GRADLINT_E2E_REQUIRE_SERVER=1 GRADLINT_E2E_PYTHON=$(abspath $(PY)) npm run test:e2e

clean:
	rm -rf $(VENV) .pytest_cache
