import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createSandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { findNetworkTools } from '../../src/sandbox/network.js';
import { findBwrap } from '../../src/sandbox/probe.js';

/** A logger whose lines are kept, to read what start-up says. */
function capturingLogger() {
  const lines: Array<{ level: number; msg: string; network?: string; reason?: string }> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('info', destination), lines };
}

describe.runIf(findBwrap(process.env.PATH ?? '') !== null)('the network runners get, chosen at start', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'crewd-network-choice-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** A machine without slirp4netns: its tools are looked for in an empty folder. */
  const withoutStack = (overrides: Partial<SandboxOptions>, logger = capturingLogger().logger): SandboxOptions => ({
    mode: 'auto',
    network: undefined,
    dataDir: path.join(scratch, 'data'),
    logger,
    networkToolPath: path.join(scratch, 'empty'),
    ...overrides,
  });

  it("falls back to the host's network with one warning naming what to install, for auto with RUNNER_NETWORK unset", async () => {
    const { logger, lines } = capturingLogger();
    const sandbox = await createSandbox(withoutStack({}, logger));
    expect(sandbox.kind).toBe('bubblewrap');
    const warnings = lines.filter((line) => line.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toMatch(/runners get the host's network .*install slirp4netns/);
    expect(warnings[0]?.reason).toMatch(/slirp4netns \(Debian package slirp4netns\)/);
    expect(lines.at(-1)).toMatchObject({ network: 'on', msg: 'runners run in a bubblewrap sandbox' });
  });

  it('refuses to start for RUNNER_NETWORK=isolated set, or RUNNER_SANDBOX=on, without it', async () => {
    await expect(createSandbox(withoutStack({ network: 'isolated' }))).rejects.toThrow(
      /^RUNNER_NETWORK=isolated but runners cannot get an isolated network: .*install slirp4netns.*or set RUNNER_NETWORK=on/,
    );
    await expect(createSandbox(withoutStack({ mode: 'on' }))).rejects.toThrow(
      /^RUNNER_SANDBOX=on but runners cannot get an isolated network: /,
    );
  });

  it('refuses RUNNER_NETWORK=isolated without the sandbox', async () => {
    await expect(createSandbox(withoutStack({ mode: 'off', network: 'isolated' }))).rejects.toThrow(
      'RUNNER_NETWORK=isolated needs the sandbox: set RUNNER_SANDBOX to auto or on',
    );
  });

  it.runIf('tools' in findNetworkTools())('says so when runners get the isolated network', async () => {
    const { logger, lines } = capturingLogger();
    await createSandbox({ mode: 'auto', network: undefined, dataDir: path.join(scratch, 'data'), logger });
    expect(lines).toEqual([
      expect.objectContaining({ level: 30, network: 'isolated', msg: 'runners run in a bubblewrap sandbox' }),
    ]);
  });
});
