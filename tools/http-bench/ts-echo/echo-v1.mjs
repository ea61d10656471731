// The official TypeScript SDK v1 (`@modelcontextprotocol/sdk`) with one `echo` tool, for
// tools/http-bench.sh. v1 speaks the 2025 era only, so this is its documented stateless
// Streamable HTTP setup: a fresh server and `StreamableHTTPServerTransport`
// (`sessionIdGenerator: undefined`, `enableJsonResponse: true`, DNS-rebinding protection on
// for the loopback Host) per request, on plain `node:http`.
//
//   node echo-v1.mjs 127.0.0.1:PORT
import http from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

const [host, port] = process.argv[2].split(':');

function mcpServer() {
  const server = new McpServer({ name: 'ts-echo-v1', version: '0.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns its message', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: message }] }),
  );
  return server;
}

const server = http.createServer(async (req, res) => {
  if (req.url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const mcp = mcpServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    enableDnsRebindingProtection: true,
    allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
  });
  res.on('close', () => {
    void transport.close();
    void mcp.close();
  });
  try {
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  } catch {
    if (!res.headersSent) res.writeHead(500).end();
  }
});
// Node closes a keep-alive connection idle for 5 s by default; the benchmark's idle pass
// needs its 1,000 connections held while it opens them all (airlock keeps one 10 s).
server.keepAliveTimeout = 30_000;
server.listen(Number(port), host);
