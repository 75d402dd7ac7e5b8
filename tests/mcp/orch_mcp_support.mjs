// What the tests of `orch mcp` share: the orch binary, workspaces, and clients
// of the official MCP SDK (@modelcontextprotocol/sdk, pinned in package-lock.json)
// connected to a real `orch mcp` process.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ORCH = process.env.ORCH_BINARY;
if (!ORCH || !fs.existsSync(ORCH)) {
  console.error(`ORCH_BINARY must name the orch binary (got ${ORCH})`);
  process.exit(1);
}
export const SOURCE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export function workspace(files = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orch-mcp-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

// `orch ARGS` in `cwd`, synchronously: {status, stdout, stderr}.
export function orch(args, cwd) {
  const r = spawnSync(ORCH, args, { cwd, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// An SDK client connected to `orch mcp --workspace DIR ...` over stdio; the
// server's stderr is kept in client.stderrText for the failure messages.
export async function connect(dir, extra = []) {
  const transport = new StdioClientTransport({
    command: ORCH,
    args: ['mcp', '--workspace', dir, ...extra],
    cwd: dir,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'orch-mcp-test', version: '1.0.0' });
  let stderrText = '';
  transport.stderr?.on('data', (chunk) => {
    stderrText += chunk;
  });
  await client.connect(transport);
  client.stderrText = () => stderrText;
  return client;
}

// tools/call through the SDK (which checks structuredContent against the tool's
// outputSchema with its own validator).
export async function call(client, name, args = {}, options = {}) {
  return client.callTool({ name, arguments: args }, undefined, options);
}

export function textOf(result) {
  return result.content.map((c) => c.text).join('\n');
}

export async function waitFor(what, check, ms = 20000) {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// A raw `orch mcp` process, for what an SDK client would never send: lines
// written as given, answers read one line each.
export function rawServer(dir) {
  const child = spawn(ORCH, ['mcp', '--workspace', dir], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  let buffer = '';
  const lines = [];
  const waiters = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      lines.push(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      while (waiters.length && lines.length) waiters.shift()(lines.shift());
    }
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    send(line) {
      child.stdin.write(line + '\n');
    },
    next(ms = 10000) {
      if (lines.length) return Promise.resolve(JSON.parse(lines.shift()));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no answer from orch mcp')), ms);
        waiters.push((line) => {
          clearTimeout(timer);
          resolve(JSON.parse(line));
        });
      });
    },
  };
}

export const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
