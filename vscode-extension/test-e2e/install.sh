#!/usr/bin/env bash
# Installs what the end-to-end tests need, idempotently (what is present is skipped):
#   * Debian packages: chromium (driven headless by playwright-core) and the toolchain that
#     code-server's native modules (node-pty, kerberos, ...) are built with;
#   * code-server 4.100.3 (VS Code 1.100.3 on the system Node 20) from npm, into a cache
#     directory OUTSIDE the repository so a clean clone reuses it:
#       $GRADLINT_E2E_CACHE (default: ~/.cache/gradlint-e2e)/code-server-4.100.3/
#   * the extension's own npm dev dependencies (playwright-core is one of them): `npm ci`.
# Prints the paths it uses. Safe to run again and again.
set -euo pipefail

CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.100.3}"
# @vscode/ripgrep@1.15.11 (what code-server 4.100.3 pins) downloads rg from GitHub in its
# postinstall; we pre-seed its cache with the rg binary of the npm package below.
RIPGREP_PKG_VERSION=1.18.0
RIPGREP_CACHE_NAME="vscode-ripgrep-cache-1.15.11"
RIPGREP_TARBALL="ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"

HERE="$(cd "$(dirname "$0")" && pwd)"
EXT_DIR="$(cd "$HERE/.." && pwd)"
CACHE="${GRADLINT_E2E_CACHE:-$HOME/.cache/gradlint-e2e}"
CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
CS_ENTRY="$CS_DIR/node_modules/code-server/out/node/entry.js"

log() { printf '[install-e2e] %s\n' "$*" >&2; }
SECONDS=0

# ---- 1. Debian packages -------------------------------------------------------------
APT_PKGS=(chromium build-essential pkg-config python3 libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev
          fonts-dejavu-core)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  log "apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  log "Debian packages: already installed"
fi
CHROMIUM="$(command -v chromium || true)"
[ -x "$CHROMIUM" ] || { log "chromium not found after install"; exit 1; }

# ---- 2. code-server (cached outside the repository) ----------------------------------
if [ -f "$CS_ENTRY" ] && [ -f "$CS_DIR/.complete" ]; then
  log "code-server $CODE_SERVER_VERSION: cached in $CS_DIR"
else
  log "installing code-server $CODE_SERVER_VERSION into $CS_DIR (native builds: 1-3 min)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  WORK_TMP="$(mktemp -d)"
  trap 'rm -rf "$WORK_TMP"' EXIT
  (
    cd "$WORK_TMP"
    npm pack --silent "@vscode/ripgrep-linux-x64@$RIPGREP_PKG_VERSION" >/dev/null
    mkdir rgx
    tar xzf "vscode-ripgrep-linux-x64-$RIPGREP_PKG_VERSION.tgz" -C rgx
    mkdir -p "$WORK_TMP/tmp/$RIPGREP_CACHE_NAME"
    tar czf "$WORK_TMP/tmp/$RIPGREP_CACHE_NAME/$RIPGREP_TARBALL" -C rgx/package/bin rg
  )
  (
    cd "$CS_DIR"
    printf '{"name":"gradlint-e2e-code-server","private":true}\n' > package.json
    # npm >= 11.19 skips dependency install scripts unless approved; code-server's postinstall
    # (and the nested npm install of its bundled VS Code, with node-pty etc.) must run.
    TMPDIR="$WORK_TMP/tmp" npm_config_yes=true npm_config_unsafe_perm=true npm_config_nodedir=/usr \
      npm_config_dangerously_allow_all_scripts=true npm_config_update_notifier=false \
      npm install --no-audit --no-fund --foreground-scripts --loglevel=error \
      "code-server@$CODE_SERVER_VERSION" > "$CS_DIR/install.log" 2>&1 \
      || { tail -40 "$CS_DIR/install.log" >&2; exit 1; }
  )
  [ -f "$CS_ENTRY" ] || { log "code-server entry point missing: $CS_ENTRY"; exit 1; }
  touch "$CS_DIR/.complete"
fi

# ---- 3. the extension's npm dependencies (esbuild, vsce, playwright-core, ...) ---------
if [ -d "$EXT_DIR/node_modules/playwright-core" ] && [ -d "$EXT_DIR/node_modules/@vscode/vsce" ] \
   && [ "$EXT_DIR/node_modules/.package-lock.json" -nt "$EXT_DIR/package-lock.json" ]; then
  log "extension node_modules: up to date"
else
  log "npm ci in $EXT_DIR"
  (cd "$EXT_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi

log "done in ${SECONDS}s"
echo "CODE_SERVER=$CS_DIR/node_modules/.bin/code-server"
echo "CHROMIUM=$CHROMIUM"
