import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREWS, runProcesses, until } from '../runs/helpers.js';
import { HOME_CREW, KEY, PROBE, type SandboxServer, startSandboxServer } from './server.js';

interface Attempt {
  ok: boolean;
  value?: unknown;
  code?: string;
}

interface ProbeReport {
  reads: Record<string, Attempt>;
  lists: Record<string, Attempt>;
  writes: Record<string, Attempt>;
  pids: number[];
  env: Record<string, string>;
  cwd: string;
  connect: Attempt | null;
}

const HOME_ENV = ['HOME', 'XDG_DATA_HOME', 'XDG_CACHE_HOME', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'TMPDIR'];
const RUNNER_ENV = ['PATH', 'CREWD_RUN_ID', 'CREWD_DEPLOYMENT_ID', 'CREWD_VERSION_ID', 'CREWD_THREAD_ID', ...HOME_ENV];
const gone = { ok: false, code: 'ENOENT' };

/** What a crew of another organization would go for, each checked to be there on the host first. */
function targets(server: SandboxServer, otherRunId: string) {
  const otherRunSecret = path.join(server.dataDir, 'runs', otherRunId, 'secret.txt');
  const databaseFile = path.join(server.dataDir, 'db', 'PG_VERSION');
  const crewdEnviron = `/proc/${server.server.child.pid}/environ`;
  expect(readFileSync(otherRunSecret, 'utf8')).toBe('other-run-secret');
  expect(readFileSync(crewdEnviron, 'utf8')).toContain(KEY);
  if (!process.env.TEST_DATABASE_URL) expect(existsSync(databaseFile)).toBe(true);
  return {
    otherRunSecret,
    crewdEnviron,
    lockFile: path.join(server.dataDir, 'crewd.lock'),
    ...(process.env.TEST_DATABASE_URL ? {} : { databaseFile }),
  };
}

/** Starts a probe run that keeps a secret in its folder and waits, as another organization's run would. */
async function otherRun(server: SandboxServer, probe: string): Promise<string> {
  const { run_id } = await server.startRun(probe, { secret: 'other-run-secret', hold_ms: 60_000 });
  const file = path.join(server.dataDir, 'runs', run_id, 'secret.txt');
  await until(() => existsSync(file) && readFileSync(file, 'utf8') === 'other-run-secret');
  return run_id;
}

async function probeRun(server: SandboxServer, probe: string, input: Record<string, unknown>): Promise<ProbeReport> {
  const { run_id } = await server.startRun(probe, input);
  const run = await server.waitForRun(run_id);
  expect(run.status).toBe('succeeded');
  return run.output as ProbeReport;
}

function commandsOf(pids: number[]): string[] {
  return pids.map((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      return '';
    }
  });
}

