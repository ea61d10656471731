#!/usr/bin/env bash
# Installs the official MCP clients that tests/it/clients.rs drives against airlock, at pinned
# versions, into tests/clients/.env/ (git-ignored):
#
#   .env/python/  a virtualenv with the Python SDK (`mcp`), pinned in requirements.txt, and
#                 `opentelemetry-proto`, which the OTLP receiver of tests/it/otel.rs
#                 (otlp_receiver.py) decodes spans with
#   .env/node/    `npm ci` of package.json + package-lock.json: the TypeScript SDK v1
#                 (`@modelcontextprotocol/sdk`) and v2 (`@modelcontextprotocol/client`), the
#                 Inspector (its CLI mode), and a Node 22 binary from the registry (the
#                 Inspector needs Node >= 22.19; the tests run every Node client on it)
#   .env/audit/   `npm ci` of audit/package.json + audit/package-lock.json: the SARIF 2.1.0 JSON
#                 schema the audit's SARIF report is validated against (tests/it/audit_reports.rs)
#                 and server-everything, the reference server of docs/REVIEWER-GUIDE.md's audit figures
#   /usr/bin/chromium  Debian's `chromium` package, for the browser (CORS) test in
#                 tests/it/http_browser.rs: installed with apt-get when missing (as root)
#   /usr/bin/redis-server  Debian's `redis-server` package, for the shared quota store tests
#                 in tests/it/redis.rs (each test starts its own on a free loopback port):
#                 installed with apt-get when missing (as root); the packaged service is
#                 stopped and disabled, the tests need none
#   .env/task-client/  `cargo build --release --locked` of tools/task-client (its own
#                 workspace and Cargo.lock: rmcp 3.11 and 2.2 from crates.io), the Rust SDK's
#                 client that tests/it/tasks.rs drives tasks with in both eras; cargo makes
#                 it idempotent (a few minutes the first time, a second after)
#   /usr/bin/prometheus  Debian's `prometheus` package (with /usr/bin/promtool), for the
#                 metrics test in tests/it/metrics.rs (it starts its own on a free loopback
#                 port): installed with apt-get when missing (as root); the packaged service is
#                 stopped and disabled
#   /usr/sbin/auditctl  Debian's `auditd` package, for the test of writes reported through
#                 the kernel's syscall audit in tests/it/denials.rs (it installs airlock's rules
#                 and removes them): installed with apt-get when missing (as root); the packaged
#                 daemon is stopped and disabled, the tests read the audit multicast themselves
#
#   bash tests/clients/setup.sh
#
# Idempotent: each half is reinstalled only when its pin files changed since it was installed
# (a stamp records their hash) or the install is broken; otherwise this only checks versions
# and takes a second or so. Needs python3.11 (or AIRLOCK_PYTHON) with venv, and npm; reaches
# only the package registries. Exits non-zero if anything fails to install.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
env_dir="$here/.env"
venv="$env_dir/python"
node_dir="$env_dir/node"

say() { printf 'clients: %s\n' "$*"; }
die() { printf 'clients: error: %s\n' "$*" >&2; exit 1; }

stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

python_half() {
    local python="${AIRLOCK_PYTHON:-}"
    if [ -z "$python" ]; then
        python=$(command -v python3.11 || command -v python3 || true)
    fi
    [ -n "$python" ] || die "no python3.11 or python3 on PATH (set AIRLOCK_PYTHON)"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
        || die "$python is older than 3.10, which mcp requires"

    local want have=""
    want=$(stamp_of "$here/requirements.txt")
    [ -f "$venv/.stamp" ] && have=$(cat "$venv/.stamp")
    if [ "$have" = "$want" ] && "$venv/bin/python" -c 'import mcp, opentelemetry.proto' 2>/dev/null; then
        say "python: up to date"
    else
        say "python: installing requirements.txt into $venv"
        rm -rf "$venv"
        "$python" -m venv "$venv"
        # --no-deps: requirements.txt lists the whole closure, pinned; pip check proves it is.
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
            --requirement "$here/requirements.txt"
        "$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null \
            || die "python: the pinned set is incomplete: $("$venv/bin/python" -m pip check)"
        printf '%s\n' "$want" >"$venv/.stamp"
    fi
    "$venv/bin/python" - <<'EOF'
import importlib.metadata as m, platform
print(f"clients: python: CPython {platform.python_version()}, mcp {m.version('mcp')}, "
      f"jsonschema {m.version('jsonschema')}, "
      f"opentelemetry-proto {m.version('opentelemetry-proto')}")
EOF
}

