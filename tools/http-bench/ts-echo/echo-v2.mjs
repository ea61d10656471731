// The official TypeScript SDK v2 (`@modelcontextprotocol/server`, the 2026-07-28 line) with
// one `echo` tool, for tools/http-bench.sh: `createMcpHandler` (a fresh server per request,
// modern era only: `legacy: 'reject'`, JSON replies: `responseMode: 'json'`) on plain
// `node:http` through `toNodeHandler`, behind the SDK's localhost Host and Origin guards, as
// its documentation sets it up.
//
//   node echo-v2.mjs 127.0.0.1:PORT
import http from 'node:http';

import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import {
  localhostHostValidation,
  localhostOriginValidation,
  toNodeHandler,
} from '@modelcontextprotocol/node';
import * as z from 'zod';

const [host, port] = process.argv[2].split(':');

function factory() {
  const server = new McpServer({ name: 'ts-echo-v2', version: '0.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns its message', inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: 'text', text: message }] }),
  );
  return server;
}

const serve = toNodeHandler(createMcpHandler(factory, { legacy: 'reject', responseMode: 'json' }));
const validHost = localhostHostValidation();
const validOrigin = localhostOriginValidation();

const server = http.createServer((req, res) => {
  if (req.url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  if (!validHost(req, res) || !validOrigin(req, res)) return;
  void serve(req, res);
});
// Node closes a keep-alive connection idle for 5 s by default; the benchmark's idle pass
// needs its 1,000 connections held while it opens them all (airlock keeps one 10 s).
server.keepAliveTimeout = 30_000;
server.listen(Number(port), host);
