import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CREWS,
  createRunContext,
  crew,
  dataOf,
  deploy,
  type RunContext,
  readStream,
  runProcesses,
  type SseMessage,
  startRun,
  until,
  waitForRun,
} from '../runs/helpers.js';

async function eventsOf(ctx: RunContext, runId: string) {
  const stream = await readStream(`${ctx.baseUrl}/v1/runs/${runId}/events?last_event_id=0`);
  return dataOf(stream.messages);
}

describe('run supervisor and runner protocol', () => {
  let ctx: RunContext;
  beforeAll(async () => {
    ctx = await createRunContext({ DATA_DIR: mkdtempSync(path.join(tmpdir(), 'crewd-sup-')) });
  });
  afterAll(async () => {
    await ctx.close();
    rmSync(ctx.config.dataDir, { recursive: true, force: true });
  });

  it('gives the runner exactly PATH, the version env and CREWD_*, its input on stdin, argv without a shell', async () => {
    const literal = '$HOME; echo injected | cat';
    const { deploymentId, versionId } = await deploy(ctx, [...crew('inspect.mjs'), literal, '*'], {
      env: { API_TOKEN: 'secret-1', MODE: 'test', HOME: '/elsewhere' },
    });
    const { run_id } = await startRun(ctx, deploymentId, { topic: 'x' });
    const run = await waitForRun(ctx, run_id);
    expect(run.status).toBe('succeeded');
    const report = run.output;
    // In the bubblewrap sandbox bwrap also sets PWD, the working folder (no secret of the service).
    if (report.env.PWD !== undefined) expect(report.env.PWD).toBe(report.cwd);
    delete report.env.PWD;
    expect(Object.keys(report.env).sort()).toEqual(
      [
        'API_TOKEN',
        'CREWD_DEPLOYMENT_ID',
        'CREWD_RUN_ID',
        'CREWD_THREAD_ID',
        'CREWD_VERSION_ID',
        'MODE',
        'PATH',
        // A home and TMPDIR of its own (CONTRACTS §12), whatever the version's env says.
        'HOME',
        'XDG_CACHE_HOME',
        'XDG_CONFIG_HOME',
        'XDG_DATA_HOME',
        'XDG_STATE_HOME',
        'TMPDIR',
      ].sort(),
    );
    expect(report.env.HOME).not.toBe('/elsewhere');
    expect(report.env).toMatchObject({
      API_TOKEN: 'secret-1',
      MODE: 'test',
      PATH: process.env.PATH,
      CREWD_RUN_ID: run_id,
      CREWD_DEPLOYMENT_ID: deploymentId,
      CREWD_VERSION_ID: versionId,
      CREWD_THREAD_ID: '',
    });
    expect(report.stdin).toEqual({ run_id, input: { topic: 'x' }, thread: null, command: null });
    expect(report.argv).toEqual([literal, '*']);
    const scratch = path.resolve(ctx.config.dataDir, 'runs', run_id);
    expect(report.cwd).toBe(scratch);
    // The scratch folder goes away with the run.
    await until(() => !existsSync(scratch));
  });

  it('runs in the version cwd when one is set', async () => {
    const { deploymentId } = await deploy(ctx, crew('inspect.mjs'), { cwd: CREWS });
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.output.cwd).toBe(CREWS);
    expect(existsSync(CREWS)).toBe(true);
  });

  it('emits run.started, relays events as they are, and run.completed with the output', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const { run_id } = await startRun(ctx, deploymentId, { x: 1 });
    await waitForRun(ctx, run_id);
    const events = await eventsOf(ctx, run_id);
    expect(events).toEqual([
      { type: 'run.started', data: { entrypoint: crew('trivial.mjs').join(' ') } },
      { type: 'task.started', data: { task: 'echo', agent: 'echoer' } },
      { type: 'log', data: { message: 'echoing the input' } },
      { type: 'task.completed', data: { task: 'echo', agent: 'echoer' } },
      { type: 'run.completed', data: { status: 'succeeded', output: { echo: { x: 1 } } } },
      { type: 'complete', status: 'succeeded', output: { echo: { x: 1 } }, error: null },
    ]);
  });

  it('turns non-protocol lines and standard error into log events', async () => {
    const { deploymentId } = await deploy(ctx, crew('stderr.mjs'));
    const { run_id } = await startRun(ctx, deploymentId);
    expect((await waitForRun(ctx, run_id)).status).toBe('succeeded');
    const events = await eventsOf(ctx, run_id);
    expect(events).toEqual(
      expect.arrayContaining([
        { type: 'log', data: { message: 'plain text line' } },
        { type: 'log', data: { message: '{"type": "log", "data": "not an object"}' } },
        { type: 'log', data: { message: '{not json' } },
        { type: 'custom.thing', data: { answer: 42 } },
        { type: 'log', data: { message: 'a warning on stderr', stream: 'stderr' } },
      ]),
    );
    expect(
      events.filter((event) => event.type === 'log' && (event.data as { message: string }).message === ''),
    ).toEqual([]);
  });

  it('fails a run that reports run.failed', async () => {
    const { deploymentId } = await deploy(ctx, crew('failing.mjs'));
    const { run_id } = await startRun(ctx, deploymentId);
    const run = await waitForRun(ctx, run_id);
    expect(run).toMatchObject({ status: 'failed', error_message: 'the crew could not finish its task', output: null });
    const events = await eventsOf(ctx, run_id);
    expect(events.at(-2)).toEqual({
      type: 'run.failed',
      data: { status: 'failed', error: 'the crew could not finish its task' },
    });
    expect(events.at(-1)).toEqual({
      type: 'complete',
      status: 'failed',
      output: null,
      error: 'the crew could not finish its task',
    });
  });

  it('fails a crash with the exit code and the last stderr line', async () => {
    const { deploymentId } = await deploy(ctx, crew('crashing.mjs'));
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.status).toBe('failed');
    expect(run.error_message).toBe('Runner exited with code 3: ValueError: bad input');
  });

  it('fails a runner that exits 0 without a result', async () => {
    const { deploymentId } = await deploy(ctx, crew('no-result.mjs'));
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.error_message).toBe('Runner exited without a result');
  });

  it('fails a runner that cannot be started', async () => {
    const { deploymentId } = await deploy(ctx, ['/no/such/program']);
    const response = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId } });
    expect(response.statusCode).toBe(202);
    expect(response.json().status).toBe('failed');
    const run = (await ctx.call('GET', `/v1/runs/${response.json().run_id}`)).json();
    expect(run.status).toBe('failed');
    expect(run.error_message).toBe('Failed to start runner: program /no/such/program not found or not executable');
  });

  it('names a program missing from PATH, and a script missing from the run folder', async () => {
    const { deploymentId: noProgram } = await deploy(ctx, ['no-such-crew-program', 'x']);
    const first = await waitForRun(ctx, (await startRun(ctx, noProgram)).run_id);
    expect(first.error_message).toBe(
      `Failed to start runner: program "no-such-crew-program" not found on PATH ${process.env.PATH}`,
    );
    const { deploymentId: noScript } = await deploy(ctx, [process.execPath, 'missing-crew.mjs']);
    const { run_id } = await startRun(ctx, noScript);
    const second = await waitForRun(ctx, run_id);
    const folder = path.resolve(ctx.config.dataDir, 'runs', run_id);
    expect(second.error_message).toBe(`Failed to start runner: script ${folder}/missing-crew.mjs not found`);
  });

  it("fails a Node crew that throws with its error, not Node's version line", async () => {
    const { deploymentId } = await deploy(ctx, crew('throwing.mjs'));
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.error_message).toMatch(/^Runner exited with code 1: TypeError: the crew broke/);
  });

  it('fails a run whose version cwd is missing', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'), { cwd: '/no/such/folder' });
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.error_message).toBe('Failed to start runner: working folder /no/such/folder not found');
  });

  it('times a run out after the version timeout and stops its processes', async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'), { timeout_seconds: 0.5 });
    const { run_id } = await startRun(ctx, deploymentId, { ignore_sigterm: true });
    const run = await waitForRun(ctx, run_id);
    expect(run).toMatchObject({ status: 'failed', error_message: 'Run timed out after 0.5 seconds' });
    await until(() => runProcesses(run_id).length === 0);
  });

  it('cancels at once and leaves no process behind, grandchildren included', async () => {
    const { deploymentId } = await deploy(ctx, crew('grandchild.mjs'));
    const { run_id } = await startRun(ctx, deploymentId);
    const isSpawned = (message: SseMessage) =>
      (message.data as { data?: { message?: string } } | undefined)?.data?.message === 'spawned';
    const stream = await readStream(`${ctx.baseUrl}/v1/runs/${run_id}/events`, { stopWhen: isSpawned });
    expect(stream.messages.some(isSpawned)).toBe(true);
    // The runner and its grandchild, at least (bwrap's own processes too, in the sandbox).
    expect(runProcesses(run_id).length).toBeGreaterThanOrEqual(2);

    const cancel = await ctx.call('POST', `/v1/runs/${run_id}/cancel`);
    expect(cancel.json()).toEqual({ success: true, status: 'canceled' });
    expect((await ctx.call('GET', `/v1/runs/${run_id}`)).json().status).toBe('canceled');
    // The grandchild ignores SIGTERM: only the SIGKILL after the grace ends it.
    await until(() => runProcesses(run_id).length === 0);
    const events = await eventsOf(ctx, run_id);
    expect(events.at(-2)).toEqual({ type: 'run.canceled', data: { status: 'canceled' } });
    expect(events.at(-1)).toEqual({ type: 'complete', status: 'canceled', output: null, error: null });
  });

  it('stops a runner that gave its result but does not exit, keeping the result', async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, { ticks: 1, interval_ms: 10 })).run_id);
    expect(run).toMatchObject({ status: 'succeeded', output: { ticks: 1 } });
  });

  it('runs the Python standard-library crew', async () => {
    const { deploymentId } = await deploy(ctx, ['python3', path.join(CREWS, 'echo_crew.py')]);
    const { run_id } = await startRun(ctx, deploymentId, { text: 'one two three' });
    const run = await waitForRun(ctx, run_id);
    expect(run.status).toBe('succeeded');
    expect(run.output).toEqual({ text: 'one two three', reversed: 'three two one', word_count: 3 });
    const events = await eventsOf(ctx, run_id);
    expect(events.map((event) => event.type)).toEqual([
      'run.started',
      'task.started',
      'tool_use',
      'log',
      'task.completed',
      'log',
      'run.completed',
      'complete',
    ]);
    expect(events[5]).toEqual({ type: 'log', data: { message: 'python says hi on stderr', stream: 'stderr' } });
  });

  it('runs the Node research crew deterministically', async () => {
    const { deploymentId } = await deploy(ctx, crew('research-crew.mjs'));
    const input = { topic: 'vector databases', step_delay_ms: 0 };
    const first = await waitForRun(ctx, (await startRun(ctx, deploymentId, input)).run_id);
    const second = await waitForRun(ctx, (await startRun(ctx, deploymentId, input)).run_id);
    expect(first.status).toBe('succeeded');
    expect(first.output).toEqual(second.output);
    expect(first.output.topic).toBe('vector databases');
    const types = (await eventsOf(ctx, first.id)).map((event) => event.type);
    expect(types).toEqual(
      expect.arrayContaining(['task.started', 'task.completed', 'agent.action', 'tool_use', 'log', 'artifact']),
    );
  });
});
