// Drives an MCP server over stdio with an official TypeScript SDK and prints one JSON report.
//
//   node client.mjs [--sdk v1|v2] [--era legacy|modern|auto] [--calls JSON|FILE]
//                   [--prompts JSON|FILE] [--reads JSON|FILE] [--completions JSON|FILE]
//                   [--log-level LEVEL] [--elicit JSON]... [--sample TEXT] [--roots JSON]
//                   [--timeout SECONDS] -- COMMAND [ARG...]
//
// --sdk v1 is `@modelcontextprotocol/sdk`, legacy era only: its SUPPORTED_PROTOCOL_VERSIONS
// stop at 2025-11-25 (the report lists them under "versions"), so it has no 2026-07-28 and no
// input_required results; v2 is `@modelcontextprotocol/client`,
// whose `versionNegotiation` can also speak 2026-07-28: modern pins it (`server/discover`, then
// per-request `_meta`), auto probes and falls back to `initialize`. The script spawns COMMAND
// with `StdioClientTransport`, connects a `Client`, lists every tool following `nextCursor`,
// makes each call in --calls (a JSON list of {"name": ..., "arguments": {...}}, inline or in a
// file), and prints the report. A call answered with a JSON-RPC error is reported, not fatal;
// anything else that goes wrong (the connection, the listing, a call the SDK rejects or that
// outlives --timeout) is reported under "failures" and makes the exit status 1.
//
// What else the server declares is used too, each through the SDK's own method: `prompts`:
// every prompt listed (all pages), then each of --prompts ({"name": ..., "arguments": {...}})
// got; `resources`: every resource and template listed (all pages), then each URI of --reads
// read; `completions`: each of --completions ({"ref": {...}, "argument": {...}}) asked.
// `logging`, in both eras, at --log-level: a legacy session sets it with `logging/setLevel`
// before the calls; a modern (2026-07-28) one has no session level, and each call asks for it in
// its own `_meta["io.modelcontextprotocol/logLevel"]`. v2 (2.4.0) has no option of its own for
// that (its codec can stamp a `logLevel`, but `Client` never gives it one), so the key goes in
// through the request's own `params._meta`, which v2 merges over its envelope; the report says
// so ({"level": ..., "via": "_meta"}). Without --log-level a modern call asks for nothing. Each
// call reports the `notifications/message` it received while it ran, under "logs", and the
// level its `tools/call` requests carried on the wire, under "logLevelSent" (one per request,
// null for none). A get, read or completion answered with a JSON-RPC error is reported, not
// fatal, as a call's is.
//
// With --elicit (an `ElicitResult` as JSON; repeatable) the client declares `elicitation` and
// answers every `elicitation/create` with the first --elicit whose `content` has exactly the
// form's fields, else with the first --elicit; with --sample it declares `sampling` and answers
// every `sampling/createMessage` with that text (model `test-model`); with --roots (a JSON list
// of roots, {"uri": ..., "name": ...}) it declares `roots` and answers every `roots/list` with
// them. Each request received is reported under "asked" (its method, the message or the
// prompt, the form's field names).
//
// The same handlers answer in both eras. A legacy server asks with server-to-client requests; a
// modern (2026-07-28) one ends a call or a prompt get with an `input_required` result, which
// v2's own multi round-trip driver (`inputRequired: { autoFulfill: true }`, its default, set
// here explicitly) answers through these handlers and retries with a new id. Each call and get
// reports under "rounds" how many retries of it went on the wire.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

// The SDKs live in .env/node (setup.sh), not beside this file: resolve them from there.
const modules = new URL('./.env/node/', import.meta.url);
const require = createRequire(modules);
const versionOf = (name) =>
  JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, modules))).version;
const MAX_PAGES = 100;
const REQUEST_TIMEOUT = -32001; // the SDKs' own code for a request that got no answer in time
const PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

