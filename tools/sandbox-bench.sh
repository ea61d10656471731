#!/usr/bin/env bash
# Command-tool calls with and without the kernel sandbox, beside the physical limit of that
# path (a process that spawns the same program and waits for it, in a loop), run side by
# side in interleaved rounds. Results: BENCHMARKS.md, "Command tools in the sandbox".
#
#   bash tools/sandbox-bench.sh              # build, run 5 rounds, print the table
#   ROUNDS=9 bash tools/sandbox-bench.sh     # more rounds
#   AIRLOCK=/path/to/airlock bash tools/sandbox-bench.sh   # that binary; airlock not built
#   REPORT=1 bash tools/sandbox-bench.sh     # only the table again, from the last records
#                                            # (give it the same LATENCY as the run)
#   SPAWNS=… CALLS=… LATENCY=…               # calls per pass (defaults 2000, 2000, 1000)
#   BEFORE=/path/to/old/airlock              # also measure that build's sandboxed calls, in
#                                            # the same rounds (target "before")
#   SETUPS=…                                 # fresh servers per set-up pass (default 15)
#
# Builds airlock (release), the load generator (tools/loadgen) and the spawn loop
# (tools/spawnloop, built into .bench/ so its target/ stays out of the tree). Writes into
# .bench/sandbox/ (git-ignored) a small file and two manifests, each with one tool
# `run_true` (the name loadgen's `cmd` mode calls) that runs `wc -c small.txt` in that
# directory: `sandboxed.toml` (the default: the call goes through the launcher) and
# `unsandboxed.toml` (`sandbox = "off"`, `accept_risk = ["unsandboxed"]`).
#
# Each round measures, in this order:
#
#   spawnloop c=1, c=8   the limit: spawn `wc -c small.txt` and wait, 1 or 8 threads at once,
#                        with airlock's spawn settings (empty environment, the directory,
#                        stdin /dev/null, stdout and stderr piped and read, own group)
#   airlock, for unsandboxed then sandboxed, through `loadgen run --mode cmd`:
#     window 1           ping-pong latency (p50, p99: one call, wait for its reply, repeat),
#                        then pipelined calls with at most 1 in flight (calls/s, c=1)
#     window 8           pipelined calls with at most 8 in flight (calls/s, c=8)
#   set-up               tools/sandbox-setup.py: SETUPS fresh servers, each timing its first
#                        call (which starts a launcher: namespaces, the file system view,
#                        cgroups, seccomp, Landlock) against its second (a launcher from the
#                        pool); the difference is what starting a launcher costs
#
# Rounds interleave the targets so that machine noise hits all alike; the table gives
# medians and min–max over rounds, and ratios computed per round. Every step is bounded in
# time (`--timeout`, `timeout`): a stalled server or loop is killed and the script goes on.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
bench="$root/.bench/sandbox"
records="$bench/records.tsv"
rounds="${ROUNDS:-5}"
mkdir -p "$bench"

say() { printf 'sandbox-bench: %s\n' "$*" >&2; }

# Calls per measurement (each is a process spawn, ~1 ms bare and a few ms sandboxed here, so
# a round takes well under a minute), and the ping-pong calls (plus loadgen's warm-up of a
# tenth, at most 200).
spawns="${SPAWNS:-2000}"
calls="${CALLS:-2000}"
latency="${LATENCY:-1000}"

L="$root/tools/loadgen/target/release"
S="$root/.bench/spawnloop-target/release/spawnloop"
airlock="${AIRLOCK:-$root/target/release/airlock}"
airlock_flags=(--calls-per-minute 4000000000 --call-burst 4000000000
    --cheap-per-minute 4000000000 --max-in-flight 64)
wc_path=$(command -v wc)
before="${BEFORE:-}"
setups="${SETUPS:-15}"

build() {
    if [ -z "${AIRLOCK:-}" ]; then
        say "building airlock (release; fat LTO, a few minutes when src/ changed)"
        cargo build --release --quiet --bin airlock
    fi
    say "building the load generator and the spawn loop"
    (cd tools/loadgen && cargo build --release --quiet)
    (cd tools/spawnloop &&
        CARGO_TARGET_DIR="$root/.bench/spawnloop-target" cargo build --release --quiet)
}