node_half() {
    command -v npm >/dev/null || die "npm is not on PATH"
    local want have=""
    want=$(stamp_of "$here/package.json" "$here/package-lock.json")
    [ -f "$node_dir/.stamp" ] && have=$(cat "$node_dir/.stamp")
    if [ "$have" = "$want" ] && [ -x "$node_dir/node_modules/.bin/node" ]; then
        say "node: up to date"
    else
        say "node: npm ci into $node_dir"
        rm -rf "$node_dir"
        mkdir -p "$node_dir"
        cp "$here/package.json" "$here/package-lock.json" "$node_dir/"
        # No install scripts: nothing here needs one (the Node binary is the package's own
        # file, native modules come as prebuilt optional packages). The npm doing the install
        # may run on an older Node than the pinned one, so its engine warnings are expected.
        (cd "$node_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
        [ -x "$node_dir/node_modules/.bin/node" ] \
            || die "node: no Node binary package for $(uname -m) (package.json pins linux x64/arm64)"
        printf '%s\n' "$want" >"$node_dir/.stamp"
    fi
    "$node_dir/node_modules/.bin/node" - "$node_dir" <<'EOF'
const { readFileSync } = require('node:fs');
const versions = ['@modelcontextprotocol/sdk', '@modelcontextprotocol/client',
                  '@modelcontextprotocol/inspector']
    .map((name) => {
        const file = `${process.argv[2]}/node_modules/${name}/package.json`;
        return `${name} ${JSON.parse(readFileSync(file, 'utf8')).version}`;
    });
console.log(`clients: node: Node ${process.versions.node}, ${versions.join(', ')}`);
EOF
}

audit_half() {
    local audit_dir="$env_dir/audit" want have=""
    want=$(stamp_of "$here/audit/package.json" "$here/audit/package-lock.json")
    [ -f "$audit_dir/.stamp" ] && have=$(cat "$audit_dir/.stamp")
    local schema="$audit_dir/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json"
    if [ "$have" = "$want" ] && [ -f "$schema" ]; then
        say "audit: up to date"
    else
        say "audit: npm ci into $audit_dir"
        rm -rf "$audit_dir"
        mkdir -p "$audit_dir"
        cp "$here/audit/package.json" "$here/audit/package-lock.json" "$audit_dir/"
        (cd "$audit_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
        [ -f "$schema" ] || die "audit: @microsoft/jest-sarif shipped no SARIF schema at $schema"
        printf '%s\n' "$want" >"$audit_dir/.stamp"
    fi
    say "audit: SARIF schema $(sed -n 's/.*"\$\?id": *"\([^"]*\)".*/\1/p' "$schema" | head -n 1)"
}

# Installs Debian's package $2 for step $1 unless every path after it is an executable, then
# checks that it brought them; with $SERVICE set, stops and disables the daemon the package
# starts (the tests start their own, or own the kernel's state themselves).
debian_package() {
    local step=$1 package=$2 path missing=
    shift 2
    for path in "$@"; do [ -x "$path" ] || missing=$path; done
    [ -n "$missing" ] || return 0
    command -v apt-get >/dev/null \
        || die "$step: no $missing and no apt-get: install $package by hand"
    [ "$(id -u)" = 0 ] || die "$step: no $missing: run 'apt-get install $package' as root"
    say "$step: apt-get install $package"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "$package" >/dev/null
    for path in "$@"; do
        [ -x "$path" ] || die "$step: the $package package installed no $path"
    done
    if [ -n "${SERVICE:-}" ] && command -v systemctl >/dev/null \
        && systemctl is-active --quiet "$SERVICE" 2>/dev/null; then
        systemctl disable --now "$SERVICE" >/dev/null 2>&1 || true
    fi
}

browser_half() {
    debian_package browser chromium /usr/bin/chromium
    say "browser: $(/usr/bin/chromium --version 2>/dev/null || echo 'chromium (version unknown)')"
}

redis_half() {
    # The tests start their own servers; the packaged one on 6379 is not wanted.
    SERVICE=redis-server debian_package redis redis-server /usr/bin/redis-server
    say "redis: $(/usr/bin/redis-server --version 2>/dev/null | cut -d' ' -f1-3 || echo 'redis-server (version unknown)')"
}

prometheus_half() {
    # The test starts its own server; the packaged one on 9090 is not wanted.
    SERVICE=prometheus debian_package prometheus prometheus /usr/bin/prometheus /usr/bin/promtool
    say "prometheus: $(/usr/bin/prometheus --version 2>&1 | head -n 1 || echo 'prometheus (version unknown)')"
}

auditd_half() {
    # The daemon would own the kernel's audit (its rules, its switch): not wanted here.
    SERVICE=auditd debian_package auditd auditd /usr/sbin/auditctl
    say "auditd: $(/usr/sbin/auditctl -v 2>&1 | head -n 1 || echo 'auditctl (version unknown)')"
}

task_client_half() {
    command -v cargo >/dev/null || die "task-client: cargo is not on PATH"
    say "task-client: cargo build --release --locked (tools/task-client)"
    cargo build --release --locked --quiet \
        --manifest-path "$here/../../tools/task-client/Cargo.toml" \
        --target-dir "$env_dir/task-client"
    [ -x "$env_dir/task-client/release/task-client" ] \
        || die "task-client: the build made no $env_dir/task-client/release/task-client"
    say "task-client: rmcp $(sed -n '/^name = "rmcp"$/{n;s/^version = "\(.*\)"$/\1/p}' \
        "$here/../../tools/task-client/Cargo.lock" | paste -sd' ')"
}

mkdir -p "$env_dir"
task_client_half
redis_half
prometheus_half
auditd_half
python_half
node_half
audit_half
browser_half
