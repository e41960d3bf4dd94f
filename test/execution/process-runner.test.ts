import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createDirectSpawner } from '../../src/execution/direct-spawner.js';
import type { LaunchedProcess, ProcessLauncher } from '../../src/execution/launcher.js';
import { groupAlive, terminateGroup } from '../../src/execution/process-group.js';
import { startRunnerProcess } from '../../src/execution/process-runner.js';
import { sandboxedLauncher } from '../../src/execution/sandboxed-launcher.js';
import { createBubblewrapSandbox } from '../../src/sandbox/bubblewrap.js';
import { probeBubblewrap } from '../../src/sandbox/probe.js';

/**
 * A launcher whose "runner" has already exited, leaving `leftover` (a real process in a group of
 * its own) behind in the runner's group, as a zombie of bwrap's namespace init would be.
 */
function exitedLauncher(leftover: ChildProcess): ProcessLauncher {
  const launched = (): LaunchedProcess => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    stdout.end();
    stderr.end();
    const pid = leftover.pid as number;
    return {
      pid,
      stdout,
      stderr,
      sendStdin() {},
      exit: Promise.resolve({ code: 0, signal: null }),
      endGroup: (graceMs) => terminateGroup(pid, graceMs),
    };
  };
  return { start() {}, stop: async () => {}, launch: async () => launched() };
}

/** The sandbox's launcher around it, its plan left as it is: what remains is how it ends a group. */
const inSandbox = (inner: ProcessLauncher) =>
  sandboxedLauncher(inner, { kind: 'bubblewrap', wrap: (plan) => ({ ...plan, line: null }) });

const request = { command: ['runner'], cwd: '/', env: {}, stdin: '', confinement: { writable: [], readOnly: [] } };

describe('a runner process after its leader exited', () => {
  const leftovers: ChildProcess[] = [];
  afterEach(() => {
    for (const child of leftovers.splice(0))
      if (child.pid && groupAlive(child.pid)) process.kill(-child.pid, 'SIGKILL');
  });

  function leftover(): ChildProcess {
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    leftovers.push(child);
    return child;
  }

  it('ends what the leader left in its group before it counts as over', async () => {
    const left = leftover();
    const runner = startRunnerProcess(exitedLauncher(left), request, { killGraceMs: 1000, onMessage() {} });
    await runner.exited;
    await runner.terminate();
    expect(groupAlive(left.pid as number)).toBe(false);
  });

  it('does not wait on its group when nothing it started can outlive it (the sandbox namespace)', async () => {
    const left = leftover();
    const runner = startRunnerProcess(inSandbox(exitedLauncher(left)), request, { killGraceMs: 1000, onMessage() {} });
    await runner.exited;
    await runner.terminate();
    // Nothing was signaled: in the sandbox all that can remain is a zombie, which the machine's init reaps.
    expect(groupAlive(left.pid as number)).toBe(true);
  });
});

const bwrap = probeBubblewrap(process.env.PATH ?? '', 'on');

describe('a sandboxed runner', () => {
  it('leaves nothing running once its leader exited, whatever it started in a session of its own', async (context) => {
    const probe = await bwrap;
    if (!probe.usable) context.skip();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-process-runner-'));
    const launcher = sandboxedLauncher(
      createDirectSpawner(),
      createBubblewrapSandbox({ bwrapPath: probe.usable ? probe.bwrapPath : '', network: 'on', dataDir }),
    );
    const marker = `crewd-leftover-${process.pid}-${Date.now()}`;
    const runner = startRunnerProcess(
      launcher,
      {
        ...request,
        command: ['sh', '-c', `setsid sh -c 'exec -a ${marker} sleep 60' & sleep 0.3`],
        // Its own scratch folder: DATA_DIR itself is hidden from the sandbox.
        cwd: dataDir,
        confinement: { writable: [dataDir], readOnly: [] },
        env: { PATH: process.env.PATH ?? '' },
      },
      { killGraceMs: 1000, onMessage() {} },
    );
    expect(await runner.exited).toMatchObject({ kind: 'exited', code: 0 });
    await runner.terminate();
    const table = execFileSync('ps', ['-eo', 'stat=,args='], { encoding: 'utf8' });
    const living = table.split('\n').filter((line) => line.includes(marker) && !line.trim().startsWith('Z'));
    expect(living).toEqual([]);
    rmSync(dataDir, { recursive: true, force: true });
  });
});
