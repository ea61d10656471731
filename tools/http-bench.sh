#!/usr/bin/env bash
# Modern-era (2026-07-28) `tools/call` of an in-process `echo` over Streamable HTTP: airlock
# beside the physical limit of the path (a minimal hyper server answering a fixed JSON body)
# and the official Rust and TypeScript SDKs' HTTP servers, in interleaved rounds. Results:
# BENCHMARKS.md, "HTTP (issue 16)".
#
#   bash tools/http-bench.sh               # build and install, run 5 rounds, print the tables
#   ROUNDS=7 bash tools/http-bench.sh      # more rounds
#   ONLY="hyper airlock" bash tools/http-bench.sh   # a subset of the targets
#   REPORT=1 bash tools/http-bench.sh      # only the tables again, from the last records
#   CLIENTS="1 16 256" DURATION_MS=3000 WARMUP_MS=1000 IDLE=1000   # the defaults
#   AIRLOCK_SERVER=/path/to/bench_server bash tools/http-bench.sh  # that binary; not built
#
# Builds (release) airlock's `crates/airlock/examples/bench_server.rs` (`--http`: the library with one
# in-process `echo`, quotas off, connection caps raised, see below) and, into .bench/http/
# (git-ignored), the load generator (tools/httpload, std + serde_json) and the references,
# whose sources are in tools/http-bench/ and whose dependencies are fetched from the
# registries at the pinned versions of their lockfiles:
#
#   hyper    tools/http-bench/hyper-fixed: hyper 1.x on tokio's multi-thread runtime, a
#            fixed JSON body per POST (the request's id copied in by a byte scan): the limit
#   rmcp     tools/http-bench/rmcp-echo: the official Rust SDK, rmcp 3.11.0 (crates.io),
#            `StreamableHttpService` on axum, stateless, JSON replies; modern era
#   ts-v2    tools/http-bench/ts-echo/echo-v2.mjs: the official TypeScript SDK v2,
#            @modelcontextprotocol/server 2.4.0 (npm), `createMcpHandler` (modern only, JSON
#            replies) through @modelcontextprotocol/node's `toNodeHandler`; Node 22
#   ts-v1    tools/http-bench/ts-echo/echo-v1.mjs: @modelcontextprotocol/sdk 1.32.2, which
#            speaks only the 2025 era: its documented stateless `StreamableHTTPServerTransport`
#            (a server and transport per request, JSON replies), driven with legacy requests
#
# The Rust targets are built with airlock's release profile (fat LTO, one codegen unit).
#
# Each round, for each target in turn: start it on a free loopback port, check one call's
# reply, then `httpload idle` (warm-up, VmRSS, IDLE connections each after one call, VmRSS
# again: bytes per idle connection) and `httpload run` at each CLIENTS count (keep-alive
# clients in a loop, WARMUP_MS then DURATION_MS measured: requests/s, p50, p99, and the
# server's CPU per request), then stop it. Every reply is checked (status 200, the id, the
# echoed text); a bad one makes its record FAILED. The load average is recorded at the start
# of each round. Every step is bounded in time (httpload --timeout; a server is killed after
# its steps, and by a watchdog if the script dies).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
bench="$root/.bench/http"
records="$bench/records.tsv"
rounds="${ROUNDS:-5}"
clients="${CLIENTS:-1 16 256}"
duration_ms="${DURATION_MS:-3000}"
warmup_ms="${WARMUP_MS:-1000}"
idle_connections="${IDLE:-1000}"
mkdir -p "$bench"

say() { printf 'http-bench: %s\n' "$*" >&2; }

H="$bench/httpload-target/release/httpload"
airlock="${AIRLOCK_SERVER:-$root/target/release/examples/bench_server}"
hyper="$bench/hyper-target/release/hyper-fixed"
rmcp="$bench/rmcp-target/release/rmcp-echo"
ts="$bench/ts"
node="$ts/node_modules/.bin/node"

