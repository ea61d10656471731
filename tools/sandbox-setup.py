#!/usr/bin/env python3
"""What starting a sandbox launcher costs, measured from outside: tools/sandbox-bench.sh's
set-up pass (BENCHMARKS.md, "Command tools in the sandbox").

A fresh server has no launcher ready, so its first call starts one (namespaces, the file
system view, cgroups, seccomp, Landlock) before the command runs; its second call finds the
launcher back in the pool. For each of RUNS fresh servers this prints nothing but, at the end,
one record:

    setup<TAB>LABEL<TAB>RUNS<TAB>P50_FIRST_US<TAB>P50_SECOND_US<TAB>P50_DIFFERENCE_US

    python3 tools/sandbox-setup.py LABEL RUNS AIRLOCK MANIFEST [FLAG...]

Each server is killed after its second reply; a server that does not answer within 20 s is
killed and the run stops with an error (exit status 1)."""

import json
import select
import statistics
import subprocess
import sys
import time


def reply(server, wanted, deadline):
    """Reads lines until the reply whose id is `wanted`; returns its arrival time."""
    buffer = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([server.stdout], [], [], 0.5)
        if not ready:
            continue
        chunk = server.stdout.read1(65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if json.loads(line).get("id") == wanted:
                return time.perf_counter()
    raise SystemExit(f"no reply {wanted} within the deadline")


def main():
    label, runs, airlock, manifest, *flags = sys.argv[1:]
    first, second = [], []
    call = {"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": "run_true", "arguments": {}}}
    for _ in range(int(runs)):
        server = subprocess.Popen([airlock, "serve", "--manifest", manifest, *flags],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        try:
            server.stdin.write(json.dumps({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "sandbox-setup", "version": "0"}}
            }).encode() + b"\n" + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            server.stdin.flush()
            reply(server, 0, deadline)
            for wanted, into in ((1, first), (2, second)):
                sent = time.perf_counter()
                server.stdin.write(json.dumps({**call, "id": wanted}).encode() + b"\n")
                server.stdin.flush()
                into.append((reply(server, wanted, deadline) - sent) * 1e6)
        finally:
            server.kill()
            server.wait()
    difference = statistics.median(a - b for a, b in zip(first, second))
    print(f"setup\t{label}\t{runs}\t{statistics.median(first):.0f}\t"
          f"{statistics.median(second):.0f}\t{difference:.0f}")


main()
