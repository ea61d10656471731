"""A deliberately unsafe stdio MCP server for `tests/it/audit.rs`: it asks the client
questions and trusts whatever comes back. The audit's `asking` cases must catch it; never
copy it.

2025-11-25: each tool sends one request to the client (`ask_name`: an elicitation whose form
is `{name: string, maxLength 64}`; `ask_model`: sampling; `ask_roots`: roots/list), takes
the first response line it reads as the answer whatever its id, takes `result` even beside
`error`, and puts the answer in its result as JSON, unchecked.

2026-07-28 (a request whose `_meta` names the revision): a call without `inputResponses`
ends `input_required` with a `requestState` that is plain base64 of the tool's name, never
signed or checked; a retry completes with the answers, unchecked, whatever state it brings.
"""

import base64
import json
import sys

MODERN = "2026-07-28"
FORM = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 64}},
        "required": ["name"]}
QUESTIONS = {
    "ask_name": ("elicitation/create", {"message": "Your name?", "requestedSchema": FORM}),
    "ask_name_again": ("elicitation/create", {"message": "Your name?", "requestedSchema": FORM}),
    "ask_model": ("sampling/createMessage",
                  {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
                   "maxTokens": 10}),
    "ask_roots": ("roots/list", {}),
}
asked = 0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(id, result):
    send({"jsonrpc": "2.0", "id": id, "result": result})


def error(id, code):
    send({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "error"}})


def text(id, body, modern):
    result = {"content": [{"type": "text", "text": body}]}
    if modern:
        result["resultType"] = "complete"
    answer(id, result)


def read():
    """The next message, or None at the end of input; lines that do not parse are skipped."""
    for line in sys.stdin:
        try:
            return json.loads(line)
        except Exception:
            continue
    return None


def ask(method, params):
    """Sends a request and takes the first response it sees (unsafe: any id, any shape)."""
    global asked
    asked += 1
    send({"jsonrpc": "2.0", "id": f"q{asked}", "method": method, "params": params})
    while True:
        message = read()
        if message is None:
            sys.exit(0)
        if isinstance(message, dict) and "method" not in message:
            return message.get("result")
        handle(message)


def tools():
    schema = {"type": "object", "properties": {}}
    return [{"name": name, "inputSchema": schema, "annotations": {"readOnlyHint": True}}
            for name in QUESTIONS]


def call(id, params):
    name = params.get("name")
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    modern = meta.get("io.modelcontextprotocol/protocolVersion") == MODERN
    if name not in QUESTIONS:
        error(id, -32602)
        return
    method, question = QUESTIONS[name]
    if not modern:
        text(id, json.dumps(ask(method, question)), False)
        return
    responses = params.get("inputResponses")
    if responses is None:
        state = base64.urlsafe_b64encode(name.encode()).decode()
        answer(id, {"resultType": "input_required",
                    "inputRequests": {"user_name": {"method": method, "params": question}},
                    "requestState": state})
        return
    text(id, json.dumps(responses), True)


def handle(message):
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return
    id, method = message["id"], message["method"]
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if method == "initialize":
        answer(id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "unsafe-asking", "version": "0"}})
    elif method == "ping":
        answer(id, {})
    elif method == "tools/list":
        answer(id, {"tools": tools()})
    elif method == "tools/call":
        call(id, params)
    else:
        error(id, -32601)


while True:
    message = read()
    if message is None:
        break
    handle(message)
