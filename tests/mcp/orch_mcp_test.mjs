// `orch mcp` over stdio, driven by the official MCP SDK's client (which checks
// every structuredContent against the tool's outputSchema itself): the
// handshake, every tool's happy path and a bad argument, seed 000's whole trace,
// the state machine's refusals, a run that pauses for approval and one refused,
// cancellation, and what a raw client may send wrong.
// Run: ORCH_BINARY=build/orch node tests/mcp/orch_mcp_test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { call, connect, INIT, orch, rawServer, SOURCE_DIR, textOf, waitFor, workspace } from './orch_mcp_support.mjs';

const TOOLS = [
  'task_plan', 'task_log', 'task_close', 'task_show', 'route', 'similarity', 'plan', 'validate', 'run',
  'status', 'logs', 'review_show', 'cycle_status',
];

test('the handshake: protocol version, capabilities, server info', async () => {
  const client = await connect(workspace());
  try {
    assert.equal(client.getServerVersion().name, 'orch');
    assert.ok(client.getServerCapabilities().tools, 'tools capability');
    assert.match(client.getInstructions(), /task_plan/);
    await client.ping();
  } finally {
    await client.close();
  }
});

test('tools/list: every tool, its schemas from schemas/, honest annotations, no approve', async () => {
  const client = await connect(workspace());
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
    assert.ok(!tools.some((t) => /approve/.test(t.name)), 'approve is not exposed');
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const trace = JSON.parse(fs.readFileSync(path.join(SOURCE_DIR, 'schemas', 'trace.schema.json'), 'utf8'));
    assert.deepEqual(byName.task_log.outputSchema, trace, 'outputSchema is schemas/trace.schema.json');
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(t.outputSchema.type, 'object', t.name);
      assert.equal(typeof t.annotations.readOnlyHint, 'boolean', t.name);
    }
    for (const ro of ['status', 'logs', 'task_show', 'validate', 'route', 'similarity', 'review_show', 'cycle_status'])
      assert.equal(byName[ro].annotations.readOnlyHint, true, ro);
    assert.equal(byName.run.annotations.readOnlyHint, false);
    assert.equal(byName.run.annotations.destructiveHint, true);
    assert.equal(byName.task_log.annotations.readOnlyHint, false);
  } finally {
    await client.close();
  }
});

test('every tool refuses a bad argument as a tool error naming it', async () => {
  const client = await connect(workspace());
  try {
    const bad = {
      task_plan: {}, task_log: { trace: 'x', state: 'DANCE' }, task_close: { trace: 'x', result: 'maybe' },
      task_show: { trace: 3 }, route: { request: '' }, similarity: { text: 'x', limit: 0 }, plan: { nope: 1 },
      validate: {}, run: { plan: 'a', file: 'b' }, status: { run: 7 }, logs: { run: 'r' },
      review_show: {}, cycle_status: { run: '' },
    };
    for (const name of TOOLS) {
      const r = await call(client, name, bad[name]);
      assert.equal(r.isError, true, `${name} accepted ${JSON.stringify(bad[name])}`);
      assert.match(textOf(r), /inputSchema/, name);
      assert.equal(r.structuredContent, undefined, name);
    }
    // An unknown tool is a protocol error, with a did-you-mean.
    await assert.rejects(call(client, 'staus', {}), /unknown tool 'staus'.*status/);
  } finally {
    await client.close();
  }
});

test("seed 000's trace, entirely over MCP: plan, each stage, VERIFY, SUMMARIZE, close, then similarity recalls it", async () => {
  const dir = workspace({ 'parser.c': 'int main(void) { return 0; }\n' });
  const client = await connect(dir);
  try {
    const request = 'fix the failing test in parser.c';
    const planned = await call(client, 'task_plan', { request, project: 'parser' });
    assert.equal(planned.isError, false, textOf(planned));
    const id = planned.structuredContent.id;
    assert.ok(planned.structuredContent.pipeline.includes('VERIFY'));
    assert.match(textOf(planned), /next: EXECUTE/);
    // Each stage after the current one, in the pipeline's order.
    let trace = planned.structuredContent;
    const rest = trace.pipeline.slice(trace.pipeline.indexOf(trace.state) + 1);
    for (const state of rest) {
      const args = { trace: id, state, note: `did ${state}` };
      if (state === 'VERIFY') args.attest = ['all=checked by the test'];
      const r = await call(client, 'task_log', args);
      assert.equal(r.isError, false, `${state}: ${textOf(r)}`);
      trace = r.structuredContent;
      assert.equal(trace.state, state);
      if (state === 'VERIFY') assert.match(textOf(r), /verdict PASS/);
    }
    const shown = await call(client, 'task_show', { trace: id });
    assert.equal(shown.structuredContent.state, 'SUMMARIZE');
    const closed = await call(client, 'task_close', { trace: id, result: 'pass', summary: 'fixed the parser test' });
    assert.equal(closed.isError, false, textOf(closed));
    assert.equal(closed.structuredContent.result, 'pass');
    const similar = await call(client, 'similarity', { text: request });
    assert.equal(similar.isError, false, textOf(similar));
    const hit = similar.structuredContent.matches.find((m) => m.kind === 'trace' && m.id.startsWith(id));
    assert.ok(hit, `the closed trace is recalled: ${JSON.stringify(similar.structuredContent)}`);
    assert.equal(hit.similar, true);
  } finally {
    await client.close();
  }
});

