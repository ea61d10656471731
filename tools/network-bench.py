#!/usr/bin/env python3
"""A networked tool through airlock's proxy, against the same tool unsandboxed.

Results: BENCHMARKS.md, "Network by destination". Both targets are airlock serving one tool
that runs curl against a loopback HTTP server this script starts (Python's ThreadingHTTPServer,
the same for both):

  direct    sandbox = "off" (accept_risk = ["unsandboxed"]): curl connects to the server
  proxied   the default sandbox with network = ["127.0.0.1:PORT"]: curl runs in a network
            namespace holding only the proxy, which checks the destination and copies bytes

Each round, for each target (the order alternates per round): a fresh `airlock serve`, 10
warm-up calls, then CALLS ping-pong calls fetching a 100-byte file (latency: p50 of the
round), then DOWNLOADS calls fetching a 64 MiB file to /dev/null (throughput: MiB/s of the
median call). The table: medians over rounds, [min-max], and the ratios per round.

  python3 tools/network-bench.py                   # airlock at target/release/airlock
  AIRLOCK=/path/airlock ROUNDS=7 CALLS=200 python3 tools/network-bench.py
  SERVER=sendfile python3 tools/network-bench.py   # the server sends files with sendfile(2)

Stops by itself: every call has a timeout, and each server is killed after its round.
"""

import http.server
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
AIRLOCK = os.environ.get("AIRLOCK", str(ROOT / "target/release/airlock"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
CALLS = int(os.environ.get("CALLS", "200"))
DOWNLOADS = int(os.environ.get("DOWNLOADS", "5"))
BIG = 64 * 1024 * 1024
SERVER = os.environ.get("SERVER", "python")


class Quiet(http.server.SimpleHTTPRequestHandler):
    # Headers and body go in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK (up to 40 ms), which would measure the kernel's timer, not airlock.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def copyfile(self, source, outputfile):
        # SERVER=sendfile: the kernel sends the file (sendfile(2)), as production servers do;
        # the default, Python's 64 KiB reads and writes, costs the server about as much CPU
        # as curl, which on two cores competes with whatever else the path holds.
        if SERVER == "sendfile":
            self.connection.sendfile(source)
        elif SERVER == "memory":
            self.connection.sendall(in_memory(source))
        else:
            super().copyfile(source, outputfile)


MEMORY = {}


def in_memory(source):
    # SERVER=memory: each file is read once, then sent from memory in one write, as a server
    # sends what it built (the kernel copies it into large segments; Python costs nothing).
    if source.name not in MEMORY:
        MEMORY[source.name] = source.read()
    return MEMORY[source.name]


def start_files(directory):
    handler = lambda *a, **k: Quiet(*a, directory=directory, **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def manifest(directory, port, proxied):
    curl = shutil.which("curl")
    keys = (
        f'network = ["127.0.0.1:{port}"]\n'
        if proxied
        else 'sandbox = "off"\naccept_risk = ["unsandboxed"]\n'
    )
    text = f"""
[[tool]]
name = "fetch"
description = "Fetches a file from the benchmark's server"
command = ["{curl}", "-sS", "--fail", "--max-time", "60", "-o", "/dev/null", "{{url}}"]
timeout_ms = 120000
{keys}args.url = {{ type = "string", pattern = "^http://127\\\\.0\\\\.0\\\\.1:[0-9]+/[a-z.]+$", max_length = 100 }}
"""
    path = directory / ("proxied.toml" if proxied else "direct.toml")
    path.write_text(text)
    return path


class Server:
    def __init__(self, path):
        self.process = subprocess.Popen(
            [AIRLOCK, "serve", "--manifest", str(path), "--calls-per-minute", "1000000"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "network-bench", "version": "1"},
            },
        )
        self.process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.process.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def fetch(self, url):
        result = self.request("tools/call", {"name": "fetch", "arguments": {"url": url}})
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"][:400])
        return result

    def close(self):
        self.process.kill()
        self.process.wait(timeout=10)


def measure(path, port):
    server = Server(path)
    try:
        small = f"http://127.0.0.1:{port}/small.txt"
        big = f"http://127.0.0.1:{port}/big.bin"
        for _ in range(10):
            server.fetch(small)
        latencies = []
        for _ in range(CALLS):
            start = time.perf_counter()
            server.fetch(small)
            latencies.append(time.perf_counter() - start)
        durations = []
        for _ in range(DOWNLOADS):
            start = time.perf_counter()
            # curl --fail exits non-zero (an isError result) on a short or failed transfer.
            server.fetch(big)
            durations.append(time.perf_counter() - start)
        return statistics.median(latencies), (BIG / (1024 * 1024)) / statistics.median(durations)
    finally:
        server.close()


def spread(values, fmt):
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}–{fmt(max(values))}]"


def main():
    if not os.path.isfile(AIRLOCK):
        sys.exit(f"network-bench: {AIRLOCK} is missing: cargo build --release")
    with tempfile.TemporaryDirectory(prefix="airlock-network-bench-") as scratch:
        scratch = pathlib.Path(scratch)
        site = scratch / "site"
        site.mkdir()
        (site / "small.txt").write_bytes(b"x" * 100)
        with open(site / "big.bin", "wb") as big:
            big.truncate(BIG)
        files = start_files(str(site))
        port = files.server_address[1]
        paths = {"direct": manifest(scratch, port, False), "proxied": manifest(scratch, port, True)}
        results = {"direct": [], "proxied": []}
        for round_ in range(ROUNDS):
            order = ["direct", "proxied"] if round_ % 2 == 0 else ["proxied", "direct"]
            for target in order:
                p50, throughput = measure(paths[target], port)
                results[target].append((p50, throughput))
                print(
                    f"round {round_ + 1} {target}: p50 {p50 * 1e3:.2f} ms, "
                    f"64 MiB at {throughput:.0f} MiB/s",
                    file=sys.stderr,
                )
        files.shutdown()
    us = lambda v: f"{v * 1e6:.0f}"  # noqa: E731
    mibs = lambda v: f"{v:.0f}"  # noqa: E731
    ratio = lambda v: f"{v:.2f}×"  # noqa: E731
    print("| target | p50 of a 100-byte fetch, µs | 64 MiB download, MiB/s |")
    print("|---|---|---|")
    for target in ("direct", "proxied"):
        rows = results[target]
        print(
            f"| {target} | {spread([r[0] for r in rows], us)} | {spread([r[1] for r in rows], mibs)} |"
        )
    latency = [p[0] / d[0] for p, d in zip(results["proxied"], results["direct"])]
    throughput = [p[1] / d[1] for p, d in zip(results["proxied"], results["direct"])]
    print()
    print("| ratio, per round | median [min–max] | goal |")
    print("|---|---|---|")
    print(f"| proxied p50 / direct p50 | {spread(latency, ratio)} | ≤ 1.5× |")
    print(f"| proxied throughput / direct throughput | {spread(throughput, ratio)} | ≥ 0.8× |")


if __name__ == "__main__":
    main()