const { values: options, positionals: command } = parseArgs({
  options: {
    sdk: { type: 'string', default: 'v1' },
    era: { type: 'string', default: 'legacy' },
    calls: { type: 'string', default: '[]' },
    prompts: { type: 'string', default: '[]' },
    reads: { type: 'string', default: '[]' },
    completions: { type: 'string', default: '[]' },
    'log-level': { type: 'string' },
    elicit: { type: 'string', multiple: true },
    sample: { type: 'string' },
    roots: { type: 'string' },
    timeout: { type: 'string', default: '20' },
  },
  allowPositionals: true,
});

// The capabilities --elicit and --sample declare.
function declared() {
  const capabilities = {};
  if (options.elicit !== undefined) capabilities.elicitation = {};
  if (options.sample !== undefined) capabilities.sampling = {};
  if (options.roots !== undefined) capabilities.roots = {};
  return capabilities;
}

// Answers the server's questions as --elicit, --sample and --roots say; each is noted in `asked`.
function answerQuestions(setHandler, asked) {
  if (options.elicit !== undefined) {
    const answers = options.elicit.map((text) => JSON.parse(text));
    const named = (fields) => (answer) =>
      JSON.stringify(Object.keys(answer.content ?? {}).sort()) === JSON.stringify(fields);
    setHandler('elicitation/create', async (request) => {
      const fields = Object.keys(request.params?.requestedSchema?.properties ?? {}).sort();
      asked.push({ method: 'elicitation/create', message: request.params?.message, fields });
      return answers.find(named(fields)) ?? answers[0];
    });
  }
  if (options.roots !== undefined) {
    const roots = JSON.parse(options.roots);
    setHandler('roots/list', async () => {
      asked.push({ method: 'roots/list' });
      return { roots };
    });
  }
  if (options.sample !== undefined) {
    setHandler('sampling/createMessage', async (request) => {
      asked.push({ method: 'sampling/createMessage', prompt: request.params?.messages?.[0]?.content?.text });
      return {
        role: 'assistant',
        content: { type: 'text', text: options.sample },
        model: 'test-model',
        stopReason: 'endTurn',
      };
    });
  }
}

function loadSdk(sdk, era) {
  const clientInfo = { name: 'airlock-tests', version: '1' };
  if (sdk === 'v1') {
    const types = require('@modelcontextprotocol/sdk/types.js');
    const versions = types.SUPPORTED_PROTOCOL_VERSIONS;
    if (era !== 'legacy') {
      throw new Error(`@modelcontextprotocol/sdk speaks the legacy era only (${versions.join(', ')})`);
    }
    const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
    const client = new Client(clientInfo, { capabilities: declared() });
    const schemas = {
      'elicitation/create': types.ElicitRequestSchema,
      'sampling/createMessage': types.CreateMessageRequestSchema,
      'roots/list': types.ListRootsRequestSchema,
    };
    return {
      name: `@modelcontextprotocol/sdk ${versionOf('@modelcontextprotocol/sdk')}`,
      versions,
      client,
      Transport: StdioClientTransport,
      onLog: (handler) => client.setNotificationHandler(types.LoggingMessageNotificationSchema, handler),
      onRequest: (method, handler) => client.setRequestHandler(schemas[method], handler),
    };
  }
  const { Client, LOG_LEVEL_META_KEY, SUPPORTED_PROTOCOL_VERSIONS } = require('@modelcontextprotocol/client');
  const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');
  const mode = { legacy: 'legacy', auto: 'auto', modern: { pin: '2026-07-28' } }[era];
  if (!mode) throw new Error(`unknown era ${era}`);
  const client = new Client(clientInfo, {
    capabilities: declared(),
    versionNegotiation: { mode },
    inputRequired: { autoFulfill: true },
  });
  return {
    name: `@modelcontextprotocol/client ${versionOf('@modelcontextprotocol/client')}`,
    client,
    Transport: StdioClientTransport,
    onLog: (handler) => client.setNotificationHandler('notifications/message', handler),
    onRequest: (method, handler) => client.setRequestHandler(method, handler),
    // The `_meta` a modern call asks for `level` with; v2's SUPPORTED_PROTOCOL_VERSIONS are the
    // legacy ones, so a version outside them is modern.
    logMeta: (version, level) =>
      SUPPORTED_PROTOCOL_VERSIONS.includes(version) ? undefined : { [LOG_LEVEL_META_KEY]: level },
  };
}