build() {
    if [ -z "${AIRLOCK_SERVER:-}" ]; then
        say "building airlock's bench_server (release; fat LTO, a few minutes when src/ changed)"
        timeout 1800 cargo build --release --quiet --example bench_server
    fi
    say "building the load generator and the hyper baseline"
    (cd tools/httpload &&
        CARGO_TARGET_DIR="$bench/httpload-target" timeout 900 cargo build --release --locked --quiet)
    (cd tools/http-bench/hyper-fixed &&
        CARGO_TARGET_DIR="$bench/hyper-target" timeout 900 cargo build --release --locked --quiet)
    say "building the rmcp server (crates.io, pinned by tools/http-bench/rmcp-echo/Cargo.lock)"
    (cd tools/http-bench/rmcp-echo &&
        CARGO_TARGET_DIR="$bench/rmcp-target" timeout 1800 cargo build --release --locked --quiet)
    install_ts
}

# npm ci of the pinned package-lock.json, redone only when the pins changed (a stamp holds
# their hash), as tests/clients/setup.sh does. No install scripts: none is needed (the Node
# binary is a registry package's own file).
install_ts() {
    local here="$root/tools/http-bench/ts-echo" want have=""
    want=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)
    [ -f "$ts/.stamp" ] && have=$(cat "$ts/.stamp")
    if [ "$have" != "$want" ] || [ ! -x "$node" ]; then
        say "installing the TypeScript SDKs (npm ci into $ts)"
        rm -rf "$ts"
        mkdir -p "$ts"
        cp "$here/package.json" "$here/package-lock.json" "$ts/"
        (cd "$ts" && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
        [ -x "$node" ] || { say "no Node binary package for $(uname -m)"; exit 1; }
        printf '%s\n' "$want" >"$ts/.stamp"
    fi
    # The servers import from the node_modules beside them.
    cp "$here/echo-v1.mjs" "$here/echo-v2.mjs" "$ts/"
}

# label → command (PORT replaced) and era.
declare -A command era
command[hyper]="$hyper 127.0.0.1:PORT"
era[hyper]=modern
command[airlock]="$airlock --http 127.0.0.1:PORT"
era[airlock]=modern
command[rmcp]="$rmcp 127.0.0.1:PORT"
era[rmcp]=modern
command[ts-v2]="$node $ts/echo-v2.mjs 127.0.0.1:PORT"
era[ts-v2]=modern
command[ts-v1]="$node $ts/echo-v1.mjs 127.0.0.1:PORT"
era[ts-v1]=legacy
order=(hyper airlock rmcp ts-v2 ts-v1)
if [ -n "${ONLY:-}" ]; then
    read -r -a order <<<"$ONLY"
fi

server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap stop_server EXIT

