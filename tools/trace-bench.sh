#!/usr/bin/env bash
# What tracing costs bench_server, in interleaved rounds: off, traced at 100% and at 10% (this
# build), and, when OLD names another build's bench_server, that build traced at 100%. All
# against one null collector (tools/otlp-sink.py). BENCHMARKS.md, "Traces".
#
#   cargo build --release -p airlock --example bench_server --features "http metrics otel redis"
#   (cd tools/loadgen && cargo build --release)
#   ROUNDS=7 [REQUESTS=1000000] [OLD=/path/to/other/bench_server] bash tools/trace-bench.sh [OUT.tsv]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
L=$root/tools/loadgen/target/release/loadgen
NEW=$root/target/release/examples/bench_server
OLD=${OLD:-}
out=${1:-/tmp/trace.tsv}
: > "$out"
coproc SINK { exec python3 $root/tools/otlp-sink.py; }
read -r port <&"${SINK[0]}"
declare -A cmd
cmd[off]="$NEW"
cmd[traces]="env BENCH_OTLP=http://127.0.0.1:$port $NEW"
cmd[traces-10]="env BENCH_OTLP=http://127.0.0.1:$port BENCH_OTLP_SAMPLE=0.1 $NEW"
labels=(off traces traces-10)
if [[ -n "$OLD" ]]; then
  cmd[old-traces]="env BENCH_OTLP=http://127.0.0.1:$port $OLD"
  labels+=(old-traces)
fi
for round in $(seq 1 "${ROUNDS:-9}"); do
  n=${#labels[@]}
  for i in $(seq 0 $((n-1))); do
    label=${labels[$(( (i + round) % n ))]}
    for mode in ping call; do
      $L run --label "$label" --mode $mode --requests "${REQUESTS:-1000000}" --latency 200 -- ${cmd[$label]} >> "$out" 2>/dev/null
    done
  done
  echo "round $round $(cat /proc/loadavg)" >&2
done
kill $SINK_PID 2>/dev/null
$L report "$out" --baseline off
