import { rmSync } from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization } from '../../src/access/bootstrap.js';
import { composeServices, type Services } from '../../src/compose.js';
import { connectPostgres, type DatabaseHandle } from '../../src/db/connect.js';
import { testConfig } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { until } from '../helpers/poll.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { FAST_TIMINGS } from '../runs/helpers.js';
import { explainPostgresOnly } from '../scale/helpers.js';

explainPostgresOnly('housekeeping through an outage', 'the embedded database cannot be cut off from the service');

interface LogLine {
  level: number;
  msg: string;
}

/** The instance's housekeeping tick with its database behind a relay the test cuts and restores. */
describe.runIf(usingPostgres())('housekeeping through a database outage', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let handle: DatabaseHandle;
  let services: Services;
  let dataDir: string;
  const lines: LogLine[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const target = new URL(database.url as string);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    handle = connectPostgres(proxy.via(database.url as string), 4);
    const config = testConfig();
    dataDir = config.dataDir;
    await bootstrapDefaultOrganization(handle.db, config.bootstrapApiKey);
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
    services = await composeServices({
      config,
      database: handle,
      logger,
      timings: { ...FAST_TIMINGS, leaseTickMs: 50 },
    });
    await services.start();
  });

  afterAll(async () => {
    proxy?.restore();
    await services?.stop();
    await handle?.close();
    await proxy?.close();
    await database?.destroy();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const named = (msg: string) => lines.filter((line) => line.msg === msg);

  it('logs an error when its ticks start failing, debug while they go on failing, and once when they work again', async () => {
    proxy.cut();
    await until(() => named('housekeeping tick failed again').length >= 5);
    proxy.restore();
    await until(() => named('housekeeping: working again').length > 0);

    const failed = named('housekeeping tick failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.level).toBe(50);
    expect(named('housekeeping tick failed again').every((line) => line.level === 20)).toBe(true);
    expect(named('housekeeping: working again')).toHaveLength(1);
  });
});
