import { afterAll, describe, expect, it } from 'vitest';
import { createDirectSpawner } from '../../src/execution/direct-spawner.js';
import type { LaunchedProcess } from '../../src/execution/launcher.js';
import { ServerStart, type StartTurn } from '../../src/execution/server-start.js';
import { waitingProcess } from '../../src/execution/waiting-process.js';

const never = new AbortController().signal;

describe("a version server's start, as its runs see it", () => {
  it('gives the turn to run without the server to one run at a time, then to the run that waited longest', async () => {
    const start = new ServerStart();
    const first = start.takeColdTurn();
    expect(first).not.toBeNull();
    expect(start.takeColdTurn()).toBeNull();

    const order: string[] = [];
    const noted = (name: string) => (turn: StartTurn) => {
      order.push(name);
      return turn;
    };
    const second = start.next(never).then(noted('second'));
    const third = start.next(never).then(noted('third'));
    first?.giveBack();
    const secondTurn = await second;
    expect(secondTurn.kind).toBe('cold');
    expect(order).toEqual(['second']);
    // A turn given back twice frees it once.
    first?.giveBack();
    await Promise.resolve();
    expect(order).toEqual(['second']);

    (secondTurn as Extract<StartTurn, { kind: 'cold' }>).turn?.giveBack();
    expect((await third).kind).toBe('cold');
  });

  it('sends every waiting run to the server once it listens, and later ones too', async () => {
    const start = new ServerStart();
    start.takeColdTurn();
    const waiting = [start.next(never), start.next(never)];
    start.listening();
    expect(await Promise.all(waiting)).toEqual([{ kind: 'server' }, { kind: 'server' }]);
    expect(start.starting).toBe(false);
    expect(await start.next(never)).toEqual({ kind: 'server' });
    expect(start.takeColdTurn()).toBeNull();
  });

  it('lets every run go without the server, no turn needed, once it ended before it listened', async () => {
    const start = new ServerStart();
    start.takeColdTurn();
    const waiting = start.next(never);
    start.gone();
    start.listening();
    expect(await waiting).toEqual({ kind: 'cold', turn: null });
    expect(await start.next(never)).toEqual({ kind: 'cold', turn: null });
  });

  it('lets a run leave the wait, and gives the turn past it', async () => {
    const start = new ServerStart();
    const turn = start.takeColdTurn();
    const leaving = new AbortController();
    const left = start.next(leaving.signal);
    const staying = start.next(never);
    leaving.abort();
    expect(await left).toEqual({ kind: 'abandoned' });
    turn?.giveBack();
    expect((await staying).kind).toBe('cold');
  });
});

describe('a run process that starts later', () => {
  const spawner = createDirectSpawner();
  afterAll(() => spawner.stop());
  const launch = (command: string[]) =>
    spawner.launch({
      command,
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '' },
      stdin: '',
      confinement: { writable: [], readOnly: [] },
    });
  const text = async (stream: NodeJS.ReadableStream) => {
    let all = '';
    for await (const chunk of stream) all += chunk.toString();
    return all;
  };

  it('carries the output and the exit of the process it started', async () => {
    const proc = waitingProcess(() => launch(['sh', '-c', 'echo out; echo err >&2; exit 3']));
    const [out, err, exit] = await Promise.all([text(proc.stdout), text(proc.stderr), proc.exit]);
    expect({ out, err, exit }).toEqual({ out: 'out\n', err: 'err\n', exit: { code: 3, signal: null } });
  });

  it('starts nothing when ended while it waits, and ends what a start that came anyway started', async () => {
    let started: LaunchedProcess | null = null;
    const proc = waitingProcess(async (signal) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      const launched = await launch(['sleep', '30']);
      if (!('error' in launched)) started = launched;
      return launched;
    });
    await proc.endGroup(100);
    const exit = await (started as LaunchedProcess | null)?.exit;
    expect(exit?.signal).toMatch(/^SIG(TERM|KILL)$/);
    expect((await proc.exit)?.signal).toMatch(/^SIG(TERM|KILL)$/);
  });

  it('exits with 1 and says why when its start failed', async () => {
    const proc = waitingProcess(async () => ({ error: 'no such program' }));
    const [err, exit] = await Promise.all([text(proc.stderr), proc.exit]);
    expect(err).toBe('Failed to start runner: no such program\n');
    expect(exit).toEqual({ code: 1, signal: null });
    const abandoned = waitingProcess(async () => null);
    expect(await abandoned.exit).toEqual({ code: null, signal: 'SIGTERM' });
  });
});
