import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { createRunContext, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';
import {
  deployGraphBundle,
  explainWithoutPython,
  forkServerPythons,
  forkServerSockets,
  testPython,
  testVenvSettings,
} from './helpers.js';

explainWithoutPython('an idle fork server');

/** Says whether it ran in a child forked from a fork server, or in the process that imported it (cold). */
const GRAPH = `
import os
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

IMPORTED_IN = os.getpid()


class State(TypedDict, total=False):
    forked: bool


def report(state: State):
    return {"forked": os.getpid() != IMPORTED_IN}


builder = StateGraph(State)
builder.add_node("report", report)
builder.add_edge(START, "report")
builder.add_edge("report", END)
graph = builder.compile()
`;

/** A server that gets no run for this long exits; short, so that the test sees it go. */
const IDLE_SECONDS = 3;

describe.runIf(testPython() !== null)('an idle fork server (PYTHON_FORK_SERVER_IDLE_SECONDS)', () => {
  let ctx: RunContext;
  let dataDir: string;
  let deploymentId: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    const settings = { DATA_DIR: dataDir, PYTHON_FORK_SERVER_IDLE_SECONDS: String(IDLE_SECONDS) };
    ctx = await createRunContext({ ...settings, ...testVenvSettings() });
    deploymentId = await deployGraphBundle(ctx, 'idle-graph', GRAPH);
  }, 180_000);
  afterAll(async () => ctx?.close());

  async function forkedOrNot(): Promise<boolean> {
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, {})).run_id, undefined, 60_000);
    expect(run.status, run.error_message).toBe('succeeded');
    return (run.output as { forked: boolean }).forked;
  }

  /** Runs until one is forked: a run that finds no server listening starts one and runs cold meanwhile. */
  const untilForked = () => until(async () => ((await forkedOrNot()) ? true : null), 120_000);

  it('goes with its socket and its children after that long without a run, and the next run starts it again', {
    timeout: 300_000,
  }, async () => {
    await untilForked();

    await until(() => forkServerSockets(dataDir).length === 0 && forkServerPythons(dataDir).length === 0, 60_000);

    expect(await forkedOrNot()).toBe(false);
    await untilForked();
  });
});