test('the state machine refuses skipping VERIFY, passing before SUMMARIZE and a third retry, naming what is legal', async () => {
  const client = await connect(workspace());
  try {
    const planned = await call(client, 'task_plan', { request: 'fix the failing test in lexer.c' });
    const id = planned.structuredContent.id;
    assert.equal((await call(client, 'task_log', { trace: id, state: 'EXECUTE' })).isError, false);
    const skip = await call(client, 'task_log', { trace: id, state: 'SUMMARIZE' });
    assert.equal(skip.isError, true);
    assert.match(textOf(skip), /illegal transition EXECUTE -> SUMMARIZE: the legal next state is VERIFY/);
    const early = await call(client, 'task_close', { trace: id, result: 'pass' });
    assert.equal(early.isError, true);
    assert.match(textOf(early), /legal only after SUMMARIZE.*legal next state: VERIFY/);
    // VERIFY fails (an attestation refuted), twice retried, the third retry refused.
    for (let round = 0; round < 3; ++round) {
      const v = await call(client, 'task_log', { trace: id, state: 'VERIFY', refute: ['1=the root cause is unknown'] });
      assert.equal(v.isError, false, textOf(v));
      assert.match(textOf(v), /verdict FAIL/);
      const retry = await call(client, 'task_log', { trace: id, state: 'EXECUTE' });
      if (round < 2) {
        assert.equal(retry.isError, false, textOf(retry));
      } else {
        assert.equal(retry.isError, true);
        assert.match(textOf(retry), /retries are used up.*close/);
      }
    }
    const failed = await call(client, 'task_close', { trace: id, result: 'fail', summary: 'gave up' });
    assert.equal(failed.isError, false, textOf(failed));
  } finally {
    await client.close();
  }
});

test('validate, run, status and logs: a plan run to its end in a process of its own', async () => {
  const dir = workspace();
  const client = await connect(dir);
  try {
    const bad = await call(client, 'validate', { plan: 'steps:\n  - id: a\n    sh: echo\n  - id: a\n    sh: echo\n' });
    assert.equal(bad.isError, false);
    assert.equal(bad.structuredContent.valid, false);
    assert.ok(bad.structuredContent.errors.some((e) => e.line === 4 && /a/.test(e.message)), textOf(bad));
    const plan = 'steps:\n  - id: greet\n    sh: echo hello from mcp\n  - id: after\n    deps: [greet]\n    sh: echo done\n';
    const good = await call(client, 'validate', { plan });
    assert.equal(good.structuredContent.valid, true, textOf(good));
    assert.equal(good.structuredContent.steps, 2);
    const started = await call(client, 'run', { plan });
    assert.equal(started.isError, false, textOf(started));
    const { run_id: id, dispatch, driver_pid: pid } = started.structuredContent;
    assert.equal(dispatch, 'local');
    assert.ok(pid > 0);
    const report = await waitFor('the run to succeed', async () => {
      const s = await call(client, 'status', { run: id });
      return s.structuredContent.run.status === 'succeeded' ? s : null;
    });
    assert.equal(report.structuredContent.counts.done, 2);
    const logs = await call(client, 'logs', { run: id, step: 'greet' });
    assert.equal(logs.structuredContent.text, 'hello from mcp\n');
    const bounded = await call(client, 'logs', { run: id, step: 'greet', max_bytes: 5 });
    assert.equal(bounded.structuredContent.text, ' mcp\n', 'the last 5 bytes');
    assert.equal(bounded.structuredContent.bytes, 15);
    const missing = await call(client, 'logs', { run: id, step: 'gret' });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /no step 'gret'.*greet/);
    // The latest run by default, as `orch status` has it; the CLI sees the same run.
    assert.equal((await call(client, 'status', {})).structuredContent.run.id, id);
    assert.match(orch(['status', id], dir).stdout, /succeeded/);
    // A plan file in the workspace.
    fs.writeFileSync(path.join(dir, 'p.yaml'), 'steps:\n  - id: one\n    sh: "true"\n');
    const fromFile = await call(client, 'run', { file: 'p.yaml' });
    assert.equal(fromFile.isError, false, textOf(fromFile));
    const invalid = await call(client, 'run', { plan: 'steps: [{id: x}]\n' });
    assert.equal(invalid.isError, true);
    assert.match(textOf(invalid), /not valid.*nothing was run/);
  } finally {
    await client.close();
  }
});

