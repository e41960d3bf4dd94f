import { copyFileSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packProject } from '../../src/cli/pack.js';
import { OFFLINE_VARIABLES } from '../python/helpers.js';
import { createRunContext, dataOf, type RunContext, readStream, waitForRun } from '../runs/helpers.js';
import { createDeployment, tempDataDir, upload, waitForBuild } from './helpers.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const EXAMPLES = path.join(ROOT, 'examples');
/**
 * One environment cache per machine: the first build of an example pays for installing crewai or
 * langgraph, every later one (the other suites, the next CI run) finds its environment there, keyed
 * by the example's files and the Python. CREWD_TEST_BUILD_CACHE moves it. An environment stays while
 * a DATA_DIR that claims it exists: the temporary DATA_DIRs of earlier runs are left in the temporary
 * folder, so once that is cleaned (a reboot), the next start removes the environments and the next
 * build pays again.
 */
const SHARED_CACHE = process.env.CREWD_TEST_BUILD_CACHE ?? path.join(homedir(), '.cache/crewd/build-environments');
/**
 * The Python test environment's pins (runners/python/scripts/test-env.sh): the same releases, once downloaded.
 * Copied beside the cache, because a build step in the sandbox has a /tmp of its own, and a checkout may lie in /tmp.
 */
const CONSTRAINTS = path.join(path.dirname(SHARED_CACHE), 'test-constraints', 'constraints-test.txt');
const FIRST_BUILD_MS = 40 * 60_000;

/** The machine's package-tool settings, as a service started here would hand its builds. */
const toolSettings = Object.fromEntries(
  Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined &&
      /^(HOME|SSL_CERT_FILE|SSL_CERT_DIR|PIP_.*|UV_.*|(https?|no|all)_proxy)$/i.test(entry[0]),
  ),
);

type Event = { type: string; data: Record<string, unknown> };

let ctx: RunContext;
const deployed: Record<string, { deploymentId: string; versionId: string }> = {};

async function uploadExample(folder: string, deploymentId?: string) {
  const id = deploymentId ?? (await createDeployment(ctx, folder));
  const bundle = await packProject(path.join(EXAMPLES, folder));
  const response = await upload(ctx, id, bundle, '?environment=production');
  expect(response.statusCode, response.body).toBe(201);
  return { deploymentId: id, versionId: response.json().id as string };
}

async function buildLog(deploymentId: string, versionId: string): Promise<string[]> {
  const url = `${ctx.baseUrl}/v1/deployments/${deploymentId}/versions/${versionId}/build/events`;
  const stream = await readStream(url, { headers: { 'last-event-id': '0' } });
  return dataOf(stream.messages)
    .filter((event) => event.type === 'build.log')
    .map((event) => (event.data as { message: string }).message);
}

async function eventsOf(runId: string): Promise<Event[]> {
  const stream = await readStream(`${ctx.baseUrl}/v1/runs/${runId}/events?last_event_id=0`);
  return dataOf(stream.messages) as unknown as Event[];
}

async function runInThread(threadId: string, body: Record<string, unknown>) {
  const response = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body });
  expect(response.statusCode, response.body).toBe(202);
  return waitForRun(ctx, response.json().run_id, undefined, 150_000);
}

async function runOnce(name: string, input: Record<string, unknown>) {
  const { deploymentId } = deployed[name] ?? {};
  const response = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId, input } });
  expect(response.statusCode, response.body).toBe(202);
  return waitForRun(ctx, response.json().run_id, undefined, 150_000);
}

beforeAll(async () => {
  mkdirSync(path.dirname(CONSTRAINTS), { recursive: true });
  copyFileSync(path.join(ROOT, 'runners/python/constraints-test.txt'), CONSTRAINTS);
  ctx = await createRunContext({
    ...toolSettings,
    DATA_DIR: tempDataDir(),
    BUILD_CACHE_DIR: SHARED_CACHE,
    PIP_CONSTRAINT: CONSTRAINTS,
    UV_CONSTRAINT: CONSTRAINTS,
    BUILD_TIMEOUT_SECONDS: String(FIRST_BUILD_MS / 1000),
    MAX_CONCURRENT_BUILDS: '3',
  });
  for (const folder of ['langgraph-agent', 'crewai-research', 'crewai-flow']) {
    deployed[folder] = await uploadExample(folder);
  }
  for (const { deploymentId, versionId } of Object.values(deployed)) {
    const version = await waitForBuild(ctx, deploymentId, versionId, FIRST_BUILD_MS);
    expect(version.status, version.build_error).toBe('ready');
    const put = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: OFFLINE_VARIABLES },
    });
    expect(put.statusCode).toBe(200);
  }
}, FIRST_BUILD_MS + 60_000);
afterAll(async () => ctx?.close());