// The version each outgoing request carries: `initialize` params, or the modern `_meta`.
function recordRequests(transport, wire) {
  const send = transport.send.bind(transport);
  transport.send = (message, ...rest) => {
    if (message.method && message.id !== undefined) {
      const meta = message.params?._meta ?? {};
      const version = message.params?.protocolVersion ?? meta[PROTOCOL_VERSION] ?? null;
      const level = meta[LOG_LEVEL];
      wire.push({ method: message.method, version, ...(level !== undefined && { logLevel: level }) });
    }
    return send(message, ...rest);
  };
}

// Every item of a paged list: `list` called with each `nextCursor` until there is none. (v2's
// list methods walk every page themselves when given no cursor; v1's return one page.)
async function listAll(list, items, method, timeout) {
  const listed = [];
  let cursor;
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const page = await list(cursor ? { cursor } : undefined, { timeout });
    listed.push(...page[items]);
    cursor = page.nextCursor;
    if (!cursor) return listed;
  }
  throw new Error(`${method} still had a nextCursor after ${MAX_PAGES} pages`);
}

// A list method of `client`, bound to it.
const lister = (client, method) => (params, opts) => client[method](params, opts);

// `report` with what awaiting `request()` gave, its JSON-RPC error, or why it failed otherwise.
async function answer(report, request) {
  try {
    report.result = await request();
  } catch (error) {
    if (Number.isInteger(error.code) && error.code !== REQUEST_TIMEOUT) {
      report.error = { code: error.code, message: error.message };
    } else {
      report.failure = `${error.name}: ${error.message}`;
    }
  }
  return report;
}

// How many more `method` requests than one went on the wire while `request()` ran: the retries
// of an input_required result.
async function counted(wire, method, report, request) {
  const sent = () => wire.filter((message) => message.method === method).length;
  const before = sent();
  await answer(report, request);
  report.rounds = Math.max(sent() - before - 1, 0);
  return report;
}

async function call(client, spec, timeout, logs, wire, logMeta) {
  const before = logs.length;
  const sentBefore = wire.length;
  const params = { name: spec.name, arguments: spec.arguments, ...(logMeta && { _meta: logMeta }) };
  const report = await counted(wire, 'tools/call', { name: spec.name }, async () => {
    const result = await client.callTool(params, undefined, { timeout });
    const { content, structuredContent = null, isError = false } = result;
    return { content, structuredContent, isError };
  });
  // Received while the call ran: the server sends a call's messages before its reply.
  report.logs = logs.slice(before);
  report.logLevelSent = wire
    .slice(sentBefore)
    .filter((sent) => sent.method === 'tools/call')
    .map((sent) => sent.logLevel ?? null);
  return report;
}

const failed = (what, reports, key) =>
  reports.filter((r) => r.failure).map((r) => `${what} ${JSON.stringify(r[key])}: ${r.failure}`);

