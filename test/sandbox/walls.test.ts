import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installationCache } from '../../src/builds/environment-cache.js';
import { completed, HOME_CREW, PROBE, type SandboxServer, startSandboxServer } from './server.js';

const HOG = path.resolve(import.meta.dirname, 'fixtures/hog.py');
async function runOf(server: SandboxServer, command: string[], input: Record<string, unknown> = {}) {
  const deployment = await server.deploy(command);
  const { run_id } = await server.startRun(deployment, input);
  return server.waitForRun(run_id);
}

describe('walls and limits of a run in the sandbox (RUNNER_SANDBOX=on)', () => {
  let server: SandboxServer;
  /** Another installation's DATA_DIR on the machine, outside the host's /tmp. */
  const otherDataDir = mkdtempSync('/var/tmp/crewd-other-data-');
  const extra = mkdtempSync('/var/tmp/crewd-extra-');
  const namedInTmp = mkdtempSync(path.join(tmpdir(), 'crewd-named-'));
  beforeAll(async () => {
    writeFileSync(path.join(otherDataDir, 'secret.txt'), 'other-installation');
    writeFileSync(path.join(extra, 'tool.txt'), 'extra-tool');
    writeFileSync(path.join(namedInTmp, 'secret.txt'), 'named-in-tmp');
    server = await startSandboxServer({
      RUNNER_SANDBOX: 'on',
      RUNNER_EXTRA_PATHS: extra,
      RUN_MAX_PROCESSES: '64',
      // Node 24 reserves about 700 MiB as it starts: the probe (a Node program) needs more than that.
      RUN_MEMORY_MB: '1024',
      RUN_MAX_EVENTS: '50',
    });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    for (const folder of [otherDataDir, extra, namedInTmp]) rmSync(folder, { recursive: true, force: true });
  });

  it("cannot read /etc/shadow, root's home, another DATA_DIR nor crewd's own", async () => {
    const run = await runOf(server, [process.execPath, PROBE], {
      read: ['/etc/shadow', path.join(otherDataDir, 'secret.txt'), path.join(server.dataDir, 'installation-id')],
      list: ['/root', '/home', '/var', otherDataDir],
    });
    expect(run.status, String(run.error_message)).toBe('succeeded');
    type Attempts = Record<string, { ok: boolean; value?: unknown }>;
    const { reads, lists } = run.output as { reads: Attempts; lists: Attempts };
    expect(reads['/etc/shadow']).toEqual({ ok: true, value: '' });
    for (const file of [path.join(otherDataDir, 'secret.txt'), path.join(server.dataDir, 'installation-id')]) {
      expect(reads[file]?.ok, file).toBe(false);
    }
    // root's home shows at most the way to a runtime's folder bound back (a Python under it).
    expect((lists['/root']?.value as string[] | undefined) ?? []).not.toContain('.bashrc');
    expect(lists['/home']).toEqual({ ok: true, value: ['crewd'] });
    // /var shows only the way to the RUNNER_EXTRA_PATHS folder (under /var/tmp).
    expect(lists['/var']).toEqual({ ok: true, value: ['tmp'] });
    expect(lists[otherDataDir]?.ok).toBe(false);
  });

  it('binds no host /tmp folder a command names, and the folders of RUNNER_EXTRA_PATHS', async () => {
    const named = await runOf(server, ['/bin/cat', path.join(namedInTmp, 'secret.txt')]);
    expect(named.status).toBe('failed');
    expect(named.error_message).toMatch(/not in the sandbox's view.*RUNNER_EXTRA_PATHS/);
    const listed = await runOf(server, ['/bin/sh', '-c', completed(`{\\"tool\\":\\"$(cat ${extra}/tool.txt)\\"}`)]);
    expect(listed.status, String(listed.error_message)).toBe('succeeded');
    expect(listed.output).toEqual({ tool: 'extra-tool' });
  });

  it('ends a fork bomb by the process limit, and says so', async () => {
    const run = await runOf(server, ['/usr/bin/python3', HOG, 'fork']);
    expect(run.status).toBe('failed');
    expect(run.error_message).toMatch(/^the run started more than RUN_MAX_PROCESSES=64 processes/);
  });

  it('ends a memory hog by the memory limit, and says so', async () => {
    const run = await runOf(server, ['/usr/bin/python3', HOG, 'memory']);
    expect(run.status).toBe('failed');
    expect(run.error_message).toMatch(/^the run used more than RUN_MEMORY_MB=1024 MiB of memory/);
  });

  it('fails a run that floods events past RUN_MAX_EVENTS', async () => {
    const flood = ['/bin/sh', '-c', 'while true; do echo \'{"type":"log","data":{"message":"x"}}\'; done'];
    const run = await runOf(server, flood);
    expect(run.status).toBe('failed');
    expect(run.error_message).toBe('the run wrote more than RUN_MAX_EVENTS=50 events');
  });

  it('gives each run a writable home of its own, gone after it', async () => {
    const first = await runOf(server, HOME_CREW);
    const second = await runOf(server, HOME_CREW);
    for (const run of [first, second]) {
      expect(run.status, String(run.error_message)).toBe('succeeded');
      // Only what this run wrote: the other run's file went with it.
      expect(run.output).toEqual({ home: '/home/crewd', read: 'mine', files: 'own.txt' });
    }
  });
});

describe('two installations sharing BUILD_CACHE_DIR', () => {
  it('never share an environment: each has its own folder of the cache, kept across starts', () => {
    const cache = mkdtempSync(path.join(tmpdir(), 'crewd-shared-cache-'));
    const [one, two] = [mkdtempSync(path.join(tmpdir(), 'crewd-one-')), mkdtempSync(path.join(tmpdir(), 'crewd-two-'))];
    try {
      const first = installationCache(cache, one as string);
      expect(installationCache(cache, two as string)).not.toBe(first);
      expect(installationCache(cache, one as string)).toBe(first);
      expect(path.dirname(first)).toBe(path.resolve(cache));
      mkdirSync(first);
    } finally {
      for (const folder of [cache, one, two]) rmSync(folder as string, { recursive: true, force: true });
    }
  });
});
