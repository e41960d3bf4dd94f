import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { followRun, now } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { deployBundle } from './lib/deploy-bundle.js';
import { median, percentile, printFigure } from './lib/figures.js';
import { type Json, type JsonTarget, jsonRequest } from './lib/json-request.js';
import { freePort, type Proc, startCrewd } from './lib/node-process.js';
import { bundleEnv, testVenv, writeProjects } from './lib/python-projects.js';

/*
 * `npm run bench -- langgraph`: the LangGraph API against /v1 and against `langgraph dev` (the official in-memory
 * server, langgraph-cli[inmem] from PyPI, installed by the bench into its own environment where it installs).
 * - A one-node graph through POST /langgraph/threads/{id}/runs/wait, median, ÷ the same graph's /v1 run on a
 *   thread (POST /v1/threads/{id}/runs to the event stream's `complete`), in turns.
 * - The first `messages-tuple` token of a graph whose fake chat model streams 200 tokens: from the run's start
 *   (POST /runs/stream) and from the model producing it (the graph writes the time it got its first token as a
 *   `custom` chunk; same machine, same clock), p50 and p99.
 * crewd runs on PostgreSQL (BENCH_DATABASE_URL), with its fork servers warm.
 */

const KEY = 'bench-langgraph-admin-key-0123456789';
const RUNS = Number(process.env.LANGGRAPH_RUNS ?? 40);
const TOKEN_RUNS = Number(process.env.LANGGRAPH_TOKEN_RUNS ?? 30);
const TURNS = 4;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** 200 tokens from LangChain's fake chat model; the time the node got the first one, as a custom chunk. */
const TOKENS = `
import time
from typing import Annotated, TypedDict
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


async def chat(state: State):
    model = GenericFakeChatModel(messages=iter([AIMessage(content=" ".join(f"w{i}" for i in range(200)))]))
    writer = get_stream_writer()
    answer = None
    async for chunk in model.astream(state.get("messages", [])):
        if answer is None:
            writer({"first_token_ms": time.time() * 1000})
        answer = chunk if answer is None else answer + chunk
    return {"messages": [AIMessage(content=answer.content, id=answer.id)]}


builder = StateGraph(State)
builder.add_node("chat", chat)
builder.add_edge(START, "chat")
builder.add_edge("chat", END)
graph = builder.compile()
`;

interface Server {
  /** The API's base URL (crewd's /langgraph, or langgraph dev's root). */
  api: string;
  headers: Record<string, string>;
}

