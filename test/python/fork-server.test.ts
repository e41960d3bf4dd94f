import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { createRunContext, type RunContext, readStream, startRun, until, waitForRun } from '../runs/helpers.js';
import {
  deployGraphBundle,
  explainWithoutPython,
  forkServerPythons,
  forkServerSockets,
  testPython,
  testVenvBundleEnv,
  testVenvSettings,
} from './helpers.js';

explainWithoutPython('Python bundle versions through their fork server');

/** Echoes its input and says how it ran: in the process that imported it (cold), or in a child forked from one. */
const GRAPH = `
import os, signal, tempfile, time
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

IMPORTED_IN = os.getpid()


class State(TypedDict, total=False):
    text: str
    sleep: float
    kill_server: bool
    paths: list
    forked: bool
    tmp: str
    visible: list


def echo(state: State):
    forked = os.getpid() != IMPORTED_IN
    if state.get("kill_server") and forked:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(30)  # ended by its server's death
    if state.get("sleep"):
        print(f"sleeping as {os.getpid()}", flush=True)
        time.sleep(state["sleep"])
    visible = [folder for folder in state.get("paths", []) if os.path.exists(folder)]
    return {"forked": forked, "tmp": tempfile.gettempdir(), "visible": visible}


builder = StateGraph(State)
builder.add_node("echo", echo)
builder.add_edge(START, "echo")
builder.add_edge("echo", END)
graph = builder.compile()
`;

/** The server's children: its runs' and the one it forked ahead of the next run. */
function forkServerChildren(dataDir: string): number[] {
  const pids = forkServerPythons(dataDir);
  const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
  return pids.filter((pid) => {
    try {
      return pids.includes(parentOf(pid));
    } catch {
      return false;
    }
  });
}

/** A process's pid in the innermost PID namespace it is in (the last of /proc's NSpid). */
function pidInNamespace(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('NSpid:'));
  return Number(line?.split(/\s+/).at(-1));
}

describe.runIf(testPython() !== null)('Python bundle versions through their fork server', () => {
  let ctx: RunContext;
  let dataDir: string;
  let deploymentId: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    ctx = await createRunContext({ DATA_DIR: dataDir, ...testVenvSettings() });
    deploymentId = await deployGraphBundle(ctx, 'echo-graph', GRAPH);
  }, 180_000);
  afterAll(async () => ctx?.close());

  async function runToEnd(input: Record<string, unknown>) {
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, input)).run_id, undefined, 60_000);
    expect(run.status, run.error_message).toBe('succeeded');
    return run;
  }

  it('runs the first run cold, the next ones in children forked from the server, each with a TMPDIR of its own', {
    timeout: 120_000,
  }, async () => {
    const runsFolder = path.join(dataDir, 'runs');
    const first = await runToEnd({ text: 'one', paths: [runsFolder] });
    expect(first.output).toMatchObject({ text: 'one', forked: false });

    await until(() => forkServerSockets(dataDir).length > 0, 60_000);
    const second = await runToEnd({ text: 'two', paths: [runsFolder, dataDir] });
    const third = await runToEnd({ text: 'three' });
    expect(second.output).toMatchObject({ text: 'two', forked: true });
    expect(third.output).toMatchObject({ text: 'three', forked: true });
    // In the sandbox the server sees DATA_DIR (hidden under an empty tmpfs), not the runs' folders.
    expect(existsSync(runsFolder)).toBe(true);
    if (ctx.config.runnerSandbox !== 'off') expect(second.output.visible).toEqual([dataDir]);
    // The run's home, in its server's folder of homes (runners/python/crewd_runner/run_home.py).
    expect(second.output.tmp).toMatch(/\/crewd-server-[^/]+\/runs\/[0-9a-f]{32}\/tmp$/);
    expect(third.output.tmp).not.toBe(second.output.tmp);

    const started = (await ctx.call('GET', `/v1/runs/${second.id}/events?last_event_id=0`)).body;
    expect(started).toContain('"entrypoint":"python -m crewd_runner --graph graph.py:graph"');
  });

  it("starts the server with the version's environment and nothing of crewd's or of a run's", {
    timeout: 120_000,
  }, async () => {
    await until(() => forkServerSockets(dataDir).length > 0, 60_000);
    const [server] = forkServerPythons(dataDir).filter((pid) => !forkServerChildren(dataDir).includes(pid));
    const names = readFileSync(`/proc/${server}/environ`, 'utf8')
      .split('\0')
      .filter((entry) => entry !== '')
      .map((entry) => entry.slice(0, entry.indexOf('=')));
    const homes = ['HOME', 'XDG_DATA_HOME', 'XDG_CACHE_HOME', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'TMPDIR'];
    // PWD as bwrap's --chdir sets it, in the sandbox.
    const allowed = new Set([...Object.keys(testVenvBundleEnv()), 'PATH', 'PYTHONPATH', 'PWD', ...homes]);

    expect(names.filter((name) => !allowed.has(name))).toEqual([]);
  });

  it('cancels a forked run: its child in the server ends', { timeout: 120_000 }, async () => {
    await until(() => forkServerSockets(dataDir).length > 0, 60_000);
    const run = await startRun(ctx, deploymentId, { sleep: 60 });
    const stream = await readStream(`${ctx.baseUrl}/v1/runs/${run.run_id}/events`, {
      stopWhen: (message) => JSON.stringify(message.data ?? '').includes('sleeping'),
    });
    expect(stream.body).toContain('sleeping');
    // The run's child, by its pid in the server's PID namespace (beside it waits the one forked for the next run).
    const pidInside = Number(/sleeping as (\d+)/.exec(stream.body)?.[1]);
    const child = forkServerChildren(dataDir).find((pid) => pidInNamespace(pid) === pidInside);
    expect(child).toBeDefined();

    const canceled = await ctx.call('POST', `/v1/runs/${run.run_id}/cancel`);
    expect(canceled.statusCode, canceled.body).toBe(200);
    expect((await waitForRun(ctx, run.run_id)).status).toBe('canceled');
    await until(() => !forkServerChildren(dataDir).includes(child as number), 15_000);
  });

  it('runs cold while a server that died is replaced, then forks from the new one', { timeout: 120_000 }, async () => {
    await until(() => forkServerSockets(dataDir).length > 0, 60_000);
    const killer = await waitForRun(ctx, (await startRun(ctx, deploymentId, { kill_server: true })).run_id);
    expect(killer.status).toBe('failed');
    // The version's server is gone (an environment's version server: its environment server removed its socket).
    await until(() => forkServerSockets(dataDir).length === 0, 15_000);

    const meanwhile = await runToEnd({ text: 'cold' });
    expect(meanwhile.output).toMatchObject({ text: 'cold', forked: false });
    const forked = await until(async () => {
      const run = await runToEnd({ text: 'again' });
      return run.output.forked ? run : null;
    }, 60_000);
    expect(forked.output.text).toBe('again');
  });
});
