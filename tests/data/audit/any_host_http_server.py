"""A deliberately careless Streamable HTTP MCP server (2025-11-25, sessions) for
`tests/it/audit_http.rs`: it serves any Host and any Origin (so a DNS-rebinding page can drive
it), and keeps its tasks for the whole server instead of per session (any session reads any
task); it is otherwise close to correct. The audit must fail it; do not copy it.

Usage: python3 any_host_http_server.py   (prints "addr=127.0.0.1:PORT" on stderr)
"""

import http.server
import json
import secrets
import sys

SESSIONS = set()
TASKS = {}
TOOL = {"name": "noop", "description": "Does nothing", "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True}, "execution": {"taskSupport": "optional"}}
DONE = {"content": [{"type": "text", "text": "done"}]}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, message=None, headers=()):
        body = b"" if message is None else json.dumps(message).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if message is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def error(self, status, code, id=None):
        self.reply(status, {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "refused"}})

    def do_GET(self):
        self.error(405, -32600)

    def do_PUT(self):
        self.error(405, -32600)

    def do_DELETE(self):
        session = self.headers.get("Mcp-Session-Id")
        if session in SESSIONS:
            SESSIONS.discard(session)
            self.reply(204)
        else:
            self.error(404, -32600)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1 << 20:
            return self.error(413, -32600)
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            return self.error(415, -32600)
        try:
            message = json.loads(self.rfile.read(length))
        except ValueError:
            return self.error(400, -32700)
        if not isinstance(message, dict):
            return self.error(400, -32600)
        method = message.get("method")
        if method == "initialize":
            session = secrets.token_hex(16)
            SESSIONS.add(session)
            result = {"protocolVersion": "2025-11-25",
                      "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
                      "serverInfo": {"name": "any-host", "version": "1"}}
            return self.reply(200, {"jsonrpc": "2.0", "id": message.get("id"), "result": result},
                              [("Mcp-Session-Id", session)])
        session = self.headers.get("Mcp-Session-Id")
        if session is None:
            return self.error(400, -32600, message.get("id"))
        if session not in SESSIONS:
            return self.error(404, -32600, message.get("id"))
        if self.headers.get("MCP-Protocol-Version") not in (None, "2025-11-25"):
            return self.error(400, -32600, message.get("id"))
        if "id" not in message:
            return self.reply(202)
        if method == "tools/list":
            return self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [TOOL]}})
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "tools/call":
            if "task" not in params:
                return self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": DONE})
            task = {"taskId": secrets.token_hex(32), "status": "completed",
                    "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
                    "ttl": 60000}
            TASKS[task["taskId"]] = task
            return self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": {"task": task}})
        if method in ("tasks/get", "tasks/result", "tasks/cancel"):
            # Careless: a task is found by its id alone, whichever session asks.
            task = TASKS.get(params.get("taskId"))
            if task is None:
                return self.reply(200, {"jsonrpc": "2.0", "id": message["id"],
                                        "error": {"code": -32602, "message": "no such task"}})
            result = DONE if method == "tasks/result" else task
            return self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        if method == "tasks/list":
            return self.reply(200, {"jsonrpc": "2.0", "id": message["id"],
                                    "result": {"tasks": list(TASKS.values())}})
        if method == "ping":
            return self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": {}})
        return self.error(404, -32601, message["id"])


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print("addr=%s:%d" % server.server_address, file=sys.stderr, flush=True)
server.serve_forever()