# One target in one round: start, check, idle connections, then each client count.
measure() {
    local round=$1 label=$2 port cmd c watchdog
    port=$("$H" port)
    cmd=${command[$label]//PORT/$port}
    # shellcheck disable=SC2086 # the command is a word list
    $cmd 2>>"$bench/$label.log" >/dev/null &
    server_pid=$!
    # If this script dies mid-target, the server goes too (at most 10 minutes on).
    (
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        sleep 600 &
        nap=$!
        wait "$nap"
        kill -KILL "$server_pid" 2>/dev/null
    ) >/dev/null 2>&1 &
    watchdog=$!
    if ! "$H" wait --addr "127.0.0.1:$port" --timeout 30 ||
        ! "$H" check --addr "127.0.0.1:$port" --era "${era[$label]}" --timeout 30 \
            >>"$bench/$label.log"; then
        say "round $round, $label: did not start or answered wrongly (see $bench/$label.log)"
        printf 'fail\t%s\t%s\n' "$round" "$label" >>"$records"
    else
        "$H" idle --addr "127.0.0.1:$port" --pid "$server_pid" --era "${era[$label]}" \
            --connections "$idle_connections" --label "$label" --timeout 120 \
            | sed "s/^idle\t/idle\t$round\t/" >>"$records" || say "round $round, $label: idle failed"
        for c in $clients; do
            "$H" run --addr "127.0.0.1:$port" --pid "$server_pid" --era "${era[$label]}" \
                --clients "$c" --warmup-ms "$warmup_ms" --duration-ms "$duration_ms" \
                --label "$label" --timeout 120 \
                | sed "s/^http\t/http\t$round\t/" >>"$records" ||
                say "round $round, $label c=$c failed"
        done
    fi
    stop_server
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
}

# The tables: medians [min–max] over rounds, and ratios per round (their median [min–max]).
report() {
    awk -F'\t' -v clients="$clients" -v order="${order[*]}" '
    function put(key, value) { n[key]++; v[key, n[key]] = value }
    function stat(key, fmt,    i, j, t, a, m, k) {
        k = n[key] + 0
        if (k == 0) return "—"
        for (i = 1; i <= k; i++) a[i] = v[key, i] + 0
        for (i = 2; i <= k; i++) {          # insertion sort: a handful of rounds
            t = a[i]
            for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
            a[j + 1] = t
        }
        m = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        if (k == 1) return sprintf(fmt, m)
        return sprintf(fmt " [" fmt "–" fmt "]", m, a[1], a[k])
    }
    # Records, with the round after the record type:
    #   load  ROUND  "1min 5min 15min"
    #   http  ROUND  LABEL  ERA  CLIENTS  REQUESTS  REQ/S  P50  P90  P99  RECONNECTS  CPU_US  STATUS
    #   idle  ROUND  LABEL  ERA  K  OPEN  RSS_BEFORE  RSS_AFTER  BYTES/CONN  STATUS
    #   fail  ROUND  LABEL
    $1 == "load" { split($3, l, " "); put("load", l[1]); rounds[$2] = 1 }
    $1 == "http" {
        if ($13 != "ok") { notes = notes "\n- round " $2 ", " $3 " c=" $5 ": " $13; next }
        x[$3, "rps", $5, $2] = $7; x[$3, "p50", $5, $2] = $8; x[$3, "p99", $5, $2] = $10
        if ($12 != "-") x[$3, "cpu", $5, $2] = $12
        if ($11 > 0) notes = notes "\n- round " $2 ", " $3 " c=" $5 ": " $11 " reconnects"
    }
    $1 == "idle" {
        if ($10 != "ok") { notes = notes "\n- round " $2 ", " $3 " idle: " $10; next }
        put($3 SUBSEP "idle", $9 / 1024); put($3 SUBSEP "before", $7 / 1024)
    }
    $1 == "fail" { notes = notes "\n- round " $2 ", " $3 ": did not start or answered wrongly" }
    END {
        nt = split(order, targets, " "); nc = split(clients, cs, " ")
        sdks = "rmcp ts-v2 ts-v1"
        for (r in rounds) for (i = 1; i <= nt; i++) for (j = 1; j <= nc; j++) {
            t = targets[i]; c = cs[j]
            split("rps p50 p99 cpu", ms, " ")
            for (k = 1; k <= 4; k++) if ((t, ms[k], c, r) in x) put(t SUBSEP ms[k] SUBSEP c, x[t, ms[k], c, r])
            if ((t, "rps", c, r) in x && ("hyper", "rps", c, r) in x && x["hyper", "rps", c, r] > 0)
                put(t SUBSEP "vs_hyper" SUBSEP c, x[t, "rps", c, r] / x["hyper", "rps", c, r])
            if ((t, "cpu", c, r) in x && ("airlock", "cpu", c, r) in x && x["airlock", "cpu", c, r] > 0)
                put(t SUBSEP "cpu_vs_airlock" SUBSEP c, x[t, "cpu", c, r] / x["airlock", "cpu", c, r])
            if ((t, "cpu", c, r) in x && ("hyper", "cpu", c, r) in x && x["hyper", "cpu", c, r] > 0)
                put(t SUBSEP "cpu_vs_hyper" SUBSEP c, x[t, "cpu", c, r] / x["hyper", "cpu", c, r])
        }
        # airlock against the fastest SDK of the same round and client count.
        split(sdks, sdk, " ")
        for (r in rounds) for (j = 1; j <= nc; j++) {
            c = cs[j]; best = 0; who = ""
            for (k = 1; k <= 3; k++) if ((sdk[k], "rps", c, r) in x && x[sdk[k], "rps", c, r] > best) {
                best = x[sdk[k], "rps", c, r]; who = sdk[k]
            }
            if (best > 0 && ("airlock", "rps", c, r) in x) {
                put("vs_sdk" SUBSEP c, x["airlock", "rps", c, r] / best); fastest[c, who]++
            }
        }
        printf "%d rounds, medians [min–max]; load average (1 min) at the start of a round: %s\n\n", \
            n["load"], stat("load", "%.2f")
        print "| target | clients | requests/s | p50 µs | p99 µs | server CPU µs/request | rate / hyper |"
        print "|---|---|---|---|---|---|---|"
        for (i = 1; i <= nt; i++) for (j = 1; j <= nc; j++) {
            t = targets[i]; c = cs[j]
            printf "| %s | %s | %s | %s | %s | %s | %s |\n", t, c, \
                stat(t SUBSEP "rps" SUBSEP c, "%.0f"), stat(t SUBSEP "p50" SUBSEP c, "%.0f"), \
                stat(t SUBSEP "p99" SUBSEP c, "%.0f"), stat(t SUBSEP "cpu" SUBSEP c, "%.1f"), \
                (t == "hyper") ? "1" : stat(t SUBSEP "vs_hyper" SUBSEP c, "%.2f×")
        }
        print ""
        print "| target | bytes per idle connection (KiB) | VmRSS before (MiB) |"
        print "|---|---|---|"
        for (i = 1; i <= nt; i++)
            printf "| %s | %s | %s |\n", targets[i], stat(targets[i] SUBSEP "idle", "%.1f"), \
                stat(targets[i] SUBSEP "before", "%.1f")
        print ""
        print "| airlock, ratio per round | median [min–max] | goal |"
        print "|---|---|---|"
        for (j = 1; j <= nc; j++) {
            c = cs[j]
            printf "| rate / hyper, %s clients | **%s** | %s |\n", c, \
                stat("airlock" SUBSEP "vs_hyper" SUBSEP c, "%.2f×"), (c == 16) ? "≥ 0.5×" : ""
        }
        for (j = 1; j <= nc; j++) {
            c = cs[j]; names = ""
            for (k = 1; k <= 3; k++) if ((c, sdk[k]) in fastest)
                names = names (names == "" ? "" : ", ") sdk[k] " in " fastest[c, sdk[k]] " rounds"
            printf "| rate / fastest SDK, %s clients (fastest: %s) | **%s** | ≥ 5× |\n", c, names, \
                stat("vs_sdk" SUBSEP c, "%.1f×")
        }
        printf "| KiB per idle connection | **%s** | < 32 |\n", stat("airlock" SUBSEP "idle", "%.1f")
        for (j = 1; j <= nc; j++) {
            c = cs[j]
            printf "| server CPU per request, airlock / hyper, %s clients | %s | |\n", c, \
                stat("airlock" SUBSEP "cpu_vs_hyper" SUBSEP c, "%.2f×")
        }
        for (j = 1; j <= nc; j++) {
            c = cs[j]
            printf "| server CPU per request, rmcp / airlock, %s clients | %s | |\n", c, \
                stat("rmcp" SUBSEP "cpu_vs_airlock" SUBSEP c, "%.1f×")
        }
        if (notes != "") print "\nNot ok:" notes
    }' "$records"
}

main() {
    if [ -n "${REPORT:-}" ]; then
        report
        return
    fi
    build
    : >"$records"
    for label in "${order[@]}"; do : >"$bench/$label.log"; done
    say "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for r in $(seq 1 "$rounds"); do
        say "round $r of $rounds (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        printf 'load\t%s\t%s\n' "$r" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$records"
        for label in "${order[@]}"; do
            measure "$r" "$label"
        done
    done
    say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    say "records: $records"
    report
}

main "$@"
