#!/usr/bin/env bash
# Installs the real editors that tests/editors drives, idempotently (what is present is
# skipped): Neovim and Emacs with eglot, from Debian's packages (apt-get; sudo when not root).
# `make test` and .ci/run call it. When it cannot install them (no apt-get, no sudo, no
# network) it says which tests will be skipped and how to get them, and exits 0, unless
# GRADLINT_REQUIRE_EDITORS is set (CI): then it fails.
set -uo pipefail

PACKAGES=()
command -v nvim >/dev/null 2>&1 || PACKAGES+=(neovim)
command -v emacs >/dev/null 2>&1 || PACKAGES+=(emacs-nox)
dpkg-query -W -f='${Status}' elpa-eglot 2>/dev/null | grep -q 'install ok installed' \
  || { command -v emacs >/dev/null 2>&1 && emacs --batch --eval '(require (quote eglot))' >/dev/null 2>&1; } \
  || PACKAGES+=(elpa-eglot)

log() { printf '[editors] %s\n' "$*" >&2; }

if ((${#PACKAGES[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
  fi
  if ! command -v apt-get >/dev/null 2>&1 || [ "$SUDO" = none ]; then
    log "cannot install ${PACKAGES[*]} here (needs apt-get as root or passwordless sudo)"
  else
    log "apt-get install ${PACKAGES[*]}"
    export DEBIAN_FRONTEND=noninteractive
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"; } \
      >/dev/null 2>&1 || log "apt-get could not install ${PACKAGES[*]}"
  fi
fi

status=0
if command -v nvim >/dev/null 2>&1; then
  log "Neovim: $(nvim --version | head -1)"
else
  log "SKIPPED: tests/editors/test_neovim.py (no nvim): sudo apt-get install neovim, or make editors"
  status=1
fi
if command -v emacs >/dev/null 2>&1 && emacs --batch --eval '(require (quote eglot))' >/dev/null 2>&1; then
  log "Emacs: $(emacs --version | head -1) with eglot"
else
  log "SKIPPED: tests/editors/test_emacs.py (no emacs with eglot): sudo apt-get install emacs-nox elpa-eglot, or make editors"
  status=1
fi
if [ "$status" != 0 ] && [ -n "${GRADLINT_REQUIRE_EDITORS:-}" ]; then
  log "GRADLINT_REQUIRE_EDITORS is set: the real editors must be installed"
  exit 1
fi
exit 0
