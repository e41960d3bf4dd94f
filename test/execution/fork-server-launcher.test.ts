import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { launchInForkServer } from '../../src/execution/fork-server-launcher.js';
import type { LaunchedProcess } from '../../src/execution/launcher.js';

/*
 * The connection's framing, against a socket server that answers as runners/python/crewd_runner/forkserver.py does
 * (test/python/fork-server.test.ts runs the real server through the service).
 */

const folders: string[] = [];
const servers: net.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A server on a fresh socket; `answer` gets the connection and the lines crewd sent, as they come (the header first). */
async function serve(answer: (connection: net.Socket, lines: string[]) => void): Promise<string> {
  const folder = mkdtempSync(path.join(tmpdir(), 'crewd-fork-test-'));
  folders.push(folder);
  const socketPath = path.join(folder, 'socket');
  const server = net.createServer((connection) => {
    let pending = '';
    connection.on('data', (chunk) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      if (lines.length > 0) answer(connection, lines);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return socketPath;
}

const request = {
  command: ['python'],
  cwd: '/project',
  env: { A: 'b' },
  stdin: '{"input":{}}',
  confinement: { writable: [], readOnly: [] },
};

const SECRET = 'ab'.repeat(32);

async function launch(socketPath: string): Promise<LaunchedProcess> {
  const launched = await launchInForkServer({ path: socketPath, secret: SECRET }, request);
  if (!launched) throw new Error('no server answered');
  return launched;
}

async function readAll(stream: Readable): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  return text;
}

describe('a run asked of a fork server', () => {
  it('sends the request as one line and reads the output up to the NUL byte, the exit after it', async () => {
    let header: unknown = null;
    const socketPath = await serve(async (connection, lines) => {
      header = JSON.parse(lines[0] as string);
      connection.write('{"type":"log","data":{"message":"one"}}\n{"type":"run.comp');
      await sleep(20);
      connection.write('leted","data":{"output":{}}}\n\0{"exit_');
      await sleep(20);
      connection.end('code": 3}\n');
    });
    const launched = await launch(socketPath);
    const [output, exit] = await Promise.all([readAll(launched.stdout), launched.exit, readAll(launched.stderr)]);

    expect(header).toEqual({ secret: SECRET, env: { A: 'b' }, cwd: '/project', stdin: '{"input":{}}' });
    expect(output).toBe('{"type":"log","data":{"message":"one"}}\n{"type":"run.completed","data":{"output":{}}}\n');
    expect(exit).toEqual({ code: 3, signal: null });
  });

  it('reports the signal that ended the child by its name', async () => {
    const socketPath = await serve((connection) => connection.end('\0{"signal": 15}\n'));
    const launched = await launch(socketPath);
    launched.stdout.resume();

    expect(await launched.exit).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('writes a refusal where the output goes, and exits with 1', async () => {
    const socketPath = await serve((connection) => connection.end('\0{"error": "the request header ended early"}\n'));
    const launched = await launch(socketPath);
    const [output, exit] = await Promise.all([readAll(launched.stdout), launched.exit]);

    expect(output).toBe('the fork server refused the run: the request header ended early\n');
    expect(exit).toEqual({ code: 1, signal: null });
  });

  it('has lost the exit when the connection closes without the last line', async () => {
    const socketPath = await serve((connection) => connection.end('{"type":"log","data":{"message":"cut"}}\n'));
    const launched = await launch(socketPath);
    launched.stdout.resume();

    expect(await launched.exit).toBeNull();
  });

  it('asks for SIGTERM, then SIGKILL once the grace passed, and ends with the child', async () => {
    const received: string[] = [];
    const socketPath = await serve((connection, lines) => {
      received.push(...lines.filter((line) => line.startsWith('{"signal"')));
      if (lines.includes('{"signal": 9}')) connection.end('\0{"signal": 9}\n');
    });
    const launched = await launch(socketPath);
    launched.stdout.resume();
    await launched.endGroup(50);

    expect(received).toEqual(['{"signal": 15}', '{"signal": 9}']);
    expect(await launched.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('is null when no server listens', async () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'crewd-fork-test-'));
    folders.push(folder);
    const launched = await launchInForkServer({ path: path.join(folder, 'none'), secret: SECRET }, request);

    expect(launched).toBeNull();
  });
});
