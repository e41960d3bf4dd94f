import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.js';
import { insertCheckpoint } from '../../src/threads/repository.js';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from '../builds/helpers.js';
import { createRunContext, deploy, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';
import {
  deployGraphBundle,
  explainWithoutPython,
  forkServerSockets,
  testPython,
  testVenvBundleEnv,
  testVenvSettings,
} from './helpers.js';

explainWithoutPython("A fork server only crewd reaches (CONTRACTS §12 'Fork servers')");

const GRAPH = `
from typing import TypedDict
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    text: str


builder = StateGraph(State)
builder.add_node("echo", lambda state: {"text": state.get("text", "")})
builder.add_edge(START, "echo")
builder.add_edge("echo", END)
graph = builder.compile()
`;

/** A msgpack string (fixstr or str 8). */
function packString(text: string): Buffer {
  const bytes = Buffer.from(text);
  if (bytes.length < 32) return Buffer.concat([Buffer.from([0xa0 | bytes.length]), bytes]);
  return Buffer.concat([Buffer.from([0xd9, bytes.length]), bytes]);
}

/** What LangGraph's serializer writes for `module.name(argument)`: msgpack extension 0 around [module, name, arg]. */
function constructorPayload(module: string, name: string, argument: string): string {
  const inner = Buffer.concat([Buffer.from([0x93]), packString(module), packString(name), packString(argument)]);
  return Buffer.concat([Buffer.from([0xc7, inner.length, 0]), inner]).toString('base64');
}

/** A thread checkpoint as crewd keeps it, whose state names `builtins.exec` with code that writes `marker`. */
function execCheckpoint(marker: string) {
  const typed = (data: string) => ({ type: 'msgpack', data });
  const code = `open(${JSON.stringify(marker)}, "w").write("ran")`;
  return {
    format: 'crewd.langgraph.v1',
    checkpoints: [
      {
        ns: '',
        parent_id: null,
        checkpoint: typed(constructorPayload('builtins', 'exec', code)),
        metadata: typed(Buffer.from([0x80]).toString('base64')),
        writes: [],
      },
    ],
  };
}

/** What an attacker sends a fork server: a run whose thread checkpoint runs code (no secret: it has none). */
function attackRequest(marker: string): string {
  const thread = { thread_id: 'thr_attack', values: {}, checkpoint: execCheckpoint(marker) };
  const stdin = JSON.stringify({ run_id: 'run_attack', input: {}, thread, command: null });
  return `${JSON.stringify({ env: {}, cwd: '/', stdin })}\n`;
}

/** A command version's run that connects to `input.socket`, sends `input.request` and reports what came back. */
const CONNECTOR = `
let text = '';
process.stdin.on('data', (chunk) => { text += chunk; });
process.stdin.on('end', () => {
  const { input } = JSON.parse(text);
  const done = (output) => process.stdout.write(JSON.stringify({ type: 'run.completed', data: { output } }) + '\\n');
  const socket = require('node:net').createConnection(input.socket);
  let answer = '';
  socket.on('connect', () => socket.write(input.request));
  socket.on('data', (chunk) => { answer += chunk; });
  socket.on('error', (error) => done({ connected: false, error: error.code }));
  socket.on('close', (failed) => { if (!failed) done({ connected: true, answer }); });
});
`;

/** Sends `request` on a connection of the test's own; what the server answered before it closed. */
function askDirectly(socketPath: string, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    let answer = '';
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk) => {
      answer += chunk.toString();
    });
    socket.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' ? resolve(answer) : reject(error),
    );
    socket.on('close', () => resolve(answer));
  });
}

