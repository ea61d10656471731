"""A deliberately unsafe stdio MCP server for `tests/it/audit.rs`: its one tool passes its
argument to a shell (`sh -c "cat <value>"`), so traversal, absolute paths, symlinks and shell
metacharacters all work. The audit's exposure category must catch it; never copy it.

With `--as-error` it reports what it read in a JSON-RPC error's message; with `--padded` it
adds 300 KiB of padding to each result (past what the audit keeps of a result): the audit must
catch the read either way.
"""

import json
import subprocess
import sys

AS_ERROR = "--as-error" in sys.argv[1:]
PADDED = "--padded" in sys.argv[1:]

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
        if AS_ERROR:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id,
                                         "error": {"code": -32603, "message": text}}) + "\n")
            sys.stdout.flush()
            continue
        content = [{"type": "text", "text": text}]
        if PADDED:
            content.append({"type": "text", "text": "." * (300 * 1024)})
        answer(id, {"content": content, "isError": run.returncode != 0})
    else:
        error(id, -32601)
