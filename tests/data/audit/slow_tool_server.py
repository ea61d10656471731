"""A stdio MCP server whose one tool takes 1.5 s and says so in its `_meta`, for
`tests/it/audit.rs`: the audit must wait at least what the tool declares (issue 41). It
serves one message at a time, as many simple servers do, so a ping behind a call waits too.

    slow_tool_server.py DECLARED_MS
"""

import json
import sys
import time

DECLARED_MS = int(sys.argv[1])

TOOLS = [{
    "name": "slow",
    "description": "Answers after 1.5 s",
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True},
    "_meta": {"io.example/timeoutMs": DECLARED_MS},
}]


def write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request):
    method = request.get("method")
    if method == "initialize":
        return {"protocolVersion": request.get("params", {}).get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "slow-tool", "version": "0.0.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        time.sleep(1.5)
        return {"content": [{"type": "text", "text": "done"}]}
    return None


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        write({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        continue
    if not isinstance(request, dict) or "id" not in request:
        continue
    result = answer(request)
    if result is None:
        write({"jsonrpc": "2.0", "id": request["id"],
               "error": {"code": -32601, "message": "Method not found"}})
    else:
        write({"jsonrpc": "2.0", "id": request["id"], "result": result})
