// `orch mcp --listen`: MCP's streamable HTTP transport, driven by the official
// SDK's StreamableHTTPClientTransport, and by plain fetch for what the SDK
// would never send (no token, a foreign Origin, no session, a GET, a DELETE).
// Run: ORCH_BINARY=build/orch node tests/mcp/orch_mcp_http_test.mjs
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { test } from 'node:test';

import { INIT, ORCH, orch, workspace } from './orch_mcp_support.mjs';

// Starts `orch mcp --listen 127.0.0.1:0`; resolves with its URL, token and process.
function startServer(dir) {
  const child = spawn(ORCH, ['mcp', '--workspace', dir, '--listen', '127.0.0.1:0'], { cwd: dir });
  let stderr = '';
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`orch mcp did not listen: ${stderr}`)), 15000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = stderr.match(/orch mcp: (http:\/\/\S+\/mcp) \(token in (\S+)\)/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], token: fs.readFileSync(m[2], 'utf8').trim(), tokenFile: m[2], child, exited });
      }
    });
    child.on('exit', (code) => reject(new Error(`orch mcp exited ${code}: ${stderr}`)));
  });
}

function post(url, body, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

test('the SDK over streamable HTTP: handshake, tools, a trace, with the bearer token', async () => {
  const dir = workspace();
  const server = await startServer(dir);
  try {
    assert.equal((fs.statSync(server.tokenFile).mode & 0o777).toString(8), '600');
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: `Bearer ${server.token}` } },
    });
    const client = new Client({ name: 'orch-mcp-http-test', version: '1.0.0' });
    await client.connect(transport);
    assert.equal(client.getServerVersion().name, 'orch');
    assert.ok(transport.sessionId, 'a session id was given');
    const { tools } = await client.listTools();
    assert.equal(tools.length, 13);
    const planned = await client.callTool({ name: 'task_plan', arguments: { request: 'fix the failing test in io.c' } });
    assert.equal(planned.isError, false);
    const logged = await client.callTool({
      name: 'task_log', arguments: { trace: planned.structuredContent.id, state: 'EXECUTE' },
    });
    assert.equal(logged.structuredContent.state, 'EXECUTE');
    // The CLI sees the same ledger.
    assert.match(orch(['task', 'show', planned.structuredContent.id], dir).stdout, /at EXECUTE/);
    await transport.terminateSession();
    await client.close();
  } finally {
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0, 'SIGTERM stops it with 0');
  }
});

test('what HTTP refuses: no token, a foreign Origin, no or an unknown session, GET, a bad version, not JSON', async () => {
  const dir = workspace();
  const server = await startServer(dir);
  const auth = { Authorization: `Bearer ${server.token}` };
  try {
    let r = await post(server.url, INIT);
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate'), /Bearer/);
    r = await post(server.url, INIT, { Authorization: 'Bearer wrong' });
    assert.equal(r.status, 401);
    r = await post(server.url, INIT, { ...auth, Origin: 'http://evil.example' });
    assert.equal(r.status, 403);
    r = await post(server.url, INIT, { ...auth, 'MCP-Protocol-Version': '1999-01-01' });
    assert.equal(r.status, 400);
    r = await post(server.url, INIT, { ...auth, 'Content-Type': 'text/plain' });
    assert.equal(r.status, 415);
    r = await post(server.url, 'not json', auth);
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32700);
    r = await post(server.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, auth);
    assert.equal(r.status, 400, 'no session');
    r = await post(server.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { ...auth, 'Mcp-Session-Id': 'nope' });
    assert.equal(r.status, 404, 'unknown session');
    r = await fetch(server.url, { headers: auth });
    assert.equal(r.status, 405);

    // A whole exchange by hand: initialize, a notification (202), a request, DELETE, then 404.
    r = await post(server.url, INIT, auth);
    assert.equal(r.status, 200);
    const sid = r.headers.get('mcp-session-id');
    assert.match(sid, /^[0-9a-f]{32}$/);
    assert.equal((await r.json()).result.protocolVersion, '2025-11-25');
    const session = { ...auth, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' };
    r = await post(server.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    assert.equal(r.status, 202);
    r = await post(server.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'status', arguments: {} } }, session);
    const status = await r.json();
    assert.equal(status.result.isError, true, 'no run yet: a tool error');
    assert.match(status.result.content[0].text, /no runs yet/);
    r = await fetch(server.url, { method: 'DELETE', headers: session });
    assert.equal(r.status, 200);
    r = await post(server.url, { jsonrpc: '2.0', id: 4, method: 'ping' }, session);
    assert.equal(r.status, 404, 'the session has ended');
  } finally {
    server.child.kill('SIGINT');
    assert.equal(await server.exited, 0);
  }
});

test('--listen beyond loopback is refused', () => {
  const r = orch(['mcp', '--workspace', workspace(), '--listen', '0.0.0.0:0'], workspace());
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /loopback/);
});
