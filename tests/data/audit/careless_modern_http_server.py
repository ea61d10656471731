"""A deliberately careless 2026-07-28 Streamable HTTP MCP server for `tests/it/audit_http.rs`
(issue 35): it reads the first of repeated MCP headers, checks `Mcp-Name` only for
`tools/call`, decodes `=?BASE64?` in any case, holds every partial body it is sent, and cuts
an address off after 256 refused requests whatever sent them (so a web page locks the local
client out). It checks Host and Origin and is otherwise close to correct. The audit must fail
it; do not copy it.

Usage: python3 careless_modern_http_server.py   (prints "addr=127.0.0.1:PORT" on stderr)
"""

import base64
import http.server
import json
import sys
import threading
import time

VERSION = "2026-07-28"
LOCK = threading.Lock()
REFUSED = {}
CUT_OFF = {}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, message=None):
        body = b"" if message is None else json.dumps(message).encode()
        self.send_response(status)
        if message is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def error(self, status, code, id=None):
        self.reply(status, {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "refused"}})

    def garbage(self, status, code):
        address = self.client_address[0]
        with LOCK:
            REFUSED[address] = REFUSED.get(address, 0) + 1
            if REFUSED[address] >= 256:
                CUT_OFF[address] = time.time() + 60
                REFUSED[address] = 0
        self.error(status, code)

    def cut_off(self):
        with LOCK:
            return CUT_OFF.get(self.client_address[0], 0) > time.time()

    def checked(self):
        if self.cut_off():
            self.error(429, -31429)
            return False
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host not in ("127.0.0.1", "localhost"):
            self.garbage(421, -32600)
            return False
        origin = self.headers.get("Origin")
        if origin is not None and not origin.startswith(("http://127.0.0.1", "http://localhost")):
            self.garbage(403, -32600)
            return False
        return True

    def do_GET(self):
        if not self.checked():
            return
        if self.path != "/mcp":
            return self.garbage(404, -32600)
        self.error(405, -32600)

    def do_PUT(self):
        if self.checked():
            self.error(405, -32600)

    def do_DELETE(self):
        if self.checked():
            self.error(405, -32600)

    def do_POST(self):
        if not self.checked():
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1 << 20:
            return self.error(413, -32600)
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            return self.garbage(415, -32600)
        try:
            message = json.loads(self.rfile.read(length))
        except ValueError:
            return self.garbage(400, -32700)
        if not isinstance(message, dict) or "id" not in message:
            return self.garbage(400, -32600)
        id = message["id"]
        method = message.get("method")
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        if meta.get("io.modelcontextprotocol/protocolVersion") != VERSION:
            return self.error(400, -32600, id)
        # The first of repeated values, as `headers.get` gives it.
        if self.headers.get("MCP-Protocol-Version") != VERSION:
            return self.error(400, -32020, id)
        if self.headers.get("Mcp-Method") != method:
            return self.error(400, -32020, id)
        if method == "tools/call":
            name = self.headers.get("Mcp-Name") or ""
            if name.lower().startswith("=?base64?") and name.endswith("?="):
                name = base64.b64decode(name[9:-2]).decode()
            if name != params.get("name"):
                return self.error(400, -32020, id)
        if method == "server/discover":
            result = {"supportedVersions": [VERSION], "capabilities": {"tools": {}},
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "careless", "version": "1"}}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call" and params.get("name") == "echo":
            result = {"content": [{"type": "text", "text": "echo"}]}
        elif method in ("tools/call", "prompts/get", "resources/read"):
            return self.error(400, -32602, id)
        else:
            return self.error(404, -32601, id)
        self.reply(200, {"jsonrpc": "2.0", "id": id, "result": result})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print("addr=%s:%d" % server.server_address, file=sys.stderr, flush=True)
server.serve_forever()
