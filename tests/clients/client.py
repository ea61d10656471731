"""Drives an MCP server with the official Python SDK (`mcp`) and prints one report.

    python client.py [--era legacy|modern|auto] [--calls JSON|FILE] [--timeout SECONDS] \
        [--prompts JSON|FILE] [--reads JSON|FILE] [--completions JSON|FILE] \
        [--log-level LEVEL] [--elicit JSON]... [--sample TEXT] [--roots JSON] \
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

What else the server declares is used too, each through the SDK's own method: `prompts`: every
prompt listed (all pages), then each of --prompts ({"name": ..., "arguments": {...}}) got;
`resources`: every resource and template listed (all pages), then each URI of --reads read;
`completions`: each of --completions ({"ref": {...}, "argument": {"name": ..., "value": ...}})
asked. `logging`, in both eras, at --log-level: a legacy session sets it with
`logging/setLevel` before the calls; a modern (2026-07-28) one has no session level, so the SDK
stamps `_meta["io.modelcontextprotocol/logLevel"]` on every request itself
(`ClientSession(log_level=...)`, what `mcp.Client(log_level=...)` passes on; reported as
{"level": ..., "via": "log_level"}). Without --log-level a modern session opts in to nothing.
Each call reports the `notifications/message` it received while it ran, under "logs". A get,
read or completion answered with a JSON-RPC error is reported, not fatal, as a call's is.

With --elicit (an `ElicitResult` as JSON; repeatable) the client declares `elicitation` and
answers every `elicitation/create` with the first --elicit whose `content` has exactly the
form's fields, else with the first --elicit; with --sample it declares `sampling` and answers
every `sampling/createMessage` with that text (model `test-model`); with --roots (a JSON list
of roots, {"uri": ..., "name": ...}) it declares `roots` and answers every `roots/list` with
them. Each request received is reported under "asked" (its method, the message or the
prompt, the form's field names).

The same handlers answer in both eras. A legacy server asks with server-to-client requests;
a modern (2026-07-28) one ends a call or a prompt get with an `input_required` result, and
the SDK's own multi round-trip driver (`run_input_required_driver`, what `mcp.Client` runs,
dispatching through `ClientSession.dispatch_input_request` to these handlers) answers and
retries it. Each call and get reports under "rounds" how many `input_required` results it
took. Only a modern session accepts one: in a legacy session the SDK's refusal of it is a
failure.

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
import warnings
from importlib.metadata import version
from pathlib import Path

import anyio
import httpx2
import jsonschema
import mcp_types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client._input_required import run_input_required_driver  # what mcp.Client runs
from mcp.client._probe import negotiate_auto  # what mcp.Client(mode="auto") runs
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import (
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

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


async def list_all(method, items, what):
    """Every item of a paged list: `method` called with each `nextCursor` until there is none."""
    listed, cursor, pages = [], None, 0
    while pages < MAX_PAGES:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await method(params=params)
        pages += 1
        listed += getattr(page, items)
        cursor = page.next_cursor
        if not cursor:
            return listed, pages
    raise RuntimeError(f"{what} still had a nextCursor after {MAX_PAGES} pages")


async def list_all_tools(session):
    return await list_all(session.list_tools, "tools", "tools/list")


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


async def answer(report, request, timeout):
    """`report` with the result of awaiting `request()` (dumped), its JSON-RPC error, or why
    it failed otherwise."""
    try:
        with anyio.fail_after(timeout):
            report["result"] = await request()
    except MCPError as error:
        report["error"] = {"code": error.code, "message": error.message}
    except TimeoutError:
        report["failure"] = f"no answer within {timeout} s"
    except Exception as error:  # the SDK refused the result: a real finding, keep going
        report["failure"] = f"{type(error).__name__}: {error}"
    return report


async def until_complete(session, send, rounds):
    """The final result of a request `send(input_responses, request_state)` makes: in a modern
    session its `input_required` results are answered by the SDK's driver, as `mcp.Client`
    does it, each counted in `rounds`; a legacy session takes none (the SDK refuses one)."""
    if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return await send(None, None, allow=False)

    async def retry(responses, state):
        rounds[0] += 1
        return await send(responses, state, allow=True)

    async def dispatch(key, request):
        meta = request.params.meta if request.params else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        return await session.dispatch_input_request(context, request)

    first = await send(None, None, allow=True)
    if not isinstance(first, mcp_types.InputRequiredResult):
        return first
    return await run_input_required_driver(first, dispatch=dispatch, retry=retry)


async def call(session, spec, timeout, logs):
    rounds = [0]

    async def send(responses, state, allow):
        return await session.call_tool(
            spec["name"],
            spec.get("arguments"),
            input_responses=responses,
            request_state=state,
            allow_input_required=allow,
        )

    async def request():
        result = await until_complete(session, send, rounds)
        return {
            "content": [dump(block) for block in result.content],
            "structuredContent": result.structured_content,
            "isError": result.is_error,
        }

    before = len(logs)
    report = await answer({"name": spec["name"]}, request, timeout)
    report["rounds"] = rounds[0]
    # Received while the call ran: the server sends a call's messages before its reply.
    report["logs"] = logs[before:]
    return report


async def get_prompt(session, spec, timeout):
    rounds = [0]

    async def send(responses, state, allow):
        return await session.get_prompt(
            spec["name"],
            spec.get("arguments"),
            input_responses=responses,
            request_state=state,
            allow_input_required=allow,
        )

    async def request():
        return dump(await until_complete(session, send, rounds))

    report = await answer({"name": spec["name"]}, request, timeout)
    report["rounds"] = rounds[0]
    return report


async def read(session, uri, timeout):
    async def request():
        return dump(await session.read_resource(uri))

    return await answer({"uri": uri}, request, timeout)


def reference(ref):
    if ref.get("type") == "ref/prompt":
        return mcp_types.PromptReference(name=ref["name"])
    return mcp_types.ResourceTemplateReference(uri=ref["uri"])


async def complete(session, spec, timeout):
    async def request():
        return dump((await session.complete(reference(spec["ref"]), spec["argument"])).completion)

    return await answer({"ref": spec["ref"], "argument": spec["argument"]}, request, timeout)


async def set_level(session, level, timeout):
    async def request():
        with warnings.catch_warnings():  # deprecated for the modern era, which is not this one
            warnings.simplefilter("ignore")
            await session.set_logging_level(level)
        return {}

    return await answer({"level": level}, request, timeout)


def failed(what, reports, key):
    return [f"{what} {r[key]}: {r['failure']}" for r in reports if "failure" in r]


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


async def run(args, calls, surface):
    report = {"sdk": f"mcp {version('mcp')} (Python)", "era": args.era, "failures": []}
    logs = []

    async def log(params):
        logs.append({"level": params.level, "data": params.data})

    report["asked"] = []
    callbacks = {}
    if args.elicit:
        answers = [mcp_types.ElicitResult.model_validate(json.loads(text)) for text in args.elicit]

        async def elicit(context, params):
            fields = sorted((params.requested_schema or {}).get("properties", {}))
            report["asked"].append(
                {"method": "elicitation/create", "message": params.message, "fields": fields}
            )
            fitting = (a for a in answers if sorted(a.content or {}) == fields)
            return next(fitting, answers[0])

        callbacks["elicitation_callback"] = elicit
    if args.sample is not None:

        async def sample(context, params):
            prompt = params.messages[0].content.text if params.messages else None
            report["asked"].append({"method": "sampling/createMessage", "prompt": prompt})
            return mcp_types.CreateMessageResult(
                role="assistant",
                content=mcp_types.TextContent(type="text", text=args.sample),
                model="test-model",
                stop_reason="endTurn",
            )

        callbacks["sampling_callback"] = sample
    if args.roots is not None:
        roots = mcp_types.ListRootsResult(roots=json.loads(args.roots))

        async def list_roots(context):
            report["asked"].append({"method": "roots/list"})
            return roots

        callbacks["list_roots_callback"] = list_roots

    async with (
        transport(args) as (read_stream, write_stream),
        # `log_level` is the SDK's per-request opt-in of the modern era (it stamps every
        # request's `_meta`); a legacy session ignores it and is set with `logging/setLevel`.
        ClientSession(
            read_stream,
            write_stream,
            logging_callback=log,
            log_level=args.log_level,
            **callbacks,
        ) as session,
    ):
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
        capabilities = session.server_capabilities
        timeout = args.timeout
        if capabilities.prompts:
            with anyio.fail_after(timeout):
                prompts, report["promptPages"] = await list_all(
                    session.list_prompts, "prompts", "prompts/list"
                )
            report["prompts"] = [dump(prompt) for prompt in prompts]
            report["gets"] = [await get_prompt(session, spec, timeout) for spec in surface["prompts"]]
            report["failures"] += failed("prompt", report["gets"], "name")
        if capabilities.resources:
            with anyio.fail_after(timeout):
                resources, report["resourcePages"] = await list_all(
                    session.list_resources, "resources", "resources/list"
                )
                templates, report["templatePages"] = await list_all(
                    session.list_resource_templates, "resource_templates", "resources/templates/list"
                )
            report["resources"] = [dump(resource) for resource in resources]
            report["resourceTemplates"] = [dump(template) for template in templates]
            report["reads"] = [await read(session, uri, timeout) for uri in surface["reads"]]
            report["failures"] += failed("read", report["reads"], "uri")
        if capabilities.completions:
            report["completions"] = [
                await complete(session, spec, timeout) for spec in surface["completions"]
            ]
            report["failures"] += failed("completion", report["completions"], "argument")
        if capabilities.logging and args.log_level:
            if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
                report["logLevel"] = {"level": args.log_level, "via": "log_level"}
            else:
                report["logLevel"] = await set_level(session, args.log_level, timeout)
                report["failures"] += failed("logging/setLevel", [report["logLevel"]], "level")
        report["calls"] = [await call(session, spec, timeout, logs) for spec in calls]
    report["failures"] += [f"{c['name']}: {c['failure']}" for c in report["calls"] if "failure" in c]
    return report


def json_list(text):
    """A JSON list given inline or as the name of a file holding one."""
    return json.loads(text if text.lstrip().startswith("[") else Path(text).read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--era", choices=["legacy", "modern", "auto"], default="legacy")
    parser.add_argument("--calls", default="[]", help="JSON list of calls, or a file holding one")
    parser.add_argument("--prompts", default="[]", help="JSON list of prompts to get, or a file")
    parser.add_argument("--reads", default="[]", help="JSON list of URIs to read, or a file")
    parser.add_argument("--completions", default="[]", help="JSON list of completions, or a file")
    parser.add_argument(
        "--log-level", help="the level to ask for (legacy: logging/setLevel; modern: per request)"
    )
    parser.add_argument(
        "--elicit", action="append", help="an ElicitResult (JSON) to answer elicitations with"
    )
    parser.add_argument("--sample", help="the text to answer every sampling request with")
    parser.add_argument("--roots", help="the roots (a JSON list) to answer every roots/list with")
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
    calls = json_list(args.calls)
    surface = {key: json_list(getattr(args, key)) for key in ("prompts", "reads", "completions")}
    try:
        report = anyio.run(run, args, calls, surface)
    except BaseException as error:  # the connection or the listing failed: protocol failure
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        print(json.dumps({"failures": [f"{type(error).__name__}: {error}"]}))
        return 1
    print(json.dumps(report))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
