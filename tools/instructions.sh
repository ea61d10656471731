#!/usr/bin/env bash
# User-space instructions per message of a stdio MCP server, counted by valgrind (callgrind):
# deterministic where wall-clock figures on this machine are not, so it shows what a change
# to the per-message path buys. The server reads N pipelined messages from a file after the
# handshake; a run with the handshake alone is subtracted, so start-up does not count.
#
#   bash tools/instructions.sh target/release/examples/bench_server          # ping and call
#   N=50000 bash tools/instructions.sh path/to/other/bench_server
#
# Needs valgrind. The call is `tools/call` of the in-process `echo` tool of
# crates/airlock/examples/bench_server.rs (the request line of tools/bench.sh's `call` mode).
set -euo pipefail

server="${1:?usage: tools/instructions.sh SERVER [ARGS...]}"
shift
args=("$@")
n="${N:-20000}"
command -v valgrind >/dev/null || { echo "instructions: valgrind is not installed" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

handshake='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"instructions","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}'
printf '%s\n' "$handshake" > "$work/none.jsonl"
{
    printf '%s\n' "$handshake"
    for ((i = 1; i <= n; i++)); do
        printf '{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' "$i"
    done
} > "$work/ping.jsonl"
{
    printf '%s\n' "$handshake"
    for ((i = 1; i <= n; i++)); do
        printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}\n' "$i"
    done
} > "$work/call.jsonl"

# Total instructions of one run of the server over a file.
count() {
    local input="$1" label="$2"
    valgrind --tool=callgrind --callgrind-out-file="$work/out.$label" \
        "$server" ${args[@]+"${args[@]}"} < "$input" > /dev/null 2> "$work/err.$label" || true
    grep -o 'Collected : [0-9]*' "$work/err.$label" | grep -o '[0-9]*'
}

base="$(count "$work/none.jsonl" none)"
for mode in ping call; do
    total="$(count "$work/$mode.jsonl" "$mode")"
    echo "$mode: $(((total - base) / n)) instructions per message ($server)"
done