test('run: a medium-risk step pauses for a human, a critical one is refused before anything is recorded', async () => {
  const dir = workspace();
  const client = await connect(dir);
  try {
    const plan = 'steps:\n  - id: safe\n    sh: echo safe\n  - id: deploy\n    risk: medium\n    sh: echo deployed > deployed.txt\n';
    const started = await call(client, 'run', { plan });
    assert.equal(started.isError, false, textOf(started));
    const id = started.structuredContent.run_id;
    const report = await waitFor('the run to pause', async () => {
      const s = await call(client, 'status', { run: id });
      return s.structuredContent.run.status === 'awaiting_approval' ? s : null;
    });
    const deploy = report.structuredContent.steps.find((s) => s.id === 'deploy');
    assert.equal(deploy.status, 'awaiting_approval');
    assert.ok(!fs.existsSync(path.join(dir, 'deployed.txt')), 'the medium-risk step did not run');
    assert.match(report.structuredContent.run.reason, /orch approve/);

    const before = (await call(client, 'status', {})).structuredContent.run.id;
    const refused = await call(client, 'run', { plan: 'steps:\n  - id: wipe\n    risk: critical\n    sh: echo wipe\n' });
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /critical.*nothing was recorded/);
    assert.equal((await call(client, 'status', {})).structuredContent.run.id, before, 'no run was recorded');
  } finally {
    await client.close();
  }
});

test('route, plan, review_show and cycle_status answer what the CLI has', async () => {
  const dir = workspace({
    'doc.md': '# Parser\n\nThe function parse_args reads argv[1] without checking argc.\n',
    'lenses/correctness.md': 'Review for {{lens}} errors.\n',
    'scenario.json': '{"reviewer": {"correctness": {"default": {"findings": [], "scorecard": {}}}}}',
    'status.yaml': '- {id: a, file: a.txt, state: todo}\n',
    'a.txt': 'start\n',
    'cycle.yaml':
      'status: {file: status.yaml}\nlifecycle:\n  states: [todo, done]\n  stages:\n    finish:\n' +
      '      move: todo -> done\n      worker: {command: \'echo a-done >> "$ORCH_CYCLE_FILE"\'}\n' +
      '      gate: grep -qx a-done {file}\n',
  });
  fs.writeFileSync(path.join(dir, 'workers.yaml'),
    `workers:\n  fake:\n    argv: [python3, ${path.join(SOURCE_DIR, 'tests', 'agents', 'fake_reviewer.py')}, ` +
    `${path.join(dir, 'scenario.json')}, "{prompt}"]\n    output: text\n`);
  fs.writeFileSync(path.join(dir, 'RUN.yaml'),
    'name: parser doc\nartifacts: [doc.md]\nworkers: workers.yaml\nmax_rounds: 1\ndry_rounds: 1\n' +
    'lenses:\n  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n');
  const review = orch(['review', '--config', 'RUN.yaml', '--yes', '--json'], dir);
  assert.equal(review.status, 0, review.stderr);
  const reviewId = JSON.parse(review.stdout).id;
  const cycle = orch(['cycle', 'run', 'cycle.yaml', '--json'], dir);
  assert.equal(cycle.status, 0, cycle.stderr);
  const cycleId = JSON.parse(cycle.stdout).id;

  const client = await connect(dir);
  try {
    const routed = await call(client, 'route', { request: 'fix the failing test in parser.c' });
    assert.equal(routed.isError, false, textOf(routed));
    assert.equal(routed.structuredContent.skill_name, 'orch route');
    assert.match(textOf(routed), /intent bug_fix/);
    const planned = await call(client, 'plan', { request: 'say hello' });
    assert.equal(planned.isError, false, textOf(planned));
    assert.match(planned.structuredContent.plan, /steps:/);
    const shown = await call(client, 'review_show', { review: reviewId });
    assert.equal(shown.isError, false, textOf(shown));
    assert.equal(shown.structuredContent.id, reviewId);
    assert.equal(shown.structuredContent.verdict, 'PASS');
    const unknown = await call(client, 'review_show', { review: 'nope' });
    assert.equal(unknown.isError, true);
    assert.match(textOf(unknown), /no review 'nope'/);
    const status = await call(client, 'cycle_status', {});
    assert.equal(status.isError, false, textOf(status));
    assert.equal(status.structuredContent.run, cycleId);
    assert.deepEqual(status.structuredContent.by_state.done, ['a']);
    assert.equal((await call(client, 'cycle_status', { run: cycleId })).isError, false);
  } finally {
    await client.close();
  }
});

