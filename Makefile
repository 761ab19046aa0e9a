# The two commands of the README:
#   make run   - gradlint on the bundled examples/ (each rule shows up there)
#   make test  - the whole test suite
# Both create .venv on first use and install the pinned dependencies; later runs reuse it.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements-dev.txt pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)

.PHONY: run test venv clean

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

test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf $(VENV) .pytest_cache
