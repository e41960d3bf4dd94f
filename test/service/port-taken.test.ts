import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_TEST_TIMEOUT } from '../cli/helpers.js';
import { runServerToExit, startServer } from '../helpers/server-process.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-port-taken-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function takenPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as net.AddressInfo;
  return { port, release: () => new Promise((resolve) => holder.close(() => resolve())) };
}

describe('a port another program holds', () => {
  it(
    'stops the start with what to do (PORT), says the key printed is kept, and the next start on a free port works',
    async () => {
      const taken = await takenPort();
      try {
        const { code, output } = await runServerToExit({ DATA_DIR: dataDir, PORT: String(taken.port) });
        expect(code).toBe(1);
        const printedKey = /\bcrewd_[a-z0-9]{40}\b/.exec(output)?.[0];
        expect(printedKey, output).toBeDefined();
        expect(output).toContain(
          `crewd cannot listen on port ${taken.port}: another program uses it (another crewd?). Stop that program, ` +
            'or start crewd on a free port with PORT (PORT=8081 npm start). The admin key printed above is kept',
        );
        expect(output).not.toContain('EADDRINUSE');

        const server = await startServer({ DATA_DIR: dataDir });
        try {
          const answer = await fetch(`${server.baseUrl}/v1/deployments`, {
            headers: { authorization: `Bearer ${printedKey}` },
          });
          expect(answer.status).toBe(200);
        } finally {
          server.child.kill('SIGTERM');
          await server.exited;
        }
      } finally {
        await taken.release();
      }
    },
    CLI_TEST_TIMEOUT,
  );
});
