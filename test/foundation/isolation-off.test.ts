import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization } from '../../src/access/bootstrap.js';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { createSandbox } from '../../src/sandbox/index.js';
import { ADMIN_KEY, testConfig } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * CONTRACTS §12: with runners as plain processes, a second organization is refused unless the
 * operator set RUNNER_SANDBOX=off. "Without bubblewrap" is a PATH where bwrap is not found.
 */
describe('organizations without runner isolation', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'crewd-no-bwrap-'));
  let database: TestDatabase;
  const apps: FastifyInstance[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    await bootstrapDefaultOrganization(database.handle.db, ADMIN_KEY);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await database?.destroy();
    rmSync(scratch, { recursive: true, force: true });
  });

  async function appWithout(mode: 'auto' | 'off') {
    const config = testConfig({ RUNNER_SANDBOX: mode, DATA_DIR: path.join(scratch, mode) });
    const logger = createLogger('silent');
    const sandbox = await createSandbox({
      mode,
      network: config.runnerNetwork,
      dataDir: config.dataDir,
      logger,
      searchPath: path.join(scratch, 'no-bwrap-here'),
    });
    expect(sandbox.kind).toBe('none');
    const app = await buildApp({ config, database: database.handle, logger, sandbox });
    apps.push(app);
    await app.ready();
    return (name: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/organizations',
        headers: { authorization: `Bearer ${ADMIN_KEY}` },
        payload: { name },
      });
  }

  it('refuses a second organization under RUNNER_SANDBOX=auto, saying what to set', async () => {
    const create = await appWithout('auto');
    const response = await create('second');
    expect(response.statusCode).toBe(409);
    expect(response.json().error.code).toBe('conflict');
    expect(response.json().error.message).toMatch(/bubblewrap.*RUNNER_SANDBOX=off/s);
    await apps.pop()?.close();
  });

  it('makes it when the operator set RUNNER_SANDBOX=off', async () => {
    const create = await appWithout('off');
    expect((await create('second')).statusCode).toBe(201);
  });
});