manifests() {
    # 14 bytes: `wc -c` reads it and prints "14 small.txt".
    printf 'hello airlock\n' >"$bench/small.txt"
    cat >"$bench/sandboxed.toml" <<'EOF'
# tools/sandbox-bench.sh: one command tool, in the kernel sandbox (the default).
[server]
name = "bench-sandboxed"

[[tool]]
name = "run_true"
description = "Counts the bytes of a small file"
command = ["wc", "-c", "small.txt"]
EOF
    cat >"$bench/unsandboxed.toml" <<'EOF'
# tools/sandbox-bench.sh: the same tool, outside the sandbox.
[server]
name = "bench-unsandboxed"

[[tool]]
name = "run_true"
description = "Counts the bytes of a small file"
command = ["wc", "-c", "small.txt"]
sandbox = "off"
accept_risk = ["unsandboxed"]
EOF
}

# loadgen counts a reply without a JSON-RPC error as served, and a command that failed (say,
# a sandbox that refused to run it) still answers with a result (`isError`). So check once,
# before measuring, that a call really runs `wc` and returns its output.
check() {
    local manifest=$1 reply
    reply=$({
        printf '%s\n' \
            '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sandbox-bench","version":"0"}}}' \
            '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
            '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_true","arguments":{}}}'
        sleep 1 # keep stdin open while the call runs
    } | timeout 20 "$airlock" serve --manifest "$manifest" 2>/dev/null | grep '"id":1' || true)
    if [[ "$reply" != *'"text":"14 small.txt\n"'* || "$reply" == *'"isError":true'* ]]; then
        say "a call through $manifest did not return wc's output: $reply"
        exit 1
    fi
}

# One round: the spawn loop, then each airlock: ping-pong, window 1, window 8.
round() {
    local round=$1 target window began ended
    printf 'load\t%s\t%s\n' "$round" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$records"
    for c in 1 8; do
        "$S" --label "spawnloop-c$c" --requests "$spawns" --concurrency "$c" --warmup 50 \
            --dir "$bench" --timeout 120 -- "$wc_path" -c small.txt \
            | sed "s/^spawn\t/spawn\t$round\t/" >>"$records" || say "spawnloop c=$c failed"
    done
    local targets=(unsandboxed sandboxed)
    [ -n "$before" ] && targets+=(before)
    for target in "${targets[@]}"; do
        local binary="$airlock" manifest="$bench/$target.toml"
        if [ "$target" = before ]; then
            binary="$before"
            manifest="$bench/sandboxed.toml"
        fi
        # Ping-pong: the latency figures, and a rate at c=1 from the wall time of the whole
        # loadgen run (see "pp" in report: the cold start is taken off; what is left beyond
        # the calls, one pipelined call and the server's exit, is a few ms in seconds).
        began=$(date +%s%N)
        "$L/loadgen" run --label "$target-pp" --mode cmd --requests 1 --latency "$latency" \
            --window 1 --timeout 120 -- \
            "$binary" serve --manifest "$manifest" "${airlock_flags[@]}" \
            | sed "s/^run\t/run\t$round\t/" >>"$records" || say "$target ping-pong failed"
        ended=$(date +%s%N)
        printf 'pp\t%s\t%s\t%s\n' "$round" "$target-pp" "$((ended - began))" >>"$records"
        # Pipelined, at most 1 and 8 calls in flight. The ping-pong pass of these runs (20
        # calls) is only a warm-up: its figures are not used.
        for window in 1 8; do
            "$L/loadgen" run --label "$target-w$window" --mode cmd --requests "$calls" \
                --latency 20 --window "$window" --timeout 120 -- \
                "$binary" serve --manifest "$manifest" "${airlock_flags[@]}" \
                | sed "s/^run\t/run\t$round\t/" >>"$records" || say "$target w$window failed"
        done
        if [ "$target" != unsandboxed ]; then
            timeout 300 python3 tools/sandbox-setup.py "$target" "$setups" "$binary" \
                "$manifest" "${airlock_flags[@]}" | sed "s/^setup\t/setup\t$round\t/" \
                >>"$records" || say "$target set-up pass failed"
        fi
    done
}

