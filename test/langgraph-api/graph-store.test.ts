import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { ADMIN_KEY } from '../helpers/app.js';
import {
  deployGraphBundle,
  explainWithoutPython,
  forkServerSockets,
  OFFLINE_ENV,
  testPython,
  testVenvSettings,
} from '../python/helpers.js';
import { createRunContext, deploy, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';

/** The graph of the runner's own store test: a sync node taking `store`, an async one calling `get_store()`. */
const PROJECTS = path.resolve(import.meta.dirname, '../../runners/python/tests/projects');
const STORE_GRAPH = readFileSync(path.join(PROJECTS, 'store_graph.py'), 'utf8');
const GRAPHS = path.join(import.meta.dirname, 'graphs');

explainWithoutPython("a LangGraph graph's store reaches crewd's store");

async function putGreeting(ctx: RunContext, key?: string) {
  const put = await ctx.call('PUT', '/langgraph/store/items', {
    body: { namespace: ['shared'], key: 'greeting', value: { text: 'put through the API' } },
    key,
  });
  expect(put.statusCode, put.body).toBe(204);
}

/** Runs the store graph for `user` and checks what it read and wrote, through the API. */
async function runStoreGraph(ctx: RunContext, deploymentId: string, user: string) {
  const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, { user })).run_id, undefined, 90_000);
  expect(run.status, run.error_message).toBe('succeeded');
  expect(run.output).toMatchObject({ greeting: { text: 'put through the API' }, notes: ['first'] });
  expect(run.output.namespaces).toContainEqual(['notes', user]);
  // A call is not an event of the run: it is answered, never stored or relayed.
  const events = await ctx.call('GET', `/v1/runs/${run.id}/events?last_event_id=0`);
  expect(events.body).toContain('node.completed');
  expect(events.body).not.toContain('store.call');
  const written = await ctx.call('GET', `/langgraph/store/items?namespace=notes.${user}&key=first`);
  expect(written.json()).toMatchObject({
    namespace: ['notes', user],
    key: 'first',
    value: { text: `hello from ${user}` },
  });
}

describe.runIf(testPython() !== null)("a LangGraph graph's store reaches crewd's store", () => {
  let ctx: RunContext;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    ctx = await createRunContext({ DATA_DIR: dataDir, ...testVenvSettings() });
    await putGreeting(ctx);
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('a bundle run in its fork server writes an item and reads one put through the API', {
    timeout: 240_000,
  }, async () => {
    const deploymentId = await deployGraphBundle(ctx, 'store-graph', STORE_GRAPH);
    await runStoreGraph(ctx, deploymentId, 'ada');
    await until(() => forkServerSockets(dataDir).length > 0, 60_000);
    // The server the first run started listens: this run is one of its children.
    await runStoreGraph(ctx, deploymentId, 'grace');
    // A run of the Agent Server API (its stream modes through the runner) has the store too.
    const waited = await ctx.call('POST', '/langgraph/runs/wait', {
      body: { assistant_id: 'store-graph', input: { user: 'alan' } },
    });
    expect(waited.statusCode, waited.body).toBe(200);
    expect(waited.json()).toMatchObject({ greeting: { text: 'put through the API' }, notes: ['first'] });
  });

  it('a command version run as a plain process does the same', { timeout: 120_000 }, async () => {
    const python = testPython() as string;
    const { deploymentId } = await deploy(ctx, [python, '-m', 'crewd_runner', '--graph', 'store_graph.py:graph'], {
      cwd: PROJECTS,
      env: OFFLINE_ENV,
      timeout_seconds: 90,
    });
    await runStoreGraph(ctx, deploymentId, 'linus');
  });

  it("a runner's hostile calls reach only its own organization's items", { timeout: 120_000 }, async () => {
    const created = await ctx.call('POST', '/v1/organizations', { body: { name: 'organization-b' } });
    expect(created.statusCode, created.body).toBe(201);
    const keyB = created.json().api_key.key as string;
    const listed = (await ctx.call('GET', '/v1/organizations')).json().organizations as { id: string; name: string }[];
    const orgA = listed.find((org) => org.name === 'default')?.id;
    expect(orgA).toBeDefined();
    const python = testPython() as string;
    const { deploymentId } = await deploy(ctx, [python, '-m', 'crewd_runner', '--graph', 'hostile_store.py:graph'], {
      cwd: GRAPHS,
      env: OFFLINE_ENV,
      timeout_seconds: 90,
      key: keyB,
    });
    const started = await startRun(ctx, deploymentId, { victim_org: orgA }, keyB);
    const run = await waitForRun(ctx, started.run_id, undefined, 90_000, keyB);
    expect(run.status, run.error_message).toBe('succeeded');
    const answers = run.output.answers as Record<string, { result?: unknown; error?: string }>;

    for (const refused of ['get_naming_org', 'put_naming_org', 'search_naming_org']) {
      expect(answers[refused]?.error, refused).toMatch(/^store call refused: .*(Unrecognized key|unrecognized)/i);
    }
    expect(answers.get_dotted_label?.error).toContain('must not contain "."');
    expect(answers.get_empty_label?.error).toContain('must not be empty');
    expect(answers.unknown_op?.error).toMatch(/^store call refused: op/);
    expect(answers.semantic_search?.error).toContain('embedding index');
    // Organization B's own store is empty: A's greeting is nowhere in what B's run could see.
    expect(answers.get_plain).toEqual({ result: null });
    expect(answers.search_everything).toEqual({ result: [] });
    expect(answers.list_everything).toEqual({ result: [] });

    const greeting = await ctx.call('GET', '/langgraph/store/items?namespace=shared&key=greeting', { key: ADMIN_KEY });
    expect(greeting.json().value).toEqual({ text: 'put through the API' });
  });
});

describe.runIf(testPython() !== null)("RUN_ISOLATION=deployment: a graph's store in a worker's runs", () => {
  let ctx: RunContext;

  let dataDir: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    const settings = { DATA_DIR: dataDir, RUN_ISOLATION: 'deployment', RUN_WORKER_CONCURRENCY: '3' };
    ctx = await createRunContext({ ...settings, ...testVenvSettings() });
    await putGreeting(ctx);
  }, 60_000);
  afterAll(async () => ctx?.close());

  it("runs side by side in one worker each get their own calls' answers", { timeout: 240_000 }, async () => {
    const deploymentId = await deployGraphBundle(ctx, 'store-graph', STORE_GRAPH);
    await runStoreGraph(ctx, deploymentId, 'ada');
    await until(() => forkServerSockets(dataDir).length > 0, 60_000);
    // The worker listens: these run in it at the same time, their answers routed each to its own run.
    await Promise.all(['grace', 'linus', 'barbara'].map((user) => runStoreGraph(ctx, deploymentId, user)));
  });
});
