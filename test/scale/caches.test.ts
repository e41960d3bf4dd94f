import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { crew, deploy, getRun, type Instance, startInstance, startRun, until } from './helpers.js';

describe.runIf(!usingPostgres())('caches across instances (embedded database)', () => {
  it('runs only on PostgreSQL: with the embedded database one process holds every cache', () => {
    expect(inject('testDatabase').kind).toBe('pglite');
  });
});

/**
 * Keys and finished runs are cached in each instance; a change on one instance must reach the
 * others' caches. (test/cache covers an instance that cannot hear about changes.)
 */
describe.runIf(usingPostgres())('caches across instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    database = await createTestDatabase();
    a = await startInstance('cache-a', database.url as string);
    b = await startInstance('cache-b', database.url as string);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.destroy();
  });

  async function newKey(name: string): Promise<{ id: string; key: string }> {
    const created = await a.call('POST', '/v1/api-keys', { name });
    expect(created.status).toBe(201);
    return created.json();
  }

  const listRunsWith = async (instance: Instance, key: string) =>
    (await fetch(`${instance.baseUrl}/v1/runs?limit=1`, { headers: { authorization: `Bearer ${key}` } })).status;

  it('refuses on B, within moments, a key B has just served and A deletes', async () => {
    const { id, key } = await newKey('shared');
    expect(await listRunsWith(b, key)).toBe(200);
    expect(await listRunsWith(b, key)).toBe(200);
    expect((await a.call('DELETE', `/v1/api-keys/${id}`)).status).toBe(200);
    expect(await listRunsWith(a, key)).toBe(401);
    await until(async () => (await listRunsWith(b, key)) === 401, 2000);
  });

  it('shows on B that a finished run lost its thread when A deletes the thread', async () => {
    const deploymentId = await deploy(a, crew('trivial.mjs'));
    const thread = await (await a.call('POST', '/v1/threads', { deployment_id: deploymentId })).json();
    const run = await startRun(a, deploymentId, {}, { thread_id: thread.thread_id });
    const finished = await until(async () => {
      const seen = await getRun(b, run.run_id);
      return seen.status === 'succeeded' && seen;
    });
    expect(finished.thread_id).toBe(thread.thread_id);
    expect((await a.call('DELETE', `/v1/threads/${thread.thread_id}`)).status).toBe(200);
    await until(async () => (await getRun(b, run.run_id)).thread_id === null, 2000);
  });
});
