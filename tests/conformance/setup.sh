#!/usr/bin/env bash
# Installs the official MCP conformance suite, pinned, with the Node 22 binary package it runs
# on, into tests/conformance/.env/ (git-ignored), by `npm ci` of package.json and
# package-lock.json:
#
#   bash tests/conformance/setup.sh
#
# Idempotent: reinstalled only when the pin files changed since the last install (a stamp
# records their hash) or the install is broken. Reaches only the npm registry; runs no install
# scripts. Exits non-zero if anything fails to install.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
env_dir="$here/.env"

say() { printf 'conformance: %s\n' "$*"; }
die() { printf 'conformance: error: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null || die "npm is not on PATH"
want=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)
have=""
[ -f "$env_dir/.stamp" ] && have=$(cat "$env_dir/.stamp")
if [ "$have" = "$want" ] && [ -x "$env_dir/node_modules/.bin/node" ] \
    && [ -f "$env_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
    say "up to date"
else
    say "npm ci into $env_dir"
    rm -rf "$env_dir"
    mkdir -p "$env_dir"
    cp "$here/package.json" "$here/package-lock.json" "$env_dir/"
    # The npm doing the install may run on an older Node than the pinned one: engine warnings
    # are expected. The suite itself runs on the pinned Node 22 below.
    (cd "$env_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    [ -x "$env_dir/node_modules/.bin/node" ] \
        || die "no Node binary package for $(uname -m) (package.json pins linux x64/arm64)"
    printf '%s\n' "$want" >"$env_dir/.stamp"
fi
"$env_dir/node_modules/.bin/node" -e '
const v = require(process.argv[1] + "/node_modules/@modelcontextprotocol/conformance/package.json").version;
console.log(`conformance: Node ${process.versions.node}, @modelcontextprotocol/conformance ${v}`);
' "$env_dir"
