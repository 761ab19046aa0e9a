# The two commands of the README:
#   make run   - gradlint on the bundled examples/ (each rule shows up there)
#   make test  - the whole test suite: every part runs, and it fails at the end if one failed
# Both create .venv on first use and install the pinned dependencies; later runs reuse it.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements-dev.txt pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)
PIP := $(PY) -m pip --quiet --disable-pip-version-check

.PHONY: run test pytest venv wheel clean vscode vscode-test vscode-e2e editors

venv: $(STAMP)

# The distribution is torch-gradlint; a venv made before the rename also holds the old
# editable "gradlint" distribution (same import package): it is uninstalled first, and its
# metadata left in the checkout (gradlint.egg-info) removed.
$(STAMP): requirements-dev.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -r requirements-dev.txt
	@if $(PY) -c 'import importlib.metadata as m; m.version("gradlint")' 2>/dev/null; then \
	  $(PIP) uninstall -y gradlint; fi
	@rm -rf gradlint.egg-info
	$(PIP) install --no-deps --no-build-isolation -e .
	@rm -rf build torch_gradlint.egg-info  # build leftovers: stale metadata if left on sys.path
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

RUN := gradlint check --statistics examples/
run: $(STAMP)
	@echo '$$ $(RUN)'
	@$(VENV)/bin/$(RUN); status=$$?; \
	  if [ $$status -gt 1 ]; then exit $$status; fi

# Every part runs even when an earlier one fails; one report at the end, and the exit
# status says whether all passed. The parts: the Python suite (with real editors and a
# wheel installed into a fresh venv), the extension's unit tests, and the extension end to
# end in a real VS Code (code-server + headless Chromium; vscode-extension/test-e2e/install.sh
# installs what it needs once and caches it outside the repository).
# Before the parts run: the real editors are installed as .ci/run does (Debian packages, when
# this user may install them); what cannot be had here is listed, with how to get it.
TEST_PARTS := pytest vscode-test vscode-e2e
test:
	@echo "==> what this machine has for the end-to-end tests"
	@tests/editors/install.sh
	@ls /root/.pyenv/versions/3.8*/bin/python3.8 /usr/bin/python3.8 /usr/local/bin/python3.8 >/dev/null 2>&1 \
	  || echo "[python3.8] SKIPPED: tests/runner/test_lifecycle.py::test_worker_starts_under_python_38 (no python3.8: pyenv install 3.8)" >&2
	@failed=""; \
	for part in $(TEST_PARTS); do \
	  echo "==> make $$part"; \
	  $(MAKE) --no-print-directory $$part || failed="$$failed $$part"; \
	done; \
	echo; \
	for part in $(TEST_PARTS); do \
	  case " $$failed " in *" $$part "*) echo "FAIL  make $$part";; *) echo "ok    make $$part";; esac; \
	done; \
	test -z "$$failed"

pytest: $(STAMP)
	$(PY) -m pytest

# Neovim and Emacs with eglot for tests/editors (apt-get; sudo when not root)
editors:
	tests/editors/install.sh

EXT := vscode-extension
$(EXT)/node_modules/.package-lock.json: $(EXT)/package-lock.json $(EXT)/package.json
	cd $(EXT) && npm ci --no-audit --no-fund

# The wheel of torch-gradlint, bundled into the .vsix: the extension installs the server of
# its own version. Built with the venv's pinned setuptools (offline, no build isolation).
WHEEL_DIR := $(EXT)/server
wheel: $(STAMP)
	rm -rf $(WHEEL_DIR) build
	$(PIP) wheel --no-deps --no-build-isolation --wheel-dir $(WHEEL_DIR) .
	rm -rf build torch_gradlint.egg-info

# Builds vscode-extension/gradlint-<version>.vsix (offline), with the wheel inside.
vscode: $(EXT)/node_modules/.package-lock.json wheel
	cd $(EXT) && npm run build && npm run package

vscode-test: $(EXT)/node_modules/.package-lock.json
	cd $(EXT) && npm test

vscode-e2e: $(STAMP) vscode
	$(EXT)/test-e2e/install.sh
	cd $(EXT) && GRADLINT_E2E_REQUIRE_SERVER=1 GRADLINT_E2E_PYTHON=$(abspath $(PY)) npm run test:e2e

clean:
	rm -rf $(VENV) .pytest_cache build $(WHEEL_DIR)