# The table: medians [min–max] over rounds, and ratios per round (their median [min–max]).
report() {
    awk -F'\t' -v latency="$latency" '
    function put(key, value) { n[key]++; v[key, n[key]] = value }
    # Median, min and max of key, as "median [min–max]" with the given printf format.
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
    #   spawn ROUND  LABEL  C  N  CALLS/S  P50  P90  P99  STATUS
    #   run   ROUND  LABEL  MODE  COLD_MS  HWM  RSS  CALLS/S  SERVED  REFUSED  P50  P90  P99  PEAK  STATUS
    #   pp    ROUND  LABEL  WALL_NS        (the wall time of the loadgen run LABEL)
    # Labels: spawnloop-c1, spawnloop-c8; TARGET-pp, TARGET-w1, TARGET-w8 for TARGET in
    # unsandboxed, sandboxed.
    $1 == "load" { split($3, l, " "); put("load", l[1]); rounds[$2] = 1 }
    $1 == "spawn" {
        c = ($3 == "spawnloop-c1") ? 1 : 8
        x["spawn", "tp" c, $2] = $6
        if (c == 1) { x["spawn", "p50", $2] = $7; x["spawn", "p99", $2] = $9; x["spawn", "pp", $2] = $6 }
        if ($10 != "ok") notes = notes "\n- round " $2 ", " $3 ": " $10
    }
    $1 == "run" {
        split($3, t, "-")                   # unsandboxed-w1 → unsandboxed, w1
        if (t[2] == "pp") { x[t[1], "p50", $2] = $11; x[t[1], "p99", $2] = $13; cold[t[1], $2] = $5 }
        else x[t[1], "tp" substr(t[2], 2), $2] = $8
        if ($15 != "ok") notes = notes "\n- round " $2 ", " $3 ": " $15
    }
    # The ping-pong rate: loadgen made latency calls, its warm-up (a tenth, at most 200) and
    # one pipelined call, in the wall time less the cold start.
    $1 == "pp" { split($3, t, "-"); wall[t[1], $2] = $4 / 1e9 }
    #   setup ROUND LABEL RUNS P50_FIRST_US P50_SECOND_US P50_DIFFERENCE_US
    $1 == "setup" { x[$3, "first", $2] = $5; x[$3, "second", $2] = $6; x[$3, "start", $2] = $7 }
    END {
        warm = int(latency / 10); if (warm > 200) warm = 200
        for (key in wall) {
            split(key, k, SUBSEP)
            if (key in cold) x[k[1], "pp", k[2]] = (latency + warm + 1) / (wall[key] - cold[key] / 1000)
        }
        split("spawn unsandboxed sandboxed before", targets, " ")
        split("pp tp1 tp8 p50 p99 first second start", metrics, " ")
        for (r in rounds) {
            for (i = 1; i <= 4; i++) for (j = 1; j <= 8; j++)
                if ((targets[i], metrics[j], r) in x)
                    put(targets[i] SUBSEP metrics[j], x[targets[i], metrics[j], r])
            # Ratios within a round, where both sides were measured.
            ratio("r_p50", "sandboxed", "p50", "unsandboxed", "p50", r)
            ratio("r_tp8", "sandboxed", "tp8", "spawn", "tp8", r)
            ratio("r_tp8_off", "unsandboxed", "tp8", "spawn", "tp8", r)
            ratio("r_tp8_on_off", "sandboxed", "tp8", "unsandboxed", "tp8", r)
            ratio("r_pp", "sandboxed", "pp", "spawn", "pp", r)
            ratio("r_pp_off", "unsandboxed", "pp", "spawn", "pp", r)
            ratio("r_p50_off_spawn", "unsandboxed", "p50", "spawn", "p50", r)
            ratio("r_p50_spawn", "sandboxed", "p50", "spawn", "p50", r)
            ratio("r_p50_before", "sandboxed", "p50", "before", "p50", r)
            ratio("r_tp8_before", "sandboxed", "tp8", "before", "tp8", r)
            ratio("r_tp8_before_spawn", "before", "tp8", "spawn", "tp8", r)
            ratio("r_p50_before_off", "before", "p50", "unsandboxed", "p50", r)
        }
        printf "%d rounds, medians [min–max]; load average (1 min) at the start of a round: %s\n\n", \
            n["load"], stat("load", "%.2f")
        print "| | calls/s, c=1 (ping-pong) | calls/s, c=1 (window 1) | calls/s, c=8 (window 8) | p50 µs (c=1) | p99 µs (c=1) |"
        print "|---|---|---|---|---|---|"
        split("spawn loop (limit)|airlock, sandbox off|airlock, sandboxed|the build before, sandboxed", names, "|")
        for (i = 1; i <= 4; i++) if (n[targets[i] SUBSEP "tp8"] > 0)
            printf "| %s | %s | %s | %s | %s | %s |\n", names[i], \
                stat(targets[i] SUBSEP "pp", "%.0f"), \
                (i == 1) ? "(same)" : stat(targets[i] SUBSEP "tp1", "%.0f"), \
                stat(targets[i] SUBSEP "tp8", "%.0f"), \
                stat(targets[i] SUBSEP "p50", "%.0f"), stat(targets[i] SUBSEP "p99", "%.0f")
        print ""
        print "| ratio (per round) | median [min–max] | goal |"
        print "|---|---|---|"
        printf "| sandboxed p50 / unsandboxed p50 | **%s** | ≤ 1.3× |\n", stat("r_p50", "%.2f×")
        printf "| sandboxed calls/s / spawn loop, c=8 | **%s** | ≥ 0.7× |\n", stat("r_tp8", "%.2f×")
        printf "| unsandboxed calls/s / spawn loop, c=8 | %s | |\n", stat("r_tp8_off", "%.2f×")
        printf "| sandboxed calls/s / unsandboxed, c=8 | %s | |\n", stat("r_tp8_on_off", "%.2f×")
        printf "| sandboxed calls/s / spawn loop, c=1 (ping-pong) | %s | |\n", stat("r_pp", "%.2f×")
        printf "| unsandboxed calls/s / spawn loop, c=1 (ping-pong) | %s | |\n", stat("r_pp_off", "%.2f×")
        printf "| unsandboxed p50 / spawn loop p50 | %s | |\n", stat("r_p50_off_spawn", "%.2f×")
        printf "| sandboxed p50 / spawn loop p50 | %s | |\n", stat("r_p50_spawn", "%.2f×")
        if (n["r_p50_before"] > 0) {
            printf "| sandboxed p50 / the build before, sandboxed p50 | %s | |\n", stat("r_p50_before", "%.2f×")
            printf "| the build before: sandboxed p50 / unsandboxed p50 | %s | |\n", stat("r_p50_before_off", "%.2f×")
            printf "| sandboxed calls/s / the build before, c=8 | %s | |\n", stat("r_tp8_before", "%.2f×")
            printf "| the build before: sandboxed calls/s / spawn loop, c=8 | %s | |\n", stat("r_tp8_before_spawn", "%.2f×")
        }
        print ""
        print "| starting a launcher (tools/sandbox-setup.py) | first call µs | second call µs | difference µs |"
        print "|---|---|---|---|"
        for (i = 3; i <= 4; i++) if (n[targets[i] SUBSEP "start"] > 0)
            printf "| %s | %s | %s | %s |\n", names[i], stat(targets[i] SUBSEP "first", "%.0f"), \
                stat(targets[i] SUBSEP "second", "%.0f"), stat(targets[i] SUBSEP "start", "%.0f")
        if (notes != "") print "\nNot ok:" notes
    }
    function ratio(name, a, am, b, bm, r) {
        if ((a, am, r) in x && (b, bm, r) in x && x[b, bm, r] > 0) put(name, x[a, am, r] / x[b, bm, r])
    }' "$records"
}

main() {
    if [ -n "${REPORT:-}" ]; then
        report
        return
    fi
    build
    manifests
    check "$bench/unsandboxed.toml"
    check "$bench/sandboxed.toml"
    : >"$records"
    say "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for r in $(seq 1 "$rounds"); do
        say "round $r of $rounds (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        round "$r"
    done
    say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    say "records: $records"
    report
}

main "$@"
