import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { createRunContext, type RunContext, readStream, startRun, until, waitForRun } from '../runs/helpers.js';
import { deployGraphBundle, explainWithoutPython, testPython, testVenvSettings } from './helpers.js';

explainWithoutPython('RUN_ISOLATION=deployment: warm workers per version');

/**
 * Says where it ran (a worker: its loop is loaded), with which pid, home and run id, and which deployments'
 * runs this process served so far; meets other runs at a barrier (only runs running at once in one process meet), spins
 * in Python (a cancel stops it), blocks in C (a cancel does not), or crashes its process.
 */
const GRAPH = `
import os, sys, threading, time
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

SERVED = set()
BARRIERS = {}
LOCK = threading.Lock()


class State(TypedDict, total=False):
    meet: int
    spin: bool
    block: bool
    crash: bool
    in_worker: bool
    pid: int
    home: str
    run_id: str
    served: list


def work(state: State):
    SERVED.add(os.environ["CREWD_DEPLOYMENT_ID"])
    if state.get("meet"):
        with LOCK:
            barrier = BARRIERS.setdefault(state["meet"], threading.Barrier(state["meet"], timeout=60))
        barrier.wait()
    if state.get("spin"):
        print("spinning", flush=True)
        while True:
            time.sleep(0.05)
    if state.get("block"):
        print("blocking", flush=True)
        time.sleep(600)
    if state.get("crash"):
        os.abort()
    return {
        "in_worker": "crewd_runner.workerloop" in sys.modules,
        "pid": os.getpid(),
        "home": os.environ["HOME"],
        "run_id": os.environ["CREWD_RUN_ID"],
        "served": sorted(SERVED),
    }


builder = StateGraph(State)
builder.add_node("work", work)
builder.add_edge(START, "work")
builder.add_edge("work", END)
graph = builder.compile()
`;

/** Host pids of the workers of the crewd on `dataDir` (not bwrap: the Python inside). */
function workers(dataDir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return !args[0]?.includes('bwrap') && args.includes('crewd_runner.worker') && args.join(' ').includes(dataDir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe.runIf(testPython() !== null)('RUN_ISOLATION=deployment: warm workers per version', () => {
  let ctx: RunContext;
  let dataDir: string;
  let deploymentId: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    const settings = { DATA_DIR: dataDir, RUN_ISOLATION: 'deployment', RUN_WORKER_CONCURRENCY: '3' };
    ctx = await createRunContext({ ...settings, ...testVenvSettings() });
    deploymentId = await deployGraphBundle(ctx, 'worker-graph', GRAPH);
  }, 180_000);
  afterAll(async () => ctx?.close());

  const run = async (input: Record<string, unknown>, deployment = deploymentId, key?: string) =>
    (await startRun(ctx, deployment, input, key)).run_id;
  const finished = (runId: string, key?: string) => waitForRun(ctx, runId, undefined, 90_000, key);

  /** A run of the version once its worker listens (the first runs start cold while it imports). */
  async function inWorker(deployment = deploymentId, key?: string) {
    return until(async () => {
      const ended = await finished(await run({}, deployment, key), key);
      expect(ended.status, ended.error_message).toBe('succeeded');
      return ended.output.in_worker ? ended : null;
    }, 90_000);
  }

  /** Waits until the run's log says `word` (it is running in its worker). */
  async function saying(runId: string, word: string) {
    const stream = await readStream(`${ctx.baseUrl}/v1/runs/${runId}/events`, {
      stopWhen: (message) => JSON.stringify(message.data ?? '').includes(word),
    });
    expect(stream.body).toContain(word);
  }

  it('runs concurrent runs in one warm worker, each with its own run id and home', { timeout: 180_000 }, async () => {
    const first = await inWorker();
    const ids = await Promise.all([1, 2, 3].map(() => run({ meet: 3 })));
    const runs = await Promise.all(ids.map((id) => finished(id)));

    for (const [n, ended] of runs.entries()) {
      expect(ended.status, ended.error_message).toBe('succeeded');
      expect(ended.output).toMatchObject({ in_worker: true, pid: first.output.pid, run_id: ids[n] });
    }
    // Three met at the barrier: they ran at once, in the one process; each had a home of its own.
    expect(new Set(runs.map((ended) => ended.output.home)).size).toBe(3);
    expect(runs.map((ended) => ended.output.home)).not.toContain(first.output.home);
    expect(workers(dataDir)).toHaveLength(1);
  });

  it('cancels a run alone: the worker and its other runs go on', { timeout: 120_000 }, async () => {
    const before = await inWorker();
    const spinning = await run({ spin: true });
    await saying(spinning, 'spinning');
    const canceled = await ctx.call('POST', `/v1/runs/${spinning}/cancel`);
    expect(canceled.statusCode, canceled.body).toBe(200);
    expect((await finished(spinning)).status).toBe('canceled');

    const after = await inWorker();
    expect(after.output.pid).toBe(before.output.pid);
  });

  it('ends the worker of a run that does not stop when canceled, failing its other runs saying why', {
    timeout: 180_000,
  }, async () => {
    const before = await inWorker();
    const other = await run({ spin: true });
    await saying(other, 'spinning');
    const stuck = await run({ block: true });
    await saying(stuck, 'blocking');

    await ctx.call('POST', `/v1/runs/${stuck}/cancel`);
    expect((await finished(stuck)).status).toBe('canceled');
    const failed = await finished(other);
    expect(failed.status).toBe('failed');
    expect(failed.error_message).toContain(`run ${stuck} of the same version did not stop when canceled`);

    await until(() => !workers(dataDir).includes(before.output.pid) || workers(dataDir).length === 0, 30_000);
    const next = await inWorker();
    expect(next.output.run_id).not.toBe(before.output.run_id);
  });

  it("fails only the crashed worker's runs; the next run gets a new worker", { timeout: 180_000 }, async () => {
    await inWorker();
    const hosts = workers(dataDir);
    const other = await run({ spin: true });
    await saying(other, 'spinning');
    const crash = await run({ crash: true });

    const [crashed, lost] = await Promise.all([finished(crash), finished(other)]);
    for (const ended of [crashed, lost]) {
      expect(ended.status).toBe('failed');
      expect(ended.error_message).toContain("Runner lost: the version's Python server");
      expect(ended.error_message).toContain('a crash of a worker ends each of its runs');
    }
    await until(() => workers(dataDir).every((pid) => !hosts.includes(pid)), 30_000);
    expect((await inWorker()).status).toBe('succeeded');
  });

  it("never runs one organization's run in another's worker", { timeout: 240_000 }, async () => {
    const created = await ctx.call('POST', '/v1/organizations', { body: { name: 'organization-b' } });
    expect(created.statusCode, created.body).toBe(201);
    const key = created.json().api_key.key as string;
    // What the helpers call, with B's key (upload injects with the admin's).
    const asB = {
      ...ctx,
      call: (method: string, url: string, options = {}) => ctx.call(method, url, { ...options, key }),
      app: {
        inject: (request: { headers: Record<string, string> }) =>
          ctx.app.inject({ ...request, headers: { ...request.headers, authorization: `Bearer ${key}` } } as never),
      },
    };
    const deploymentB = await deployGraphBundle(asB as RunContext, 'worker-graph', GRAPH);

    const [a, b] = [await inWorker(), await inWorker(deploymentB, key)];
    // Each worker has served its own deployment's runs only.
    expect(a.output.served).toEqual([deploymentId]);
    expect(b.output.served).toEqual([deploymentB]);
    expect(b.output.home).not.toBe(a.output.home);
    expect(workers(dataDir)).toHaveLength(2);
  });
});
