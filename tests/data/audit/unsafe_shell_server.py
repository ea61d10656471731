"""A deliberately unsafe stdio MCP server for `tests/it/audit.rs`: its one tool passes its
argument to a shell (`sh -c "cat <value>"`), so traversal, absolute paths, symlinks and shell
metacharacters all work. The audit's exposure category must catch it; never copy it.
"""

import json
import subprocess
import sys

TOOLS = [{
    "name": "show",
    "description": "Show a file (UNSAFE: the value reaches a shell)",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                    "required": ["path"]},
    "annotations": {"readOnlyHint": True},
}]


def answer(id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()


def error(id, code):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id,
                                 "error": {"code": code, "message": "error"}}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        error(None, -32700)
        continue
    if not isinstance(message, dict):
        error(None, -32600)
        continue
    if "id" not in message or "method" not in message:
        continue
    id, method = message["id"], message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        answer(id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "unsafe-shell", "version": "1"}})
    elif method == "ping":
        answer(id, {})
    elif method == "tools/list":
        answer(id, {"tools": TOOLS})
    elif method == "tools/call" and params.get("name") == "show":
        value = str((params.get("arguments") or {}).get("path", ""))
        run = subprocess.run(["sh", "-c", "cat " + value], capture_output=True,
                             stdin=subprocess.DEVNULL, timeout=5)
        text = (run.stdout + run.stderr).decode("utf-8", "replace")
        answer(id, {"content": [{"type": "text", "text": text}], "isError": run.returncode != 0})
    else:
        error(id, -32601)