describe('runners in the bubblewrap sandbox (a real crewd, RUNNER_SANDBOX=on)', () => {
  let server: SandboxServer;
  let probe: string;
  beforeAll(async () => {
    server = await startSandboxServer({ RUNNER_SANDBOX: 'on' });
    probe = await server.deploy([process.execPath, PROBE]);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('says at start that runners run in bubblewrap', () => {
    expect(server.server.output()).toMatch(/"sandbox":"bubblewrap".*runners run in a bubblewrap sandbox/);
  });

  it('hides the data folder, other runs, crewd environment and processes', async () => {
    const other = await otherRun(server, probe);
    const secret = targets(server, other);
    const runs = path.join(server.dataDir, 'runs');
    const report = await probeRun(server, probe, {
      read: Object.values(secret),
      list: [server.dataDir, runs],
      connect: { host: '127.0.0.1', port: Number(new URL(server.server.baseUrl).port) },
    });
    for (const file of Object.values(secret)) expect(report.reads[file], file).toEqual(gone);
    // DATA_DIR holds nothing but the way to the run's own folder.
    expect(report.lists[server.dataDir]).toEqual({ ok: true, value: ['runs'] });
    expect(report.lists[runs]?.value).toEqual([path.basename(report.cwd)]);
    expect(path.dirname(report.cwd)).toBe(runs);
    // Its own PID namespace: bwrap's init and the runner, never crewd.
    expect(report.pids).not.toContain(server.server.child.pid);
    expect(report.pids.length).toBeLessThanOrEqual(3);
    const { PWD, ...env } = report.env;
    expect(Object.keys(env).sort()).toEqual([...RUNNER_ENV].sort());
    expect(PWD).toBe(report.cwd);
    expect(JSON.stringify(report)).not.toContain(KEY);
    if (process.env.TEST_DATABASE_URL) expect(JSON.stringify(report)).not.toContain('postgres://');
    // RUNNER_NETWORK unset: isolated, where 127.0.0.1 is the run's own (test/sandbox/network.test.ts).
    expect(report.connect).toEqual({ ok: false, code: 'ECONNREFUSED' });
    await server.call('POST', `/v1/runs/${other}/cancel`);
  });

  it('lets a run write its own folder and /tmp, and nothing else of the machine', async () => {
    const fixture = path.join(path.dirname(PROBE), 'written-by-probe.txt');
    // A kernel setting that takes a number: were it writable, the probe's text would be refused (EINVAL), never kept.
    const setting = '/proc/sys/kernel/printk_ratelimit';
    const report = await probeRun(server, probe, {
      write: ['own.txt', '/tmp/own.txt', fixture, '/etc/crewd-probe', setting],
    });
    expect(report.writes['own.txt']).toEqual({ ok: true, value: true });
    expect(report.writes['/tmp/own.txt']).toEqual({ ok: true, value: true });
    expect(report.writes[fixture]).toEqual({ ok: false, code: 'EROFS' });
    expect(report.writes['/etc/crewd-probe']).toEqual({ ok: false, code: 'EROFS' });
    // crewd as root: the run is the machine's user 0 (no capabilities), to whom the kernel opens its settings; they
    // are read-only in the sandbox. As another user they are not its to write.
    expect(report.writes[setting]).toEqual({ ok: false, code: process.getuid?.() === 0 ? 'EROFS' : 'EACCES' });
    expect(existsSync(fixture)).toBe(false);
    // The fresh /tmp went with the run.
    expect(readdirSync('/tmp')).not.toContain('own.txt');
  });

  it('keeps a command version working from its own cwd, read-only', async () => {
    const crew = await server.deploy([process.execPath, 'inspect.mjs'], { cwd: CREWS });
    const { run_id } = await server.startRun(crew, { topic: 'cwd' });
    const run = await server.waitForRun(run_id);
    expect(run).toMatchObject({ status: 'succeeded', output: { cwd: CREWS } });
  });

  it('ends the whole process tree on cancel: grandchildren, those ignoring SIGTERM, those in a session of their own', async () => {
    for (const [command, descendant] of [
      [['/bin/sh', '-c', 'sleep 1000 & sleep 1001'], /^sleep 1000$/],
      [[process.execPath, path.join(CREWS, 'grandchild.mjs')], /setTimeout/],
      [['/bin/sh', '-c', 'setsid sleep 1003 & sleep 1002'], /^sleep 1003$/],
    ] as const) {
      const crew = await server.deploy([...command]);
      const { run_id } = await server.startRun(crew);
      await until(() => commandsOf(runProcesses(run_id)).some((line) => descendant.test(line)));
      expect((await server.call('POST', `/v1/runs/${run_id}/cancel`)).status).toBe('canceled');
      await until(() => runProcesses(run_id).length === 0, 20_000);
    }
  }, 60_000);

  it('fails a run whose program does not exist as a failed start', async () => {
    const crew = await server.deploy(['/no/such/program']);
    const run = await server.waitForRun((await server.startRun(crew)).run_id);
    expect(run).toMatchObject({
      status: 'failed',
      error_message: 'Failed to start runner: program /no/such/program not found or not executable',
    });
  });
});

describe('the same probe without the sandbox (RUNNER_SANDBOX=off)', () => {
  let server: SandboxServer;
  beforeAll(async () => {
    server = await startSandboxServer({ RUNNER_SANDBOX: 'off' });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('reaches what the sandbox hides, so the probe can tell the two apart', async () => {
    expect(server.server.output()).toContain('runners run as plain processes (RUNNER_SANDBOX=off)');
    const probe = await server.deploy([process.execPath, PROBE]);
    const other = await otherRun(server, probe);
    const secret = targets(server, other);
    const report = await probeRun(server, probe, { read: Object.values(secret) });
    expect(report.reads[secret.otherRunSecret]).toEqual({ ok: true, value: 'other-run-secret' });
    expect(report.reads[secret.crewdEnviron]?.value).toContain(KEY);
    await server.call('POST', `/v1/runs/${other}/cancel`);
  });

  it('gives a run a home of its own too: it writes it, and the home goes with the run', async () => {
    const run = await server.waitForRun((await server.startRun(await server.deploy(HOME_CREW))).run_id);
    expect(run.status, String(run.error_message)).toBe('succeeded');
    const output = run.output as { home: string; read: string; files: string };
    expect(output.read).toBe('mine');
    expect(output.files).toBe('own.txt');
    expect(path.dirname(path.dirname(output.home))).toBe(path.join(server.dataDir, 'runs'));
    const homes = () => readdirSync(path.join(server.dataDir, 'runs')).filter((name) => name.startsWith('.home-'));
    await until(() => !existsSync(output.home) && homes().length === 0);
  });
});
