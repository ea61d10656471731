#!/usr/bin/env python3
"""A null OTLP/HTTP collector for tools/bench.sh's `airlock-traces`: answers every POST with
200 and an empty body after reading it whole, and counts them. Prints `PORT` (the kernel's
choice on 127.0.0.1) on its first line; on SIGTERM, `posts N, bytes B` on stderr.

    python3 tools/otlp-sink.py
"""

import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {"posts": 0, "bytes": 0}
lock = threading.Lock()


class Sink(BaseHTTPRequestHandler):
    # Keeps the connection between posts, as a collector does.
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        with lock:
            counts["posts"] += 1
            counts["bytes"] += length
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)

    def stop(_signal, _frame):
        sys.stderr.write(f"otlp-sink: posts {counts['posts']}, bytes {counts['bytes']}\n")
        sys.stderr.flush()
        # At once: an exception raised here would wait for serve_forever's poll and for the
        # handler threads.
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