test('a cancelled request is not answered; ping is answered while it runs; the server goes on', async () => {
  // A slow VERIFY: the project's checklist (.orch/route/verify.yaml) gets a command that sleeps.
  const shipped = fs.readFileSync(path.join(SOURCE_DIR, 'data', 'route', 'verify.yaml'), 'utf8');
  const slow = shipped.replace(/^  bug_fix:\n/m, '  bug_fix:\n    - {check: "a slow check", command: "sleep 2"}\n');
  assert.notEqual(slow, shipped);
  const dir = workspace({ '.orch/route/verify.yaml': slow });
  const server = rawServer(dir);
  server.send(INIT);
  await server.next();
  server.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  const request = (id, name, args) =>
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  server.send(request(2, 'task_plan', { request: 'fix the failing test in slow.c' }));
  const trace = (await server.next()).result.structuredContent.id;
  server.send(request(3, 'task_log', { trace, state: 'EXECUTE' }));
  assert.equal((await server.next()).result.isError, false);
  const started = Date.now();
  server.send(request(4, 'task_log', { trace, state: 'VERIFY', attest: ['all'] }));
  server.send(request(5, 'task_show', { trace }));  // queued behind the VERIFY
  server.send(request(6, 'task_show', { trace }));  // queued, then cancelled
  await new Promise((r) => setTimeout(r, 300));
  server.send('{"jsonrpc":"2.0","id":"p","method":"ping"}');
  const pong = await server.next();
  assert.equal(pong.id, 'p', 'ping is answered while the VERIFY runs');
  assert.ok(Date.now() - started < 1500, 'ping did not wait for the VERIFY');
  server.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"no"}}');
  server.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}');
  const next = await server.next();
  assert.equal(next.id, 5, 'the cancelled VERIFY (4) is not answered; 5 is');
  // The VERIFY had started: it finished and is recorded, as from the CLI.
  assert.equal(next.result.structuredContent.state, 'VERIFY');
  server.send(request(7, 'task_show', { trace }));
  assert.equal((await server.next()).id, 7, 'the cancelled queued request (6) is not answered');
  server.child.stdin.end();
  assert.equal(await server.exited, 0);
});

test('a raw client: parse errors, a batch, requests before initialize, an unknown method, end of input', async () => {
  const server = rawServer(workspace());
  server.send('{"jsonrpc":"2.0","id":5,"method":"tools/list"}');
  let r = await server.next();
  assert.equal(r.id, 5);
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /before initialize/);
  server.send('{"jsonrpc":"2.0","id":6,"method":"ping"}');
  assert.deepEqual((await server.next()).result, {});
  server.send(INIT);
  r = await server.next();
  assert.equal(r.result.protocolVersion, '2025-11-25');
  server.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  server.send('this is not json');
  r = await server.next();
  assert.equal(r.error.code, -32700);
  assert.equal(r.id, null);
  server.send('[{"jsonrpc":"2.0","id":7,"method":"ping"}]');
  r = await server.next();
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /batch/);
  server.send('{"jsonrpc":"2.0","id":8,"method":"resources/list"}');
  r = await server.next();
  assert.equal(r.id, 8);
  assert.equal(r.error.code, -32601);
  server.send(INIT.replace('"id":1', '"id":9'));
  r = await server.next();
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /already initialized/);
  // An older protocol version the server speaks is kept; an unknown one gets the newest.
  const old = rawServer(workspace());
  old.send(INIT.replace('2025-11-25', '2025-06-18'));
  assert.equal((await old.next()).result.protocolVersion, '2025-06-18');
  old.child.stdin.end();
  assert.equal(await old.exited, 0);
  server.child.stdin.end();
  assert.equal(await server.exited, 0, 'end of input ends the server with 0');
});
