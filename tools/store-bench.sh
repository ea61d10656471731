#!/usr/bin/env bash
# The shared quota store (issue 20): what counting quotas in Redis costs a request, and calls
# per second of one replica against three. Results: BENCHMARKS.md, "Shared quota store
# (issue 20)".
#
#   bash tools/store-bench.sh             # build (release), run 3 rounds, print the records
#   ROUNDS=5 DURATION_MS=3000 WARMUP_MS=1000 CLIENTS=48 bash tools/store-bench.sh
#
# Target: crates/airlock/examples/bench_server.rs over HTTP (an in-process `echo`), with BENCH_QUOTAS=1:
# every quota on (server calls, cheap methods, per-client calls and requests) at rates no run
# reaches, so every request is checked and none refused. Load: tools/httpload (keep-alive
# modern `tools/call`s, every reply checked). Redis: /usr/bin/redis-server on a free loopback
# port, no persistence (tests/clients/setup.sh installs it).
#
# Each round:
#   latency  one client, sequential calls: quotas counted locally (governor, in memory), then
#            in Redis (one admission script per request and per call, a lease release per
#            call). p50/p99 are whole requests (write to last byte of the reply); the
#            difference between the two is what the store adds to a call.
#   rate     CLIENTS keep-alive clients: one replica (Redis), then three replicas on the same
#            Redis with CLIENTS/3 connections each (a round-robin balancer hands out
#            connections in turn), requests per second summed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bench="$root/.bench/store"
rounds="${ROUNDS:-3}"
duration_ms="${DURATION_MS:-3000}"
warmup_ms="${WARMUP_MS:-1000}"
clients="${CLIENTS:-48}"
mkdir -p "$bench"
records="$bench/records.tsv"
: >"$records"
say() { printf 'store-bench: %s\n' "$*" >&2; }

[ -x /usr/bin/redis-server ] || { say "no /usr/bin/redis-server: run bash tests/clients/setup.sh"; exit 1; }
say "building (release)"
cargo build --release --locked --example bench_server >&2
(cd tools/httpload && cargo build --release --locked --target-dir "$root/.bench/http/httpload-target" >&2)
H="$root/.bench/http/httpload-target/release/httpload"
S="$root/target/release/examples/bench_server"

pids=()
redis_pid=
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; pids=(); }
trap 'cleanup; [ -z "$redis_pid" ] || kill "$redis_pid" 2>/dev/null || true' EXIT

redis_port=$("$H" port)
mkdir -p "$bench/redis"
/usr/bin/redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$bench/redis" >/dev/null &
redis_pid=$!
"$H" wait --addr "127.0.0.1:$redis_port" --timeout 20
url="redis://127.0.0.1:$redis_port"

# start_server VAR ENV...: starts bench_server with ENV, puts its address in VAR.
start_server() {
    local var=$1
    shift
    local port
    port=$("$H" port)
    env BENCH_QUOTAS=1 "$@" "$S" --http "127.0.0.1:$port" 2>>"$bench/servers.log" &
    pids+=($!)
    "$H" wait --addr "127.0.0.1:$port" --timeout 20
    "$H" check --addr "127.0.0.1:$port" >/dev/null
    printf -v "$var" '%s' "127.0.0.1:$port"
}

run() { # run ADDR LABEL CLIENTS
    "$H" run --addr "$1" --label "$2" --clients "$3" --warmup-ms "$warmup_ms" \
        --duration-ms "$duration_ms" --timeout 120
}

for round in $(seq 1 "$rounds"); do
    say "round $round: load $(cut -d' ' -f1-3 /proc/loadavg)"
    start_server local_addr
    start_server redis_addr BENCH_REDIS_URL="$url"
    run "$local_addr" latency-local 1 | tee -a "$records"
    run "$redis_addr" latency-redis 1 | tee -a "$records"
    run "$redis_addr" rate-1-replica "$clients" | tee -a "$records"
    start_server second BENCH_REDIS_URL="$url"
    start_server third BENCH_REDIS_URL="$url"
    share=$((clients / 3))
    for addr in "$redis_addr" "$second" "$third"; do
        run "$addr" rate-3-replicas "$share" >"$bench/part-$addr" &
    done
    wait_for=3
    while [ "$(cat "$bench"/part-* 2>/dev/null | wc -l)" -lt "$wait_for" ]; do sleep 0.2; done
    awk -F'\t' -v c="$clients" '{ n += $5; r += $6; if ($12 != "ok") s = $12 }
        END { printf "http\trate-3-replicas\tmodern\t%d\t%d\t%.0f\t-\t-\t-\t-\t-\t%s\n", c, n, r, (s ? s : "ok") }' \
        "$bench"/part-* | tee -a "$records"
    rm -f "$bench"/part-*
    cleanup
done

say "medians over $rounds rounds (records in $records):"
for label in latency-local latency-redis rate-1-replica rate-3-replicas; do
    median() { awk -F'\t' -v l="$label" -v c="$1" '$2 == l { print $c }' "$records" | sort -g \
        | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    printf '%-16s req/s %s  p50 %s us  p99 %s us\n' "$label" "$(median 6)" "$(median 7)" "$(median 9)"
done