describe.runIf(testPython() !== null)("A fork server only crewd reaches (CONTRACTS §12 'Fork servers')", () => {
  let ctx: RunContext;
  let dataDir: string;
  let deploymentId: string;
  let socketPath: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    ctx = await createRunContext({ DATA_DIR: dataDir, ...testVenvSettings() });
    deploymentId = await deployGraphBundle(ctx, 'organization-a', GRAPH);
    const first = await waitForRun(ctx, (await startRun(ctx, deploymentId, { text: 'a' })).run_id, undefined, 60_000);
    expect(first.status, first.error_message).toBe('succeeded');
    socketPath = await until(() => forkServerSockets(dataDir)[0] ?? null, 60_000);
  }, 240_000);
  afterAll(async () => ctx?.close());

  /** Where code run in A's server would leave a file the test sees: its socket folder, the one it may write. */
  const marker = (name: string) => path.join(path.dirname(socketPath), name);

  it("another organization's command run given A's socket cannot reach it, nor run anything in it", {
    timeout: 120_000,
  }, async () => {
    const created = await ctx.call('POST', '/v1/organizations', { body: { name: 'organization-b' } });
    expect(created.statusCode, created.body).toBe(201);
    const key = created.json().api_key.key as string;
    const b = await deploy(ctx, [process.execPath, '-e', CONNECTOR], { key });
    const ran = marker('ran-for-b');
    const input = { socket: socketPath, request: attackRequest(ran) };
    const run = await waitForRun(ctx, (await startRun(ctx, b.deploymentId, input, key)).run_id, undefined, 60_000, key);

    expect(run.status, run.error_message).toBe('succeeded');
    // Sandboxed, the socket is not there at all; without a sandbox, the server closes the connection unanswered.
    if (ctx.config.runnerSandbox !== 'off') expect(run.output).toMatchObject({ connected: false });
    else expect(run.output).toEqual({ connected: true, answer: '' });
    expect(existsSync(ran)).toBe(false);
  });

  it('a connection without the secret runs nothing and gets no answer', { timeout: 60_000 }, async () => {
    const ran = marker('ran-for-the-test');

    expect(await askDirectly(socketPath, attackRequest(ran))).toBe('');
    expect(existsSync(ran)).toBe(false);
  });

  it('a thread checkpoint naming a constructor is refused, and the run fails saying so', {
    timeout: 60_000,
  }, async () => {
    const ran = marker('ran-from-a-checkpoint');
    const thread = await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } });
    expect(thread.statusCode, thread.body).toBe(200);
    const threadId = thread.json().thread_id;
    await insertCheckpoint(ctx.database.handle.db, {
      id: newId('chk'),
      thread_id: threadId,
      run_id: null,
      values: {},
      checkpoint: execCheckpoint(ran),
    });
    const started = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input: { text: 'b' } } });
    expect(started.statusCode, started.body).toBe(202);
    const run = await waitForRun(ctx, started.json().run_id, undefined, 60_000);

    expect(run.status).toBe('failed');
    expect(run.error_message).toContain(
      "The thread's checkpoint names builtins.exec to construct, which crewd does not",
    );
    expect(existsSync(ran)).toBe(false);
  });
});

describe.runIf(testPython() !== null)('a DATA_DIR whose path leaves no room for a socket', () => {
  let ctx: RunContext;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = path.join(tempDataDir(), 'a-data-folder-named-at-length'.repeat(3));
    ctx = await createRunContext({ DATA_DIR: dataDir, ...testVenvSettings() });
  });
  afterAll(async () => ctx?.close());

  it('runs Python versions without a fork server', { timeout: 240_000 }, async () => {
    const deploymentId = await createDeployment(ctx, 'long-data-dir');
    const crewdJson = { graph: 'graph.py:graph', env: testVenvBundleEnv(), timeout_seconds: 120 };
    const bundle = project({ 'crewd.json': JSON.stringify(crewdJson), 'graph.py': GRAPH });
    const response = await upload(ctx, deploymentId, bundle, '?environment=production');
    expect(response.statusCode, response.body).toBe(201);
    expect((await waitForBuild(ctx, deploymentId, response.json().id)).status).toBe('ready');

    for (const text of ['one', 'two']) {
      const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, { text })).run_id, undefined, 60_000);
      expect(run.status, run.error_message).toBe('succeeded');
      expect(run.output).toEqual({ text });
    }
    expect(existsSync(path.join(dataDir, 'f'))).toBe(false);
  });
});
