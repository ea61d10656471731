#!/usr/bin/env bash
# End-to-end benchmarks: airlock beside reference MCP servers and the physical limit of this
# machine (a line echo), run side by side in interleaved rounds. Results: BENCHMARKS.md.
#
#   bash tools/bench.sh                # install, build, run every round, print the tables
#   ROUNDS=7 bash tools/bench.sh       # more rounds
#   ONLY="airlock echo-flush" bash tools/bench.sh   # a subset of the servers
#   SKIP_REFERENCES=1 bash tools/bench.sh           # airlock and the baselines only
#   BEFORE=/path/to/other/checkout bash tools/bench.sh   # also its airlock, as *-before
#   SKIP_FLOOD=1 SKIP_BIGLINE=1 bash tools/bench.sh # rounds only, no memory passes
#   bash tools/bench.sh install        # only install and build the reference servers
#
# Builds airlock (release), the load generator and the baselines (tools/loadgen, its own
# workspace), and installs the reference servers into .bench/ (git-ignored): the official
# TypeScript reference server (@modelcontextprotocol/server-everything, from npm), a minimal
# server on the official Python SDK (`mcp`, from PyPI, in a venv) and a minimal server on the
# official Rust SDK (`rmcp`, from crates.io, a scratch Cargo project generated below). The
# Python and Rust servers are written here: each has an in-process `echo` tool and a
# `run_true` tool that runs `true`, like airlock's benchmark targets.
#
# Rounds interleave the servers (A B C … A B C …) so that machine noise hits all alike; the
# report gives medians and min–max over rounds, and ratios to the flush-per-line echo. Each
# round also measures ping-pong with the client and the server pinned to one core
# (`ping-1core`, needs `taskset`): across cores a virtual machine's idle-CPU wake-up can
# dominate every server's latency.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
bench="$root/.bench"
rounds="${ROUNDS:-5}"
mkdir -p "$bench"

say() { printf 'bench: %s\n' "$*" >&2; }

# --- versions of the reference servers (pinned) -------------------------------------------
everything_version="2026.8.31"
python_mcp_version="2.3.0"
rmcp_version="3.11.0"
node="${NODE:-$root/tests/clients/.env/node/node_modules/.bin/node}"
[ -x "$node" ] || node=$(command -v node)

build() {
    say "building airlock (release), the benchmark example and the load generator"
    cargo build --release --quiet --bin airlock --example bench_server
    (cd tools/loadgen && cargo build --release --quiet)
    cat >"$bench/cmd.toml" <<'EOF'
# airlock serve's benchmark manifest: one command tool.
[server]
name = "bench-cmd"

[[tool]]
name = "run_true"
description = "Runs true"
command = ["true"]
EOF
}