async function post(server: Server, route: string, body: Json): Promise<Json> {
  const response = await fetch(`${server.api}${route}`, {
    method: 'POST',
    headers: { ...server.headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${route}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** POST /threads/{id}/runs/wait on threads made beforehand: ms per call. */
async function waits(server: Server, assistant: string, count: number): Promise<number[]> {
  const threads: string[] = [];
  for (let i = 0; i < count; i++) threads.push((await post(server, '/threads', {})).thread_id);
  const times: number[] = [];
  for (const thread of threads) {
    const started = now();
    const values = await post(server, `/threads/${thread}/runs/wait`, {
      assistant_id: assistant,
      input: { text: 'hi' },
    });
    times.push(now() - started);
    if (values.text !== 'hi') throw new Error(`wait answered ${JSON.stringify(values)}`);
  }
  return times;
}

/** One stateless streamed run of the token graph: ms from POST to the first token, and from the model producing it. */
async function firstToken(server: Server, assistant: string): Promise<{ fromStart: number; fromModel: number }> {
  const started = now();
  const response = await fetch(`${server.api}/runs/stream`, {
    method: 'POST',
    headers: { ...server.headers, 'content-type': 'application/json' },
    body: JSON.stringify({
      assistant_id: assistant,
      input: { messages: [{ role: 'user', content: 'hi' }] },
      stream_mode: ['custom', 'messages-tuple'],
    }),
  });
  if (!response.ok || !response.body) throw new Error(`stream: ${response.status}`);
  let firstAt: number | null = null;
  let producedAt: number | null = null;
  let buffer = '';
  let event = '';
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    const arrived = now();
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:') && event === 'messages' && firstAt === null) firstAt = arrived;
      else if (line.startsWith('data:') && event === 'custom') producedAt = JSON.parse(line.slice(5)).first_token_ms;
      newline = buffer.indexOf('\n');
    }
  }
  if (firstAt === null || producedAt === null) throw new Error('the stream had no token');
  return { fromStart: firstAt - started, fromModel: firstAt - producedAt };
}

async function tokenFigures(server: Server, assistant: string, count: number) {
  // The first runs may run before the version's fork server has imported the graph.
  for (let i = 0; i < 3; i++) await firstToken(server, assistant);
  const samples: { fromStart: number; fromModel: number }[] = [];
  for (let i = 0; i < count; i++) samples.push(await firstToken(server, assistant));
  const start = samples.map((sample) => sample.fromStart);
  const model = samples.map((sample) => sample.fromModel);
  return {
    startP50: percentile(start, 50),
    startP99: percentile(start, 99),
    modelP50: percentile(model, 50),
    modelP99: percentile(model, 99),
  };
}

function printTokens(prefix: string, figures: Awaited<ReturnType<typeof tokenFigures>>, goal: boolean): void {
  printFigure(`${prefix}_first_token_from_start_p50_ms`, figures.startP50, 'ms');
  printFigure(`${prefix}_first_token_from_start_p99_ms`, figures.startP99, 'ms');
  printFigure(`${prefix}_first_token_after_model_p50_ms`, figures.modelP50, 'ms');
  printFigure(
    `${prefix}_first_token_after_model_p99_ms`,
    figures.modelP99,
    'ms',
    goal ? { op: '<=', target: 20 } : undefined,
  );
}

/** A /v1 run on a thread (made beforehand), POST → the stream's `complete`, in ms: the same kind of run as `wait`'s. */
async function v1Runs(target: JsonTarget, deploymentId: string, count: number): Promise<number[]> {
  const threads: string[] = [];
  for (let i = 0; i < count; i++) {
    threads.push((await jsonRequest(target, 'POST', '/v1/threads', { deployment_id: deploymentId })).thread_id);
  }
  const times: number[] = [];
  for (const thread of threads) {
    const started = now();
    const created = await jsonRequest(target, 'POST', `/v1/threads/${thread}/runs`, { input: { text: 'hi' } });
    await followRun(target, created.run_id, () => {});
    times.push(now() - started);
  }
  return times;
}

/** langgraph dev in an environment of its own (made once, under ~/.cache/crewd); null with the reason when it cannot be. */
async function startLanggraphDev(dir: string, venv: string): Promise<{ server: Server; stop(): void } | string> {
  const devVenv = process.env.LANGGRAPH_DEV_VENV ?? path.join(homedir(), '.cache/crewd/langgraph-dev-venv');
  const python = path.join(devVenv, 'bin/python');
  if (!existsSync(path.join(devVenv, 'bin/langgraph'))) {
    const made = spawnSync(path.join(venv, 'bin/python'), ['-m', 'venv', devVenv], { stdio: 'inherit' });
    if (made.status !== 0) return 'could not make its virtual environment';
    const installed = spawnSync(python, ['-m', 'pip', 'install', '--quiet', 'langgraph-cli[inmem]'], {
      stdio: 'inherit',
    });
    if (installed.status !== 0) return 'langgraph-cli[inmem] did not install';
  }
  const project = path.join(dir, 'langgraph-dev');
  mkdirSync(project, { recursive: true });
  writeFileSync(path.join(project, 'graph.py'), readFileSync(path.join(dir, 'graph.py')));
  writeFileSync(path.join(project, 'tokens.py'), TOKENS);
  writeFileSync(
    path.join(project, 'langgraph.json'),
    JSON.stringify({ dependencies: ['.'], graphs: { echo: './graph.py:graph', tokens: './tokens.py:graph' } }),
  );
  const port = await freePort();
  const child = spawn(
    path.join(devVenv, 'bin/langgraph'),
    ['dev', '--no-browser', '--no-reload', '--port', String(port), '--host', '127.0.0.1'],
    { cwd: project, env: { PATH: process.env.PATH ?? '', HOME: project, LANGSMITH_TRACING: 'false' }, stdio: 'ignore' },
  );
  const api = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 600; attempt++) {
    if (child.exitCode !== null) return `langgraph dev exited with ${child.exitCode}`;
    const ok = await fetch(`${api}/ok`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return { server: { api, headers: {} }, stop: () => child.kill() };
    await sleep(100);
  }
  child.kill();
  return 'langgraph dev did not answer /ok within a minute';
}

export async function run(): Promise<void> {
  const venv = testVenv();
  const database = await createScratchDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-bench-langgraph-'));
  let crewd: Proc | null = null;
  let dev: { server: Server; stop(): void } | string | null = null;
  try {
    const env = bundleEnv(venv);
    const echo = writeProjects(dir, env).graph;
    const tokens = path.join(dir, 'tokens-project');
    mkdirSync(tokens, { recursive: true });
    writeFileSync(path.join(tokens, 'graph.py'), TOKENS);
    writeFileSync(path.join(tokens, 'crewd.json'), JSON.stringify({ graph: 'graph.py:graph', env }));

    crewd = await startCrewd(database.url, path.join(dir, 'data'), KEY, { RUNNER_EXTRA_PATHS: venv });
    const target: JsonTarget = { port: crewd.port, key: KEY, agent };
    const echoId = await deployBundle(target, 'echo', echo);
    await deployBundle(target, 'tokens', tokens);
    const server: Server = { api: `${crewd.base}/langgraph`, headers: { 'x-api-key': KEY } };

    // Warm: the versions' fork servers import their graphs with the first runs.
    await waits(server, 'echo', 5);
    await v1Runs(target, echoId, 5);
    const api: number[] = [];
    const v1: number[] = [];
    const perTurn = Math.ceil(RUNS / TURNS);
    for (let round = 0; round < TURNS; round++) {
      api.push(...(await waits(server, 'echo', perTurn)));
      v1.push(...(await v1Runs(target, echoId, perTurn)));
    }
    printFigure('langgraph_wait_one_node_ms', median(api), 'ms');
    printFigure('v1_thread_run_one_node_ms', median(v1), 'ms');
    printFigure('langgraph_wait_vs_v1_run', median(api) / median(v1), 'x', { op: '<=', target: 1.1 });
    const crewdTokens = await tokenFigures(server, 'tokens', TOKEN_RUNS);
    printTokens('langgraph', crewdTokens, true);

    dev = await startLanggraphDev(dir, venv);
    if (typeof dev === 'string') {
      process.stdout.write(`figure: langgraph_dev skipped (${dev})\n`);
      return;
    }
    const devWaits = median(await waits(dev.server, 'echo', RUNS));
    printFigure('langgraph_dev_wait_one_node_ms', devWaits, 'ms');
    printFigure('langgraph_wait_vs_langgraph_dev', median(api) / devWaits, 'x', { op: '<=', target: 1 });
    const devTokens = await tokenFigures(dev.server, 'tokens', TOKEN_RUNS);
    printTokens('langgraph_dev', devTokens, false);
    printFigure('langgraph_first_token_p99_vs_langgraph_dev', crewdTokens.startP99 / devTokens.startP99, 'x', {
      op: '<=',
      target: 1,
    });
  } finally {
    if (dev && typeof dev !== 'string') dev.stop();
    await crewd?.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
