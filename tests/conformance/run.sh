#!/usr/bin/env bash
# Runs the official MCP conformance suite against `airlock serve --http`-style serving of the
# fixture tools (crates/airlock/examples/conformance_server.rs) on loopback, once per requirement set:
# 2025-11-25 (stateful wire: initialize, Mcp-Session-Id) and 2026-07-28 (stateless wire).
#
#   bash tests/conformance/run.sh                # both revisions
#   bash tests/conformance/run.sh 2026-07-28     # one
#
# Each run uses the revision's expected-failures file (expected-failures-<rev>.yml): a failure
# not listed there, or a listed one that now passes, fails the run. Results are kept in
# tests/conformance/results/<rev>/ (git-ignored); the pass counts are printed per revision.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
env_dir="$here/.env"
node="$env_dir/node_modules/.bin/node"
suite="$env_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"

bash "$here/setup.sh"
(cd "$root" && cargo build --locked --quiet --example conformance_server)
server_bin="$root/target/debug/examples/conformance_server"

revisions=("$@")
[ "${#revisions[@]}" -gt 0 ] || revisions=(2025-11-25 2026-07-28)

server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap stop_server EXIT

status=0
summary=()
for rev in "${revisions[@]}"; do
    out="$here/results/$rev"
    rm -rf "$out" && mkdir -p "$out"
    log="$out/server.log"
    # Port 0: the kernel picks a free port; the server logs the address it bound.
    AIRLOCK_LOG=info "$server_bin" --http 127.0.0.1:0 2>"$log" &
    server_pid=$!
    addr=""
    for _ in $(seq 1 100); do
        addr=$(sed -n 's/.*serving MCP over HTTP at \/mcp addr=\([0-9.:]*\).*/\1/p' "$log" | head -n1)
        [ -n "$addr" ] && break
        kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; echo "conformance: server died" >&2; exit 1; }
        sleep 0.1
    done
    [ -n "$addr" ] || { cat "$log" >&2; echo "conformance: server did not start" >&2; exit 1; }
    printf '\nconformance: %s against http://%s/mcp\n' "$rev" "$addr"
    set +e
    "$node" "$suite" server --url "http://$addr/mcp" --requirements "$rev" \
        --expected-failures "$here/expected-failures-$rev.yml" -o "$out" >"$out/report.txt" 2>&1
    rc=$?
    set -e
    stop_server
    grep -E '^(✓|✗) |^Total|expected|stale|Unexpected|unexpected' "$out/report.txt" || true
    counts=$("$node" -e '
const fs = require("fs"), path = require("path");
const [dir, requirements] = process.argv.slice(1);
const YAML = require(path.join(process.argv[3], "yaml"));
const scored = new Set(YAML.parse(fs.readFileSync(requirements, "utf8")).server);
let pass = 0, fail = 0, warn = 0, passed = 0, run = 0;
for (const d of fs.readdirSync(dir)) {
    const file = path.join(dir, d, "checks.json");
    const name = d.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
    if (!fs.existsSync(file) || !scored.has(name)) continue;
    run++;
    let ok = true;
    for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
        if (c.status === "SUCCESS") pass++;
        else if (c.status === "WARNING") warn++;
        else if (c.status === "FAILURE") { fail++; ok = false; }
    }
    if (ok) passed++;
}
console.log(`scored scenarios: ${passed}/${scored.size} pass (${run} run); their checks: ${pass} passed, ${fail} failed, ${warn} warnings`);
' "$out" "$env_dir/node_modules/@modelcontextprotocol/conformance/requirements/$rev.yaml" "$env_dir/node_modules")
    if [ "$rc" -eq 0 ]; then
        summary+=("$rev: ok (failures all expected) — $counts")
    else
        summary+=("$rev: FAILED (exit $rc; see $out/report.txt) — $counts")
        status=1
    fi
done
printf '\nconformance summary\n'
printf '  %s\n' "${summary[@]}"
exit "$status"
