import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createSandbox, type SandboxOptions } from '../../src/sandbox/index.js';

/** A logger whose lines are kept, to count what start-up says. */
function capturingLogger() {
  const lines: Array<{ level: number; msg: string; reason?: string }> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('info', destination), lines };
}

describe('createSandbox', () => {
  let scratch: string;
  let dataDir: string;
  let failingBwrapFolder: string;
  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'crewd-create-sandbox-'));
    dataDir = path.join(scratch, 'data');
    // A bwrap that cannot make namespaces, as under a container's default seccomp profile.
    failingBwrapFolder = path.join(scratch, 'bin');
    mkdirSync(failingBwrapFolder);
    const fake = path.join(failingBwrapFolder, 'bwrap');
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  const options = (overrides: Partial<SandboxOptions>, logger = capturingLogger().logger): SandboxOptions => ({
    mode: 'auto',
    network: 'on',
    dataDir,
    logger,
    ...overrides,
  });

  it('uses bubblewrap when it works here, and says so', async () => {
    const { logger, lines } = capturingLogger();
    const sandbox = await createSandbox(options({}, logger));
    expect(sandbox.kind).toBe('bubblewrap');
    expect(lines).toEqual([expect.objectContaining({ level: 30, msg: 'runners run in a bubblewrap sandbox' })]);
  });

  it('falls back to plain processes for auto without bwrap, with exactly one warning', async () => {
    const { logger, lines } = capturingLogger();
    const sandbox = await createSandbox(options({ searchPath: path.join(scratch, 'nothing-here') }, logger));
    expect(sandbox.kind).toBe('none');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, reason: 'bwrap was not found on PATH' });
    expect(lines[0]?.msg).toContain('WITHOUT isolation');
  });

  it('falls back for auto when bwrap cannot create namespaces', async () => {
    const { logger, lines } = capturingLogger();
    const sandbox = await createSandbox(options({ searchPath: failingBwrapFolder }, logger));
    expect(sandbox.kind).toBe('none');
    expect(lines).toHaveLength(1);
    expect(lines[0]?.reason).toMatch(/cannot create namespaces here: bwrap: No permissions to create new namespace/);
  });

  it('refuses to start with RUNNER_SANDBOX=on when bwrap is missing or unusable', async () => {
    for (const searchPath of [path.join(scratch, 'nothing-here'), failingBwrapFolder]) {
      await expect(createSandbox(options({ mode: 'on', searchPath }))).rejects.toThrow(
        /^RUNNER_SANDBOX=on but the sandbox is unusable: /,
      );
    }
  });

  it('refuses RUNNER_NETWORK=off without a sandbox to honour it', async () => {
    await expect(createSandbox(options({ mode: 'off', network: 'off' }))).rejects.toThrow(
      'RUNNER_NETWORK=off needs the sandbox: set RUNNER_SANDBOX to auto or on',
    );
    await expect(
      createSandbox(options({ network: 'off', searchPath: path.join(scratch, 'nothing-here') })),
    ).rejects.toThrow(/^RUNNER_NETWORK=off needs the sandbox, which is unusable/);
  });

  it('runs plain processes with RUNNER_SANDBOX=off, the plan unchanged', async () => {
    const { logger, lines } = capturingLogger();
    const sandbox = await createSandbox(options({ mode: 'off' }, logger));
    const plan = { command: ['true'], cwd: scratch, env: { PATH: '/usr/bin:/bin' } };
    expect(sandbox.wrap(plan, { writable: [scratch], readOnly: [] })).toEqual({ ...plan, line: null });
    expect(lines).toEqual([expect.objectContaining({ level: 30, sandbox: 'none' })]);
  });
});

describe('a bubblewrap plan', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-bwrap-plan-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('shows of DATA_DIR only the folders given: built files read-only, the working folder writable', async () => {
    const built = path.join(dataDir, 'versions', 'ver_1');
    const work = path.join(dataDir, 'runs', 'run_1');
    const hidden = path.join(dataDir, 'versions', 'ver_2');
    for (const folder of [built, work, hidden]) mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(built, 'main.py'), 'built\n');
    writeFileSync(path.join(hidden, 'main.py'), 'hidden\n');
    const sandbox = await createSandbox({ mode: 'on', network: 'off', dataDir, logger: capturingLogger().logger });
    const script = [
      `cat ${built}/main.py`,
      `cat ${hidden}/main.py 2>/dev/null || echo no-hidden`,
      `touch ${built}/new 2>/dev/null || echo no-write-built`,
      'touch written && echo wrote-work',
      'pwd',
      `test -e /proc/${process.pid} && echo sees-crewd || echo own-pids`,
      'env | sort | tr "\\n" " "',
    ].join('; ');
    const plan = sandbox.wrap(
      { command: ['/bin/sh', '-c', script], cwd: work, env: { PATH: '/usr/bin:/bin', ONLY: 'this' } },
      { writable: [work], readOnly: [built] },
    );
    expect(plan.cwd).toBe(work);
    expect(plan.command).toContain('--unshare-net');
    const [file, ...args] = plan.command;
    const input = `${plan.line}\n`;
    const output = execFileSync(file as string, args, { cwd: plan.cwd, env: plan.env, input, encoding: 'utf8' });
    const lines = output.trim().split('\n');
    expect(lines.slice(0, 6)).toEqual(['built', 'no-hidden', 'no-write-built', 'wrote-work', work, 'own-pids']);
    expect(lines[6]?.trim().split(' ')).toEqual(['ONLY=this', 'PATH=/usr/bin:/bin', `PWD=${work}`]);
  });

  it('gives the network to a process whose confinement asks (build steps), and hides the other folders given', async () => {
    const cache = mkdtempSync(path.join(tmpdir(), 'crewd-bwrap-cache-'));
    writeFileSync(path.join(cache, 'secret'), 'cached\n');
    const sandbox = await createSandbox({
      mode: 'on',
      network: 'off',
      dataDir,
      hidden: [cache],
      logger: capturingLogger().logger,
    });
    const plan = sandbox.wrap(
      {
        command: ['/bin/sh', '-c', `cat ${cache}/secret 2>/dev/null || echo hidden`],
        cwd: '/',
        env: { PATH: '/usr/bin:/bin' },
      },
      { writable: [], readOnly: [], network: 'on' },
    );
    expect(plan.command).not.toContain('--unshare-net');
    const [file, ...args] = plan.command;
    const input = `${plan.line}\n`;
    expect(execFileSync(file as string, args, { env: plan.env, input, encoding: 'utf8' }).trim()).toBe('hidden');
    rmSync(cache, { recursive: true, force: true });
  });

  it('reports a program that does not exist as a spawn would', async () => {
    const sandbox = await createSandbox({ mode: 'on', network: 'on', dataDir, logger: capturingLogger().logger });
    const plan = { command: ['no-such-program-here'], cwd: dataDir, env: { PATH: '/usr/bin:/bin' } };
    expect(() => sandbox.wrap(plan, { writable: [], readOnly: [] })).toThrow('spawn no-such-program-here ENOENT');
    expect(spawnSync('no-such-program-here', { env: plan.env }).error?.message).toBe(
      'spawnSync no-such-program-here ENOENT',
    );
  });
});
