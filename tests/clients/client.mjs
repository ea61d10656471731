// Drives an MCP server over stdio with an official TypeScript SDK and prints one JSON report.
//
//   node client.mjs [--sdk v1|v2] [--era legacy|modern|auto] [--calls JSON|FILE]
//                   [--timeout SECONDS] -- COMMAND [ARG...]
//
// --sdk v1 is `@modelcontextprotocol/sdk` (legacy era only); v2 is `@modelcontextprotocol/client`,
// whose `versionNegotiation` can also speak 2026-07-28: modern pins it (`server/discover`, then
// per-request `_meta`), auto probes and falls back to `initialize`. The script spawns COMMAND
// with `StdioClientTransport`, connects a `Client`, lists every tool following `nextCursor`,
// makes each call in --calls (a JSON list of {"name": ..., "arguments": {...}}, inline or in a
// file), and prints the report. A call answered with a JSON-RPC error is reported, not fatal;
// anything else that goes wrong (the connection, the listing, a call the SDK rejects or that
// outlives --timeout) is reported under "failures" and makes the exit status 1.

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

const { values: options, positionals: command } = parseArgs({
  options: {
    sdk: { type: 'string', default: 'v1' },
    era: { type: 'string', default: 'legacy' },
    calls: { type: 'string', default: '[]' },
    timeout: { type: 'string', default: '20' },
  },
  allowPositionals: true,
});

function loadSdk(sdk, era) {
  const clientInfo = { name: 'airlock-tests', version: '1' };
  if (sdk === 'v1') {
    if (era !== 'legacy') throw new Error('@modelcontextprotocol/sdk speaks the legacy era only');
    const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
    return {
      name: `@modelcontextprotocol/sdk ${versionOf('@modelcontextprotocol/sdk')}`,
      client: new Client(clientInfo, { capabilities: {} }),
      Transport: StdioClientTransport,
    };
  }
  const { Client } = require('@modelcontextprotocol/client');
  const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');
  const mode = { legacy: 'legacy', auto: 'auto', modern: { pin: '2026-07-28' } }[era];
  if (!mode) throw new Error(`unknown era ${era}`);
  return {
    name: `@modelcontextprotocol/client ${versionOf('@modelcontextprotocol/client')}`,
    client: new Client(clientInfo, { capabilities: {}, versionNegotiation: { mode } }),
    Transport: StdioClientTransport,
  };
}

// The version each outgoing request carries: `initialize` params, or the modern `_meta`.
function recordRequests(transport, wire) {
  const send = transport.send.bind(transport);
  transport.send = (message, ...rest) => {
    if (message.method && message.id !== undefined) {
      const meta = message.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
      wire.push({ method: message.method, version: message.params?.protocolVersion ?? meta ?? null });
    }
    return send(message, ...rest);
  };
}

async function listAllTools(client, timeout) {
  const tools = [];
  let cursor;
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const page = await client.listTools(cursor ? { cursor } : undefined, { timeout });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    if (!cursor) return tools;
  }
  throw new Error(`tools/list still had a nextCursor after ${MAX_PAGES} pages`);
}

async function call(client, spec, timeout) {
  const report = { name: spec.name };
  try {
    const result = await client.callTool({ name: spec.name, arguments: spec.arguments }, undefined, {
      timeout,
    });
    const { content, structuredContent = null, isError = false } = result;
    report.result = { content, structuredContent, isError };
  } catch (error) {
    if (Number.isInteger(error.code) && error.code !== REQUEST_TIMEOUT) {
      report.error = { code: error.code, message: error.message };
    } else {
      report.failure = `${error.name}: ${error.message}`;
    }
  }
  return report;
}

async function run() {
  const calls = JSON.parse(
    options.calls.trimStart().startsWith('[') ? options.calls : readFileSync(options.calls, 'utf8'),
  );
  const timeout = Number(options.timeout) * 1000;
  const sdk = loadSdk(options.sdk, options.era);
  const { client } = sdk;
  const transport = new sdk.Transport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
  const wire = [];
  recordRequests(transport, wire);
  let negotiated; // v1 tells a transport the version it agreed on, and nobody else
  transport.setProtocolVersion = (version) => (negotiated = version);

  const report = { sdk: sdk.name, era: options.era, failures: [] };
  await client.connect(transport, { timeout });
  try {
    report.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? negotiated;
    report.serverInfo = client.getServerVersion() ?? null;
    report.capabilities = client.getServerCapabilities() ?? null;
    report.instructions = client.getInstructions() ?? null;
    report.tools = await listAllTools(client, timeout);
    // Counted on the wire: v2's listTools() walks every page by itself when given no cursor.
    report.pages = wire.filter((sent) => sent.method === 'tools/list').length;
    report.calls = [];
    for (const spec of calls) report.calls.push(await call(client, spec, timeout));
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
