import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { createRunContext, type RunContext, readStream, startRun, until, waitForRun } from '../runs/helpers.js';
import { deployGraphBundle, explainWithoutPython, testPython, testVenvSettings } from './helpers.js';

explainWithoutPython("runs that come while their version's fork server starts");

/**
 * Says whether it ran in a child forked from the process that imported it. A run that imported it
 * itself (cold) with `hold` waits to be canceled. The variable SLOW_SERVER makes a server's import
 * take 20 s more (a cold run's does not), so that a run can be seen waiting for it.
 */
const GRAPH = `
import os, sys, time
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

IMPORTED_IN = os.getpid()
IN_A_SERVER = any(name in sys.modules for name in ("crewd_runner.forkserver", "crewd_runner.envserver"))
if IN_A_SERVER and os.environ.get("SLOW_SERVER"):
    time.sleep(20)


class State(TypedDict, total=False):
    hold: bool
    forked: bool


def node(state: State):
    forked = os.getpid() != IMPORTED_IN
    print(f"ran {'forked' if forked else 'cold'}", flush=True)
    if state.get("hold") and not forked:
        time.sleep(120)
    return {"forked": forked}


builder = StateGraph(State)
builder.add_node("node", node)
builder.add_edge(START, "node")
builder.add_edge("node", END)
graph = builder.compile()
`;

describe.runIf(testPython() !== null)("runs that come while their version's fork server starts", () => {
  let ctx: RunContext;

  beforeAll(async () => {
    ctx = await createRunContext({ DATA_DIR: tempDataDir(), ...testVenvSettings() });
  }, 180_000);
  afterAll(async () => ctx?.close());

  const runOf = async (runId: string) => (await ctx.call('GET', `/v1/runs/${runId}`)).json();
  const cancel = (runId: string) => ctx.call('POST', `/v1/runs/${runId}/cancel`);

  it('one runs without the server while it starts; the others wait for it rather than each import the crew', {
    timeout: 180_000,
  }, async () => {
    const deploymentId = await deployGraphBundle(ctx, 'burst-after-deploy', GRAPH);
    const started = await Promise.all(Array.from({ length: 5 }, () => startRun(ctx, deploymentId, { hold: true })));
    // Each answers at once: a run waiting for the server counts as running.
    expect(started.map((run) => run.status)).toEqual(Array(5).fill('running'));

    const forked = await until(async () => {
      const runs = await Promise.all(started.map((run) => runOf(run.run_id)));
      const done = runs.filter((run) => run.status === 'succeeded');
      return done.length === 4 ? done : undefined;
    }, 90_000);
    expect(forked.map((run) => run.output.forked)).toEqual(Array(4).fill(true));

    const cold = started.find((run) => !forked.some((done) => done.id === run.run_id));
    expect((await runOf(cold?.run_id as string)).status).toBe('running');
    expect((await cancel(cold?.run_id as string)).statusCode).toBe(200);
  });

  it('a run canceled while it waits for the server never starts', { timeout: 180_000 }, async () => {
    const deploymentId = await deployGraphBundle(ctx, 'cancel-while-waiting', GRAPH);
    const slow = { body: { variables: { SLOW_SERVER: '1' } } };
    expect((await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, slow)).statusCode).toBe(200);
    const holding = await startRun(ctx, deploymentId, { hold: true });
    // It ran its node cold, and holds the turn to run without the server.
    const printed = (message: { data?: unknown }) => (message.data as { type?: string } | undefined)?.type === 'log';
    await readStream(`${ctx.baseUrl}/v1/runs/${holding.run_id}/events`, { stopWhen: printed });
    const waiting = await startRun(ctx, deploymentId, {});
    expect(waiting.status).toBe('running');

    expect((await cancel(waiting.run_id)).statusCode).toBe(200);
    expect((await waitForRun(ctx, waiting.run_id)).status).toBe('canceled');

    // The server listens now: a run goes to it, and the canceled one has not run at all.
    const next = await waitForRun(ctx, (await startRun(ctx, deploymentId, {})).run_id, undefined, 60_000);
    expect(next).toMatchObject({ status: 'succeeded', output: { forked: true } });
    expect(await eventTypes(waiting.run_id)).not.toContain('log');
    await cancel(holding.run_id);
  });

  /** The types of an ended run's events. */
  async function eventTypes(runId: string): Promise<string[]> {
    const body = (await ctx.call('GET', `/v1/runs/${runId}/events?last_event_id=0`)).body;
    return [...body.matchAll(/"type":"([^"]+)"/g)].map((match) => match[1] as string);
  }
});