// What the server declares besides tools, used as the options ask; `report` gains it.
async function surface(client, capabilities, report, timeout, wire, logMeta) {
  const onWire = (method) => wire.filter((sent) => sent.method === method).length;
  const lists = (method) => lister(client, method);
  if (capabilities.prompts) {
    report.prompts = await listAll(lists('listPrompts'), 'prompts', 'prompts/list', timeout);
    report.promptPages = onWire('prompts/list');
    report.gets = [];
    for (const spec of jsonList(options.prompts)) {
      const get = () => client.getPrompt({ name: spec.name, arguments: spec.arguments }, { timeout });
      report.gets.push(await counted(wire, 'prompts/get', { name: spec.name }, get));
    }
    report.failures.push(...failed('prompt', report.gets, 'name'));
  }
  if (capabilities.resources) {
    report.resources = await listAll(lists('listResources'), 'resources', 'resources/list', timeout);
    report.resourcePages = onWire('resources/list');
    const templates = lists('listResourceTemplates');
    const method = 'resources/templates/list';
    report.resourceTemplates = await listAll(templates, 'resourceTemplates', method, timeout);
    report.templatePages = onWire(method);
    report.reads = [];
    for (const uri of jsonList(options.reads)) {
      report.reads.push(await answer({ uri }, () => client.readResource({ uri }, { timeout })));
    }
    report.failures.push(...failed('read', report.reads, 'uri'));
  }
  if (capabilities.completions) {
    report.completions = [];
    for (const spec of jsonList(options.completions)) {
      const ask = async () => (await client.complete(spec, { timeout })).completion;
      report.completions.push(await answer({ ref: spec.ref, argument: spec.argument }, ask));
    }
    report.failures.push(...failed('completion', report.completions, 'argument'));
  }
  const level = options['log-level'];
  if (capabilities.logging && level && logMeta) {
    report.logLevel = { level, via: '_meta' };
  } else if (capabilities.logging && level) {
    report.logLevel = await answer({ level }, async () => {
      await client.setLoggingLevel(level, { timeout });
      return {};
    });
    report.failures.push(...failed('logging/setLevel', [report.logLevel], 'level'));
  }
}

// A JSON list given inline or as the name of a file holding one.
const jsonList = (text) => JSON.parse(text.trimStart().startsWith('[') ? text : readFileSync(text, 'utf8'));

async function run() {
  const calls = jsonList(options.calls);
  const timeout = Number(options.timeout) * 1000;
  const sdk = loadSdk(options.sdk, options.era);
  const { client } = sdk;
  const transport = new sdk.Transport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
  const wire = [];
  recordRequests(transport, wire);
  let negotiated; // v1 tells a transport the version it agreed on, and nobody else
  transport.setProtocolVersion = (version) => (negotiated = version);
  const logs = [];
  sdk.onLog(({ params }) => logs.push({ level: params.level, data: params.data }));

  const report = { sdk: sdk.name, versions: sdk.versions, era: options.era, failures: [], asked: [] };
  answerQuestions(sdk.onRequest, report.asked);
  await client.connect(transport, { timeout });
  try {
    report.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? negotiated;
    report.serverInfo = client.getServerVersion() ?? null;
    report.capabilities = client.getServerCapabilities() ?? null;
    report.instructions = client.getInstructions() ?? null;
    report.tools = await listAll(lister(client, 'listTools'), 'tools', 'tools/list', timeout);
    // Counted on the wire: v2's listTools() walks every page by itself when given no cursor.
    report.pages = wire.filter((sent) => sent.method === 'tools/list').length;
    const level = options['log-level'];
    const logMeta = level && report.capabilities?.logging ? sdk.logMeta?.(report.protocolVersion, level) : undefined;
    await surface(client, report.capabilities ?? {}, report, timeout, wire, logMeta);
    report.calls = [];
    for (const spec of calls) report.calls.push(await call(client, spec, timeout, logs, wire, logMeta));
    report.failures.push(...report.calls.filter((c) => c.failure).map((c) => `${c.name}: ${c.failure}`));
    report.wire = wire;
  } finally {
    await client.close();
  }
  return report;
}

try {
  const report = await run();
  console.log(JSON.stringify(report));
  process.exitCode = report.failures.length ? 1 : 0;
} catch (error) {
  console.log(JSON.stringify({ failures: [`${error.name}: ${error.message}`] }));
  process.exitCode = 1;
}
