"""Drives an MCP server with the official Python SDK (`mcp`) and prints one report.

    python client.py [--era legacy|modern|auto] [--calls JSON|FILE] [--timeout SECONDS] \
        -- COMMAND [ARG...]
    python client.py [--era ...] [--calls ...] --url URL [--cafile PEM] \
        [--oauth-issuer URL --oauth-client-id ID --oauth-client-secret SECRET [--oauth-scope S]]

Spawns COMMAND with `stdio_client`, or with --url speaks Streamable HTTP to URL through
`streamable_http_client` (an https URL verified against the certificates in --cafile, else the
system's), connects a `ClientSession` (legacy: the `initialize`
handshake; modern: `server/discover`, then the 2026-07-28 per-request `_meta`; auto: the
probe-then-fall-back policy `mcp.Client` uses by default), lists every tool following
`nextCursor`, makes each call in --calls (a JSON list of {"name": ..., "arguments": {...}},
inline or in a file), and prints one JSON report on stdout.

A call answered with a JSON-RPC error is reported, not fatal. Anything else that goes wrong
(the connection, the listing, a call the SDK rejects or that outlives --timeout) is reported
under "failures" and makes the exit status 1; a connection that never comes up exits 1 too.

With --oauth-issuer, the client signs in with the SDK's OAuth client (the client_credentials
grant, `ClientCredentialsOAuthProvider`): on the server's 401 it reads the protected resource
metadata named in `WWW-Authenticate`, the authorization server's metadata, asks its token
endpoint for a token for the resource (RFC 8707 `resource`), and retries with it.
"""

import argparse
import contextlib
import json
import ssl
import sys
from importlib.metadata import version
from pathlib import Path

import anyio
import httpx2
import jsonschema
import mcp_types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client._probe import negotiate_auto  # what mcp.Client(mode="auto") runs
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

MAX_PAGES = 100


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def connect(session, era):
    if era == "legacy":
        await session.initialize()
        return LATEST_HANDSHAKE_VERSION
    if era == "modern":
        await session.discover()
        return LATEST_MODERN_VERSION
    await negotiate_auto(session)
    return "auto"


async def list_all_tools(session):
    tools, cursor, pages = [], None, 0
    while pages < MAX_PAGES:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        pages += 1
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools, pages
    raise RuntimeError(f"tools/list still had a nextCursor after {MAX_PAGES} pages")


def schema_problems(tool):
    """Each schema the tool declares, checked against the JSON Schema 2020-12 meta-schema."""
    problems = {}
    for key in ("inputSchema", "outputSchema"):
        schema = tool.get(key)
        if schema is None:
            continue
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            problems[key] = error.message
    return problems


async def call(session, spec, timeout):
    report = {"name": spec["name"]}
    try:
        with anyio.fail_after(timeout):
            result = await session.call_tool(spec["name"], spec.get("arguments"))
        report["result"] = {
            "content": [dump(block) for block in result.content],
            "structuredContent": result.structured_content,
            "isError": result.is_error,
        }
    except MCPError as error:
        report["error"] = {"code": error.code, "message": error.message}
    except TimeoutError:
        report["failure"] = f"no answer within {timeout} s"
    except Exception as error:  # the SDK refused the result: a real finding, keep going
        report["failure"] = f"{type(error).__name__}: {error}"
    return report


@contextlib.asynccontextmanager
async def transport(args):
    """The SDK's streams to the server: a child over stdio, or Streamable HTTP(S) at --url."""
    if not args.url:
        server = StdioServerParameters(command=args.command[0], args=args.command[1:])
        async with stdio_client(server) as streams:
            yield streams
        return
    verify = ssl.create_default_context(cafile=args.cafile) if args.cafile else True
    timeout = httpx2.Timeout(args.timeout)
    auth = None
    if args.oauth_issuer:
        from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

        auth = ClientCredentialsOAuthProvider(
            server_url=args.url,
            storage=MemoryStorage(),
            client_id=args.oauth_client_id,
            client_secret=args.oauth_client_secret,
            scope=args.oauth_scope,
            issuer=args.oauth_issuer,
        )
    async with (
        httpx2.AsyncClient(verify=verify, timeout=timeout, auth=auth) as http,
        streamable_http_client(args.url, http_client=http) as streams,
    ):
        yield streams


class MemoryStorage:
    """The SDK's TokenStorage, in memory: one run, one token."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


async def run(args, calls):
    report = {"sdk": f"mcp {version('mcp')} (Python)", "era": args.era, "failures": []}
    async with transport(args) as (read, write), ClientSession(read, write) as session:
        with anyio.fail_after(args.timeout):
            report["offered"] = await connect(session, args.era)
        report["protocolVersion"] = session.protocol_version
        report["serverInfo"] = dump(session.server_info) if session.server_info else None
        report["capabilities"] = dump(session.server_capabilities)
        report["instructions"] = session.instructions
        with anyio.fail_after(args.timeout):
            tools, report["pages"] = await list_all_tools(session)
        report["tools"] = [dump(tool) for tool in tools]
        report["schemaProblems"] = {
            tool["name"]: problems
            for tool in report["tools"]
            if (problems := schema_problems(tool))
        }
        report["calls"] = [await call(session, spec, args.timeout) for spec in calls]
    report["failures"] += [f"{c['name']}: {c['failure']}" for c in report["calls"] if "failure" in c]
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--era", choices=["legacy", "modern", "auto"], default="legacy")
    parser.add_argument("--calls", default="[]", help="JSON list of calls, or a file holding one")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per request")
    parser.add_argument("--url", help="a Streamable HTTP endpoint instead of a command")
    parser.add_argument("--cafile", help="PEM certificates that an https --url must chain to")
    parser.add_argument("--oauth-issuer", help="sign in with OAuth client_credentials at this issuer")
    parser.add_argument("--oauth-client-id")
    parser.add_argument("--oauth-client-secret")
    parser.add_argument("--oauth-scope", help="space-separated scopes to ask for")
    parser.add_argument("command", nargs="*", help="the server command, after --")
    args = parser.parse_args()
    if bool(args.url) == bool(args.command):
        parser.error("give either --url or a server command after --")
    calls = json.loads(args.calls if args.calls.lstrip().startswith("[") else Path(args.calls).read_text())
    try:
        report = anyio.run(run, args, calls)
    except BaseException as error:  # the connection or the listing failed: protocol failure
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        print(json.dumps({"failures": [f"{type(error).__name__}: {error}"]}))
        return 1
    print(json.dumps(report))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
