import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/plugin.js';
import { CACHE_CHANNEL, createInstanceCaches, type InstanceCaches } from '../../src/cache/instance-caches.js';
import { connectPostgres, type DatabaseHandle } from '../../src/db/connect.js';
import { createPgListener, type PgListener } from '../../src/db/pg-listener.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../runs/helpers.js';

const principal: Principal = { orgId: 'org_default', keyId: 'key_1', keyName: 'k', role: 'member' };
const logger = createLogger('silent');

describe('instance caches on one database', () => {
  let database: TestDatabase;
  let caches: InstanceCaches;

  beforeAll(async () => {
    database = await createTestDatabase();
    // No listener: on the embedded database that is the normal case; on PostgreSQL it means "cache nothing".
    caches = createInstanceCaches({ db: database.handle.db, backend: database.handle.backend, listener: null });
  });
  afterAll(async () => database?.destroy());

  it('drops a cache after the change that affects it commits, and keeps it when the change fails', async () => {
    const cache = caches.apiKeys;
    cache.set('k', principal, cache.generation);
    expect(cache.get('k')).toEqual(usingPostgres() ? undefined : principal);
    if (usingPostgres()) return;
    await expect(
      caches.changing('api_keys', async () => {
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(cache.get('k')).toEqual(principal);
    caches.runs.set('r', '{}', caches.runs.generation);
    expect(await caches.changing('api_keys', async () => 'done')).toBe('done');
    expect(cache.get('k')).toBeUndefined();
    expect(caches.runs.get('r')).toBe('{}');
  });
});

describe.runIf(usingPostgres())('instance caches with a notification connection', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let viaProxy: DatabaseHandle;
  let listener: PgListener;
  let here: InstanceCaches;
  let otherListener: PgListener;
  let other: InstanceCaches;

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = database.url as string;
    const target = new URL(url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    viaProxy = connectPostgres(proxy.via(url), 2);
    const connection = viaProxy.pool?.options ?? {};
    // As the composition root does: each listener made with the caches' handlers, the caches with the listener.
    listener = createPgListener({
      connection,
      logger,
      reconnectMs: { min: 50, max: 100 },
      channels: { [CACHE_CHANNEL]: (name) => here.heard(name) },
      onConnectionChange: () => here.connectionChanged(),
    });
    here = createInstanceCaches({ db: viaProxy.db, backend: 'postgres', listener });
    otherListener = createPgListener({
      connection: database.handle.pool?.options ?? {},
      logger,
      channels: { [CACHE_CHANNEL]: (name) => other.heard(name) },
      onConnectionChange: () => other.connectionChanged(),
    });
    other = createInstanceCaches({ db: database.handle.db, backend: 'postgres', listener: otherListener });
    await Promise.all([listener.start(), otherListener.start()]);
  });

  afterAll(async () => {
    proxy?.restore();
    await Promise.all([listener?.stop(), otherListener?.stop()]);
    await viaProxy?.close();
    await proxy?.close();
    await database?.destroy();
  });

  it('drops the entries of a change made by another instance', async () => {
    here.apiKeys.set('k', principal, here.apiKeys.generation);
    here.runs.set('r', '{}', here.runs.generation);
    expect(here.apiKeys.get('k')).toEqual(principal);
    await other.changing('api_keys', async () => null);
    await until(async () => here.apiKeys.get('k') === undefined, 2000);
    expect(here.runs.get('r')).toBe('{}');
  });

  it('neither serves nor keeps entries while it cannot hear of changes, and starts afresh after', async () => {
    here.apiKeys.set('k', principal, here.apiKeys.generation);
    proxy.cut();
    await until(async () => !listener.connected, 2000);
    expect(here.apiKeys.get('k')).toBeUndefined();
    here.apiKeys.set('k', principal, here.apiKeys.generation);
    expect(here.apiKeys.get('k')).toBeUndefined();
    proxy.restore();
    await until(async () => listener.connected, 5000);
    here.apiKeys.set('k', principal, here.apiKeys.generation);
    expect(here.apiKeys.get('k')).toEqual(principal);
  });
});