install_everything() {
    local dir="$bench/everything"
    if [ ! -f "$dir/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
        say "installing @modelcontextprotocol/server-everything@$everything_version"
        mkdir -p "$dir"
        (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts \
            "@modelcontextprotocol/server-everything@$everything_version" >/dev/null)
    fi
}

install_python() {
    local venv="$bench/python"
    if ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
        say "installing mcp==$python_mcp_version into $venv"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            "mcp==$python_mcp_version"
    fi
    cat >"$bench/python_server.py" <<'EOF'
"""A minimal MCP server on the official Python SDK, for tools/bench.sh."""
import asyncio

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def echo(message: str) -> str:
    """Returns its message."""
    return message


@server.tool()
async def run_true() -> str:
    """Runs true."""
    process = await asyncio.create_subprocess_exec("true")
    return str(await process.wait())


if __name__ == "__main__":
    server.run("stdio")
EOF
}

install_rmcp() {
    local dir="$bench/rmcp-server"
    mkdir -p "$dir/src"
    cat >"$dir/Cargo.toml" <<EOF
[package]
name = "rmcp-bench-server"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = { version = "=$rmcp_version", features = ["server", "macros", "transport-io"] }
serde = { version = "1", features = ["derive"] }
tokio = { version = "1", features = ["full"] }

[workspace]
EOF
    cat >"$dir/src/main.rs" <<'EOF'
//! A minimal MCP server on the official Rust SDK, for tools/bench.sh. `--blocking-stdio` uses
//! rmcp's `stdio()` (tokio's blocking stdin/stdout); the default is `stdio_pipes()`, which rmcp
//! recommends when both streams are pipes.
use rmcp::{
    ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    message: String,
}

#[derive(Clone)]
struct Bench {
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Bench {
    #[tool(description = "Returns its message")]
    fn echo(&self, Parameters(EchoArgs { message }): Parameters<EchoArgs>) -> String {
        message
    }

    #[tool(description = "Runs true")]
    async fn run_true(&self) -> String {
        match tokio::process::Command::new("true").status().await {
            Ok(status) => status.to_string(),
            Err(error) => error.to_string(),
        }
    }
}

#[tool_handler]
impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Bench { tool_router: Bench::tool_router() };
    let service = if std::env::args().any(|arg| arg == "--blocking-stdio") {
        server.serve(rmcp::transport::stdio()).await?
    } else {
        server.serve(rmcp::transport::stdio_pipes()).await?
    };
    service.waiting().await?;
    Ok(())
}
EOF
    say "building the rmcp $rmcp_version server in $dir"
    (cd "$dir" && cargo build --release --quiet)
}

# --- the servers: label, modes, command --------------------------------------------------
L="$root/tools/loadgen/target/release"
airlock_flags=(--calls-per-minute 4000000000 --call-burst 4000000000
    --cheap-per-minute 4000000000 --max-in-flight 64)
declare -A command modes
command[echo-flush]="$L/line-echo"
modes[echo-flush]="ping call cmd"
command[echo-json]="$L/line-echo --json"
modes[echo-json]="ping call cmd"
command[airlock]="$root/target/release/examples/bench_server"
modes[airlock]="ping call"
# The same with its Prometheus metrics kept (the endpoint bound, never scraped): what the
# counting costs each request (BENCHMARKS.md, "Metrics").
command[airlock-metrics]="env BENCH_METRICS=127.0.0.1:0 $root/target/release/examples/bench_server"
modes[airlock-metrics]="ping call"
# The same tracing every request over OTLP/HTTP to a null collector on loopback
# (tools/otlp-sink.py, started by main when this label runs): what a span per request costs,
# its export included (BENCHMARKS.md, "Traces").
command[airlock-traces]="env BENCH_OTLP=http://127.0.0.1:OTLP_PORT $root/target/release/examples/bench_server"
modes[airlock-traces]="ping call"
# The same tracing one request in ten (`--otlp-sample 0.1`).
command[airlock-traces-10]="env BENCH_OTLP=http://127.0.0.1:OTLP_PORT BENCH_OTLP_SAMPLE=0.1 $root/target/release/examples/bench_server"
modes[airlock-traces-10]="ping call"
command[airlock-serve]="$root/target/release/airlock serve --manifest $bench/cmd.toml ${airlock_flags[*]}"
modes[airlock-serve]="ping cmd"
command[ts-everything]="$node $bench/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio"
modes[ts-everything]="ping call"
command[python-mcp]="$bench/python/bin/python $bench/python_server.py"
modes[python-mcp]="ping call cmd"
command[rmcp]="$bench/rmcp-server/target/release/rmcp-bench-server"
modes[rmcp]="ping call cmd"
command[rmcp-blocking]="$bench/rmcp-server/target/release/rmcp-bench-server --blocking-stdio"
modes[rmcp-blocking]="ping call"
# BEFORE=<dir>: also measure the airlock built in another checkout (e.g. a git worktree of the
# commit before a change), as airlock-before and airlock-serve-before.
if [ -n "${BEFORE:-}" ]; then
    command[airlock-before]="$BEFORE/target/release/examples/bench_server"
    modes[airlock-before]="ping call"
    command[airlock-serve-before]="$BEFORE/target/release/airlock serve --manifest $bench/cmd.toml ${airlock_flags[*]}"
    modes[airlock-serve-before]="ping cmd"
fi
order=(echo-flush echo-json airlock airlock-metrics airlock-serve ts-everything python-mcp rmcp
    rmcp-blocking)
if [ -n "${SKIP_REFERENCES:-}" ]; then
    order=(echo-flush echo-json airlock airlock-metrics airlock-serve)
fi
if [ -n "${BEFORE:-}" ]; then
    order=(echo-flush echo-json airlock airlock-metrics airlock-before airlock-serve
        airlock-serve-before "${order[@]:5}")
fi
if [ -n "${ONLY:-}" ]; then
    read -r -a order <<<"$ONLY"
fi

# Requests per throughput run, ping-pong rounds, and the writer's window (0: unlimited) per
# mode. Command tools are bounded by process spawns; their window is the in-flight cap of 8
# that airlock applies by default, so no server refuses for being busy. Slow servers get
# fewer requests per round (a rate needs a second or so of work, not 100,000 requests); the
# 100,000-request memory figure comes from the flood pass below, once per server.
declare -A requests latency window
requests[ping]=100000; latency[ping]=2000; window[ping]=0
requests[call]=100000; latency[call]=2000; window[call]=0
requests[cmd]=2000;    latency[cmd]=300;   window[cmd]=8
declare -A fewer=(
    [ts-everything:ping]=20000 [ts-everything:call]=10000
    [python-mcp:ping]=3000 [python-mcp:call]=3000 [python-mcp:cmd]=200
    [rmcp:ping]=20000 [rmcp:call]=20000 [rmcp:cmd]=1000
    [rmcp-blocking:ping]=20000 [rmcp-blocking:call]=20000
)
# The core the one-core ping-pong pass runs on (the last one), if `taskset` is there.
one_core=""
if command -v taskset >/dev/null; then
    one_core=$(($(nproc) - 1))
fi
# The memory flood: 100,000 pipelined pings, once per server (and 1,000,000 for airlock).
flood_requests=100000

main() {
    if [ "${1:-}" = "install" ]; then
        install_everything
        install_python
        install_rmcp
        return
    fi
    build
    if [ -z "${SKIP_REFERENCES:-}" ]; then
        install_everything
        install_python
        install_rmcp
    fi
    local records="$bench/records.tsv"
    : >"$records"
    if [[ " ${order[*]} " == *" airlock-traces"* ]]; then
        coproc SINK { exec python3 "$root/tools/otlp-sink.py"; }
        local sink_port label
        read -r sink_port <&"${SINK[0]}"
        for label in airlock-traces airlock-traces-10; do
            command[$label]="${command[$label]/OTLP_PORT/$sink_port}"
        done
        trap 'kill "$SINK_PID" 2>/dev/null || true' EXIT
        say "null OTLP collector on 127.0.0.1:$sink_port"
    fi
    say "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for round in $(seq 1 "$rounds"); do
        say "round $round of $rounds"
        for mode in ping call cmd; do
            for label in "${order[@]}"; do
                [[ " ${modes[$label]} " == *" $mode "* ]] || continue
                local n="${fewer[$label:$mode]:-${requests[$mode]}}"
                # shellcheck disable=SC2086 # the command is a word list
                "$L/loadgen" run --label "$label" --mode "$mode" \
                    --requests "$n" --latency "${latency[$mode]}" \
                    --window "${window[$mode]}" --timeout 300 -- ${command[$label]} \
                    >>"$records" || say "$label $mode failed"
            done
        done
        # Ping-pong with the client and the server on one core: each reply then costs a
        # context switch, not the wake-up of an idle virtual CPU, which on this kind of
        # machine can take ~80 µs and hides what the servers themselves cost.
        if [ -n "$one_core" ]; then
            for label in "${order[@]}"; do
                [[ " ${modes[$label]} " == *" ping "* ]] || continue
                # shellcheck disable=SC2086
                taskset -c "$one_core" "$L/loadgen" run --label "$label" --mode ping \
                    --requests 2000 --latency 3000 --timeout 300 -- ${command[$label]} \
                    | sed 's/^run\t\([^\t]*\)\tping/run\t\1\tping-1core/' >>"$records" \
                    || say "$label one-core ping failed"
            done
        fi
    done
    if [ -z "${SKIP_FLOOD:-}" ]; then
        for label in "${order[@]}"; do
            say "flood of $flood_requests pipelined pings: $label"
            # shellcheck disable=SC2086
            "$L/loadgen" run --label "$label" --mode ping --requests "$flood_requests" \
                --latency 0 --timeout 600 -- ${command[$label]} \
                | sed 's/^run\t\([^\t]*\)\tping/run\t\1\tflood-100k/' >>"$records" \
                || say "$label flood failed"
        done
        for label in airlock airlock-serve; do
            say "flood of 1,000,000 pipelined pings: $label"
            # shellcheck disable=SC2086
            "$L/loadgen" run --label "$label" --mode ping --requests 1000000 \
                --latency 0 --timeout 600 -- ${command[$label]} \
                | sed 's/^run\t\([^\t]*\)\tping/run\t\1\tflood-1M/' >>"$records" \
                || say "$label flood failed"
        done
    fi
    if [ -z "${SKIP_BIGLINE:-}" ]; then
        for label in "${order[@]}"; do
            say "512 MiB line: $label"
            # shellcheck disable=SC2086
            "$L/loadgen" bigline --label "$label" --mib 512 --timeout 120 -- ${command[$label]} \
                >>"$records" || say "$label bigline failed"
        done
    fi
    say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$L/loadgen" report "$records" --baseline echo-flush
}

main "$@"