describe('the Python examples, uploaded as bundles and built by the service', () => {
  it('examples/langgraph-agent stops at its interrupt and resumes with a command', { timeout: 300_000 }, async () => {
    const { deploymentId, versionId } = deployed['langgraph-agent'] ?? { deploymentId: '', versionId: '' };
    const version = (await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/${versionId}`)).json();
    expect(version).toMatchObject({ runtime: 'python', entrypoint: { graph: 'src/agent/graph.py:graph' } });
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();

    const first = await runInThread(thread.thread_id, { input: { question: 'How many words are in this question?' } });
    expect(first.status, first.error_message).toBe('succeeded');
    expect(first.output.interrupts[0].value).toMatchObject({ question: 'Send this answer?' });
    const types = (await eventsOf(first.id)).map((event) => event.type);
    expect(types).toEqual(expect.arrayContaining(['run.started', 'node.completed', 'custom', 'run.interrupted']));

    const second = await runInThread(thread.thread_id, { command: { resume: { approved: true } } });
    expect(second.status, second.error_message).toBe('succeeded');
    const resumed = (await ctx.call('GET', `/v1/threads/${thread.thread_id}`)).json();
    expect(resumed).toMatchObject({ status: 'idle', interrupts: [] });
    expect(resumed.values).toMatchObject({ approved: true, answers: 1 });
  });

  it('examples/crewai-research runs its crew with task and agent events', { timeout: 300_000 }, async () => {
    const run = await runOnce('crewai-research', { topic: 'solar batteries' });
    expect(run.status, run.error_message).toBe('succeeded');
    expect(run.output.tasks).toHaveLength(2);
    const types = new Set((await eventsOf(run.id)).map((event) => event.type));
    for (const type of ['run.started', 'task.started', 'task.completed', 'agent.action']) expect(types).toContain(type);
  });

  it('examples/crewai-flow (a `crewai create flow` project) runs its flow, each method an event', {
    timeout: 300_000,
  }, async () => {
    const { deploymentId, versionId } = deployed['crewai-flow'] ?? { deploymentId: '', versionId: '' };
    const version = (await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/${versionId}`)).json();
    expect(version.entrypoint).toEqual({ flow: 'poem_flow.main:PoemFlow' });
    const run = await runOnce('crewai-flow', { sentence_count: 2 });
    expect(run.status, run.error_message).toBe('succeeded');
    const poem = 'CrewAI hands each agent a task and a name. The writer writes, and the flow keeps score.';
    expect(run.output).toMatchObject({ result: poem, state: { sentence_count: 2, poem } });
    const methods = (await eventsOf(run.id))
      .filter((event) => event.type === 'task.started')
      .map((event) => event.data.task);
    expect(methods).toEqual(expect.arrayContaining(['generate_sentence_count', 'generate_poem', 'save_poem']));
  });

  it('a new version of the same project finds its environment in the cache, and its graph is imported', {
    timeout: 120_000,
  }, async () => {
    const { deploymentId } = deployed['langgraph-agent'] ?? { deploymentId: '' };
    const again = await uploadExample('langgraph-agent', deploymentId);
    const version = await waitForBuild(ctx, deploymentId, again.versionId, 60_000);
    expect(version.status, version.build_error).toBe('ready');
    const log = await buildLog(deploymentId, again.versionId);
    expect(log.some((line) => /from the cache$/.test(line))).toBe(true);
    expect(log).toContain('the graph src/agent/graph.py:graph imports: CompiledStateGraph');
  });

  it('the examples built with their crew, flow or graph imported by the import check', async () => {
    const imported = {
      'crewai-research': 'the crew research.crew:Research imports: class Research',
      'crewai-flow': 'the flow poem_flow.main:PoemFlow imports: class PoemFlow',
    };
    for (const [folder, line] of Object.entries(imported)) {
      const { deploymentId, versionId } = deployed[folder] ?? { deploymentId: '', versionId: '' };
      expect(await buildLog(deploymentId, versionId)).toContain(line);
    }
  });
});
