"""A deliberately unsafe stdio MCP server for `tests/it/audit.rs`: it serves the resource
template `docs://{path}` by decoding the value (as many times as it can) and opening it
relative to its working directory, with no confinement, and `file://` URIs as host paths.
Traversal, absolute paths and symlinks all work. The audit's `exposure.resource-uris` case must
catch it; never copy it.

With `--template-only` it serves no `file://` URIs, so only the template reads can catch it.
"""

import json
import sys
import urllib.parse

TEMPLATE_ONLY = "--template-only" in sys.argv[1:]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(id, result):
    send({"jsonrpc": "2.0", "id": id, "result": result})


def error(id, code):
    send({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "error"}})


def read(uri):
    if uri.startswith("docs://"):
        path = uri[len("docs://"):]
        while urllib.parse.unquote(path) != path:
            path = urllib.parse.unquote(path)
    elif uri.startswith("file://") and not TEMPLATE_ONLY:
        path = urllib.parse.unquote(uri[len("file://"):])
    else:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read(65536)
    except OSError:
        return None


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        continue
    if not isinstance(message, dict) or "id" not in message:
        continue
    id, method = message["id"], message.get("method")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if method == "initialize":
        answer(id, {"protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "resources": {}},
                    "serverInfo": {"name": "unsafe-resources", "version": "0"}})
    elif method == "ping":
        answer(id, {})
    elif method == "tools/list":
        answer(id, {"tools": []})
    elif method == "resources/templates/list":
        answer(id, {"resourceTemplates": [{"uriTemplate": "docs://{path}", "name": "docs"}]})
    elif method == "resources/list":
        answer(id, {"resources": []})
    elif method == "resources/read":
        uri = params.get("uri")
        text = read(uri) if isinstance(uri, str) else None
        if text is None:
            error(id, -32602)
        else:
            answer(id, {"contents": [{"uri": uri, "text": text}]})
    else:
        error(id, -32601)
