import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildFailure, runStep, type StepTools } from '../../src/builds/run-step.js';
import { createDirectSpawner } from '../../src/execution/direct-spawner.js';
import type { ProcessLauncher } from '../../src/execution/launcher.js';
import { sandboxedLauncher } from '../../src/execution/sandboxed-launcher.js';
import { createLogger } from '../../src/logger.js';
import { createSandbox } from '../../src/sandbox/index.js';
import { findBwrap } from '../../src/sandbox/probe.js';
import { processesWith, until } from '../runs/helpers.js';

const withBwrap = findBwrap(process.env.PATH ?? '') !== null;

describe.each([
  ['plain', false],
  ['in the sandbox', true],
])('a build step (%s)', (_name, sandboxed) => {
  let scratch: string;
  let launcher: ProcessLauncher;
  beforeAll(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'crewd-run-step-'));
    const plain = createDirectSpawner();
    const sandbox = await createSandbox({
      mode: sandboxed ? 'on' : 'off',
      network: 'on',
      dataDir: path.join(scratch, 'data'),
      logger: createLogger('silent'),
    });
    launcher = sandboxedLauncher(plain, sandbox);
  });
  afterAll(async () => {
    await launcher?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  const tools = (lines: string[], overrides: Partial<StepTools> = {}): StepTools => ({
    launcher,
    env: { PATH: '/usr/bin:/bin' },
    writable: [scratch],
    log: (message) => lines.push(message),
    deadline: Date.now() + 30_000,
    ...overrides,
  });

  it.runIf(!sandboxed || withBwrap)('logs its output and fails with its last lines and exit code', async () => {
    const lines: string[] = [];
    const failure = await runStep(
      'checking',
      ['/bin/sh', '-c', 'echo one; echo two >&2; exit 3'],
      scratch,
      tools(lines),
    )
      .then(() => null)
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BuildFailure);
    expect((failure as BuildFailure).message).toMatch(/^checking exited with code 3\n/);
    expect(lines).toEqual(expect.arrayContaining(['one', 'two']));
  });

  it.runIf(!sandboxed || withBwrap)('ends its whole process group when the service stops', async () => {
    const marker = `crewd-step-marker-${sandboxed ? 'sandboxed' : 'plain'}`;
    const stop = new AbortController();
    const script = `sleep 60 & sleep 61 & echo started; wait # ${marker}`;
    const lines: string[] = [];
    const step = runStep('waiting', ['/bin/sh', '-c', script], scratch, tools(lines, { signal: stop.signal }));
    await until(() => lines.includes('started'));
    stop.abort();
    await expect(step).rejects.toThrow(/^waiting was stopped: the service is shutting down/);
    await until(() => processesWith(marker).length === 0 && processesWith('sleep 61').length === 0);
  });
});
