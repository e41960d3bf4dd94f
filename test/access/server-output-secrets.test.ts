import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from '../builds/helpers.js';
import {
  explainWithoutPython,
  forkServerSockets,
  testPython,
  testVenvBundleEnv,
  testVenvSettings,
} from '../python/helpers.js';
import { createRunContext, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';

explainWithoutPython("a version's secrets in what its fork or environment server prints");

const VARIABLE = 'sk-variable-value-0123456789';
const VERSION_ENV = 'version-env-value-9876543210';

/** A graph that prints its secrets as it is imported (in its server), on both streams, once whole and once cut. */
const GRAPH = `
import os, sys
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

for stream in (sys.stdout, sys.stderr):
    print("imported with", os.environ["LLM_KEY"], os.environ["DB_PASSWORD"], file=stream, flush=True)
    print("x" * 70000 + os.environ["LLM_KEY"][:12], file=stream, flush=True)


class State(TypedDict, total=False):
    text: str


builder = StateGraph(State)
builder.add_node("echo", lambda state: {"text": "done"})
builder.add_edge(START, "echo")
builder.add_edge("echo", END)
graph = builder.compile()
`;

/**
 * What a Python version's server prints while it imports the version is the crew's own output, and crewd logs it
 * (operators read it when a server fails): a crew printing its variables or env must not put them in that log.
 */
describe.runIf(testPython() !== null).each([
  ['environment servers', {}],
  ['fork servers (RUN_ISOLATION=deployment)', { RUN_ISOLATION: 'deployment' }],
])("a version's secrets printed by its server, with %s", (_name, settings: Record<string, string>) => {
  let ctx: RunContext;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    ctx = await createRunContext({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ...settings, ...testVenvSettings() });
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('are masked in crewd’s log', { timeout: 180_000 }, async () => {
    const deploymentId = await createDeployment(ctx, 'printer');
    const variables = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { LLM_KEY: VARIABLE } },
    });
    expect(variables.statusCode, variables.body).toBe(200);
    const env = { ...testVenvBundleEnv(), DB_PASSWORD: VERSION_ENV };
    const bundle = project({ 'crewd.json': JSON.stringify({ graph: 'graph.py:graph', env }), 'graph.py': GRAPH });
    const uploaded = await upload(ctx, deploymentId, bundle, '?environment=production');
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    const version = await waitForBuild(ctx, deploymentId, uploaded.json().id);
    expect(version.status, version.build_error).toBe('ready');

    const first = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id, undefined, 60_000);
    expect(first.status, first.error_message).toBe('succeeded');
    await until(() => forkServerSockets(dataDir).length > 0, 60_000);
    // The server's output is logged as it comes: wait for its lines (both streams where both are logged).
    await until(() => ctx.logs().includes('imported with'), 30_000);
    await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id, undefined, 60_000);

    const logged = ctx.logs();
    expect(logged).not.toContain(VARIABLE);
    expect(logged).not.toContain(VERSION_ENV);
    expect(logged).not.toContain(VARIABLE.slice(0, 12));
    expect(logged).toContain('imported with [redacted] [redacted]');
  });
});
