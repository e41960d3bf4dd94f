import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization } from '../../src/access/bootstrap.js';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { testConfig } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createRunContext, type RunContext, startRun, waitForRun } from '../runs/helpers.js';
import { createDeployment } from './helpers.js';

const KEY = 'k'.repeat(40);
let database: TestDatabase;
let ctx: RunContext;

beforeAll(async () => {
  database = await createTestDatabase();
  ctx = await createRunContext({ SECRETS_KEY: KEY }, undefined, database);
});
afterAll(async () => {
  await ctx?.close();
  await database?.destroy();
});

const printEnv = [
  process.execPath,
  '-e',
  `process.stdin.resume();process.stdin.on('end',()=>console.log(JSON.stringify({type:'run.completed',data:{output:{token:process.env.LLM_TOKEN??null}}})))`,
];

describe('deployment variables', () => {
  it('reach runners of command versions, are stored encrypted and never come back', async () => {
    const deploymentId = await createDeployment(ctx, 'secrets');
    await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, {
      body: { command: printEnv, environment: 'production' },
    });
    const put = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { LLM_TOKEN: 'tok-123-secret' } },
    });
    expect(put.json()).toEqual({ names: ['LLM_TOKEN'] });
    const stored = await ctx.database.handle.db.selectFrom('deployment_variables').selectAll().execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]?.encrypted).toBe(true);
    expect(stored[0]?.value).not.toContain('tok-123');

    const run = await startRun(ctx, deploymentId);
    const ended = await waitForRun(ctx, run.run_id);
    expect(ended.output).toEqual({ token: 'tok-123-secret' });
    for (const url of [`/v1/deployments/${deploymentId}/variables`, `/v1/deployments/${deploymentId}`]) {
      expect((await ctx.call('GET', url)).body).not.toContain('tok-123');
    }
  });

  it('names are checked, at most 100 at once', async () => {
    const deploymentId = await createDeployment(ctx, 'names');
    const bad = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { 'lower-case': 'x' } },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toMatch(/\^\[A-Z_\]\[A-Z0-9_\]\*\$/);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`V${i}`, 'x']));
    const tooMany = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, { body: { variables: many } });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error.message).toMatch(/at most 100/);
    expect((await ctx.call('GET', `/v1/deployments/dep_missing/variables`)).statusCode).toBe(404);
  });

  it('a start with encrypted values and no key, or another key, stops with one clear line', async () => {
    for (const [env, message] of [
      [{}, /SECRETS_KEY is not set, but deployment variables are stored encrypted/],
      [{ SECRETS_KEY: 'x'.repeat(40) }, /SECRETS_KEY is not the key the deployment variables were stored with/],
    ] as const) {
      // A DATA_DIR of its own, made by testConfig, removed below.
      const config = testConfig({ ...env });
      await bootstrapDefaultOrganization(database.handle.db, config.bootstrapApiKey);
      const app = await buildApp({ config, database: database.handle, logger: createLogger('silent') });
      await expect(app.ready()).rejects.toThrow(message);
      await app.close().catch(() => {});
      rmSync(config.dataDir, { recursive: true, force: true });
    }
  });
});
