import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LaunchedProcess } from '../../src/execution/launcher.js';
import { createSpawner } from '../../src/execution/spawner.js';
import { processGone, until } from '../runs/helpers.js';

const launchNode = (script: string) => ({
  command: [process.execPath, '-e', script],
  cwd: '/',
  env: { PATH: process.env.PATH ?? '' },
  stdin: 'the input',
  confinement: { writable: [], readOnly: [] },
});

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function started(result: LaunchedProcess | { error: string }): LaunchedProcess {
  if ('error' in result) throw new Error(result.error);
  return result;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('the runner spawner relays what its runners write', () => {
  let spawner = createSpawner(pino({ level: 'silent' }));
  beforeEach(() => {
    spawner = createSpawner(pino({ level: 'silent' }));
  });
  afterEach(async () => spawner.stop());

  it('every byte of stdout and stderr, in order, bytes that are not UTF-8 and 8 MB of output included', async () => {
    // Deterministic bytes 0..255 over and over, written in pieces of odd sizes; stdin echoed on stderr.
    const script = `
      const total = 8 * 1024 * 1024;
      const bytes = Buffer.alloc(total, 0).map((_, i) => (i * 7 + (i >> 8)) & 255);
      let at = 0;
      const next = () => { while (at < total) { const end = Math.min(total, at + 65_537); const more = process.stdout.write(bytes.subarray(at, end)); at = end; if (!more) return process.stdout.once('drain', next); } };
      next();
      let input = ''; process.stdin.on('data', (c) => { input += c; }); process.stdin.on('end', () => process.stderr.write(Buffer.concat([Buffer.from(input), Buffer.from([0xff, 0xfe, 0x00, 0x0a])])));
    `;
    const proc = started(await spawner.launch(launchNode(script)));
    const [stdout, stderr, exit] = await Promise.all([collect(proc.stdout), collect(proc.stderr), proc.exit]);
    const expected = Buffer.alloc(8 * 1024 * 1024, 0).map((_, i) => (i * 7 + (i >> 8)) & 255);
    expect(stdout.length).toBe(expected.length);
    expect(sha256(stdout)).toBe(sha256(expected));
    expect(stderr).toEqual(Buffer.concat([Buffer.from('the input'), Buffer.from([0xff, 0xfe, 0x00, 0x0a])]));
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it('gives each of many runners in a row its own output and exit status', async () => {
    for (let i = 0; i < 40; i += 1) {
      const proc = started(await spawner.launch(launchNode(`console.log('run ${i}'); process.exit(${i % 3})`)));
      const [stdout, exit] = await Promise.all([collect(proc.stdout), proc.exit, collect(proc.stderr)]);
      expect(stdout.toString()).toBe(`run ${i}\n`);
      expect(exit).toEqual({ code: i % 3, signal: null });
    }
  });

  it('when stopped, ends the runners still running and exits', async () => {
    const proc = started(await spawner.launch(launchNode('setInterval(() => {}, 1000)')));
    await spawner.stop();
    await until(() => processGone(proc.pid));
    expect(await spawner.launch(launchNode(''))).toEqual({ error: 'crewd is stopping' });
  });
});
