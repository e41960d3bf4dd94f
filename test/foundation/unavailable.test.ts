import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { connectPostgres, type DatabaseHandle } from '../../src/db/connect.js';
import { createLogger } from '../../src/logger.js';

describe('database unreachable', () => {
  let database: DatabaseHandle;
  let app: Awaited<ReturnType<typeof buildApp>>;
  // A folder of its own: the default (./data) would be made in the checkout.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-unavailable-'));

  beforeAll(async () => {
    // A real pool pointed at a port where nothing listens: every query fails to connect.
    database = connectPostgres('postgres://postgres@127.0.0.1:9/none', 1);
    const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir });
    app = await buildApp({ config, database, logger: createLogger('silent') });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 503 unavailable on API routes and /readyz, while /healthz still answers', async () => {
    const api = await app.inject({
      method: 'GET',
      url: '/v1/deployments',
      headers: { authorization: 'Bearer crewd_x' },
    });
    expect(api.statusCode).toBe(503);
    expect(api.json()).toEqual({
      error: { message: 'Service unavailable: the database cannot be reached', code: 'unavailable' },
    });
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().error.code).toBe('unavailable');
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
  });
});
