import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDirectSpawner } from '../../src/execution/direct-spawner.js';
import type { LaunchedProcess, ProcessLauncher } from '../../src/execution/launcher.js';
import { sandboxedLauncher } from '../../src/execution/sandboxed-launcher.js';
import { createSpawner } from '../../src/execution/spawner.js';
import { createLogger } from '../../src/logger.js';
import { createBubblewrapSandbox } from '../../src/sandbox/bubblewrap.js';
import { SANDBOX_HOME_ENV } from '../../src/sandbox/home.js';
import { findNetworkTools } from '../../src/sandbox/network.js';
import { findBwrap } from '../../src/sandbox/probe.js';
import type { RunnerNetwork } from '../../src/sandbox/types.js';
import { until } from '../runs/helpers.js';

const bwrapPath = findBwrap(process.env.PATH ?? '');
const networkTools = findNetworkTools();

/** Reports its environment and standard input on one line, then waits to be ended. */
const RUNNER = `
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  process.stdout.write(JSON.stringify({ env: process.env, input }) + '\\n');
  setInterval(() => {}, 60_000);
});
`;

/** What a version's env (chosen by an organization's admin) could hold, and a deployment's secret. */
function versionEnv(): Record<string, string> {
  return {
    PATH: '/usr/bin:/bin',
    LD_PRELOAD: '/nonexistent-crewd-test/preload.so',
    LD_LIBRARY_PATH: '/nonexistent-crewd-test/lib',
    LD_AUDIT: '/nonexistent-crewd-test/audit.so',
    GCONV_PATH: '/nonexistent-crewd-test/gconv',
    GLIBC_TUNABLES: 'glibc.malloc.check=3',
    CREW_API_KEY: `secret-${randomBytes(12).toString('hex')}`,
  };
}

/** A /proc file's NUL-separated strings, or null when the process is gone. */
function procStrings(pid: string, file: 'cmdline' | 'environ'): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
}

/** The processes of a process group, as the host sees them. */
function groupMembers(pgid: number): string[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        // After the command's name in parentheses: state, ppid, pgrp.
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === pgid;
      } catch {
        return false;
      }
    });
}

/** The first line of the process's output, once it wrote it. */
async function firstOutputLine(launched: LaunchedProcess): Promise<string> {
  let text = '';
  launched.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  await until(() => text.includes('\n'));
  return text.slice(0, text.indexOf('\n'));
}

const spawners: Array<[string, () => ProcessLauncher]> = [
  ['the spawner helper', () => createSpawner(createLogger('silent'))],
  ['RUNNER_SPAWNER=direct', () => createDirectSpawner()],
];
const networks: RunnerNetwork[] = 'tools' in networkTools ? ['on', 'isolated'] : ['on'];

describe.skipIf(bwrapPath === null)("the sandbox's host-side programs never get the process's environment", () => {
  let dataDir: string;
  let runsDir: string;
  let launcher: ProcessLauncher | null = null;
  let count = 0;

  beforeEach(() => {
    dataDir = mkdtempSync('/var/tmp/crewd-host-env-');
    runsDir = path.join(dataDir, 'runs');
    mkdirSync(runsDir);
  });
  afterEach(async () => {
    await launcher?.stop();
    launcher = null;
    rmSync(dataDir, { recursive: true, force: true });
  });

  function start(network: RunnerNetwork, inner: ProcessLauncher, withSpares: boolean): ProcessLauncher {
    const networkSetup = 'tools' in networkTools ? { tools: networkTools.tools } : null;
    const sandbox = createBubblewrapSandbox({ bwrapPath: bwrapPath as string, network, networkSetup, dataDir });
    const spares = withSpares ? { runsDir, logger: createLogger('silent') } : undefined;
    launcher = sandboxedLauncher(inner, sandbox, spares);
    launcher.start();
    return launcher;
  }

  /** Launches a run as the executor does and checks every process of its group while it runs. */
  async function checkRun(started: ProcessLauncher): Promise<void> {
    const cwd = path.join(runsDir, `run_host_env${++count}`);
    mkdirSync(cwd);
    const env = versionEnv();
    // A fork server's secret comes first on its input: the sandbox's own line must go before it.
    const stdin = `fork-server-secret\n{"run": ${count}}`;
    const launched = await started.launch({
      command: [process.execPath, '-e', RUNNER],
      cwd,
      env,
      stdin,
      confinement: { writable: [cwd], readOnly: [] },
    });
    if ('error' in launched) throw new Error(launched.error);
    try {
      const report = JSON.parse(await firstOutputLine(launched));
      // The runner inside gets exactly its environment, and its input as sent.
      expect(report.env).toEqual({ ...env, ...SANDBOX_HOME_ENV, PWD: cwd });
      expect(report.input).toBe(stdin);

      const members = groupMembers(launched.pid);
      const runner = members.filter((pid) => procStrings(pid, 'cmdline')?.[0] === process.execPath);
      const hostSide = members.filter((pid) => !runner.includes(pid));
      expect(runner).toHaveLength(1);
      expect(hostSide.length).toBeGreaterThan(0);
      for (const pid of hostSide) {
        const names = (procStrings(pid, 'environ') ?? []).map((entry) => entry.slice(0, entry.indexOf('=')));
        const leaked = names.filter((name) => name !== 'PATH' && name in env);
        const program = procStrings(pid, 'cmdline')?.[0];
        expect({ program, leaked }).toEqual({ program, leaked: [] });
      }
      // No process's argv holds the secret (anyone on the host can read /proc/<pid>/cmdline).
      const withSecret = readdirSync('/proc')
        .filter((pid) => /^\d+$/.test(pid))
        .filter((pid) => procStrings(pid, 'cmdline')?.some((arg) => arg.includes(env.CREW_API_KEY as string)));
      expect(withSecret).toEqual([]);
    } finally {
      await launched.endGroup(0);
    }
  }

  for (const network of networks) {
    for (const [spawnerName, inner] of spawners) {
      it(`a fresh sandbox, network ${network}, through ${spawnerName}`, async () => {
        await checkRun(start(network, inner(), false));
      });
    }
  }

  it("refuses, naming it, a variable the sandbox's shell cannot export", async () => {
    const started = start('on', createSpawner(createLogger('silent')), true);
    const launched = await started.launch({
      command: [process.execPath, '-e', RUNNER],
      cwd: runsDir,
      env: { PATH: '/usr/bin:/bin', 'npm_config_odd-name': 'x' },
      stdin: '',
      confinement: { writable: [], readOnly: [] },
    });
    expect(launched).toEqual({ error: expect.stringContaining('"npm_config_odd-name" cannot be given') });
  });

  it('a run that takes a spare sandbox, and the fresh one before it', async () => {
    const started = start('on', createSpawner(createLogger('silent')), true);
    await checkRun(started);
    await until(() => readdirSync(runsDir).some((name) => name.startsWith('.spare-')));
    await checkRun(started);
  });
});
