import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { Pool } from 'undici';
import { bootstrapDefaultOrganization } from '../src/access/bootstrap.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { connectPglite, connectPostgres, type DatabaseHandle } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createLogger } from '../src/logger.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';
import { alternatingThroughput, timed } from './lib/load.js';
import { PLAIN_DDL, type Plain, plainInsert, plainQuery, shapeIndexes } from './lib/plain-table.js';
import { type DataRow, makeRows, STAGES } from './lib/table-rows.js';

/**
 * `npm run bench -- tables`: 100,000 rows of six columns (text, number, boolean, datetime, select,
 * json), loaded and queried through the API, against a plain typed table holding the same rows
 * with a b-tree index on each filtered or sorted column, asked the same questions with
 * hand-written SQL. On PostgreSQL (BENCH_DATABASE_URL) with goals; on PGlite for information.
 */

/** BENCH_TABLE_ROWS: fewer rows while iterating; the figures quoted are with 100,000. */
const ROWS = Number(process.env.BENCH_TABLE_ROWS ?? 100_000);
const BATCH = 1000;
const LATENCY_SAMPLES = 300;
const WARMUP = 50;
/** The table's first queries of a filter shape (other values each), before any index for it exists. */
const FIRST_SAMPLES = 3;
/** Rows inserted again once the filter indexes exist, to measure inserts with them. */
const ROWS_AFTER = Math.min(20_000, ROWS);
const INDEX_WAIT_MS = 120_000;
/** Queries each right after a one-row insert, so the total cannot be the one counted before. */
const AFTER_WRITE_SAMPLES = 100;
const CLIENTS = 8;
const LOAD_SECONDS = 10;
/** The 10 seconds of each side are taken in this many alternating slices. */
const LOAD_SLICES = 5;
const KEY = 'bench-admin-key-0123456789';

const FILTER = {
  and: [
    { column: 'stage', operator: 'eq', value: 'won' },
    { column: 'score', operator: 'gte', value: 500 },
  ],
};

interface Api {
  pool: Pool;
  app: FastifyInstance;
  post(path: string, body: unknown, expected: number): Promise<unknown>;
}

async function startApi(database: DatabaseHandle): Promise<Api> {
  await migrateToLatest(database.db);
  await bootstrapDefaultOrganization(database.db, KEY);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-bench-'));
  const config = loadConfig({ BOOTSTRAP_API_KEY: KEY, LOG_LEVEL: 'silent', DATA_DIR: dataDir });
  const app = await buildApp({ config, database, logger: createLogger('silent') });
  app.addHook('onClose', async () => rmSync(dataDir, { recursive: true, force: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CLIENTS, pipelining: 1 });
  return {
    pool,
    app,
    async post(path, body, expected) {
      const response = await pool.request({
        method: 'POST',
        path,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.body.text();
      if (response.statusCode !== expected) throw new Error(`POST ${path}: ${response.statusCode} ${text}`);
      return text;
    },
  };
}

interface Figures {
  apiInsertRate: number;
  plainInsertRate: number;
  apiInsertRateIndexed: number;
  plainInsertRateIndexed: number;
  apiLatency: number;
  plainLatency: number;
  plainRowsOnlyLatency: number;
  apiFirstLatency: number;
  apiAfterWriteLatency: number;
  plainRowsOnlyAfterWriteLatency: number;
  shapeIndexes: number;
  apiRps: number;
  plainRps: number;
}

/**
 * Inserts `data` through the API and into the plain table, batches alternating between the two
 * sides so both tables grow alike and a change in the machine's other load weighs on both.
 * Returns each side's rows per second.
 */
async function insertBoth(label: string, api: Api, plain: Plain, tableId: string, data: DataRow[]) {
  const batches: DataRow[][] = [];
  for (let i = 0; i < data.length; i += BATCH) batches.push(data.slice(i, i + BATCH));
  const apiBodies = batches.map((batch) => batch.map(({ id: _id, ...values }) => values));
  process.stderr.write(`[${label}] inserting ${data.length} rows through the API and into the plain table…\n`);
  let apiMs = 0;
  let plainMs = 0;
  let apiCpuMs = 0;
  for (const [index, batch] of batches.entries()) {
    const cpu = process.cpuUsage();
    apiMs += await timed(() => api.post(`/v1/tables/${tableId}/rows`, apiBodies[index], 201));
    const used = process.cpuUsage(cpu);
    apiCpuMs += (used.user + used.system) / 1000;
    const [text, params] = plainInsert(batch);
    plainMs += await timed(() => plain.exec(text, params));
  }
  process.stderr.write(
    `[${label}] per batch: API ${(apiMs / batches.length).toFixed(1)} ms (this process's CPU ${(apiCpuMs / batches.length).toFixed(1)} ms), plain ${(plainMs / batches.length).toFixed(1)} ms\n`,
  );
  return { api: data.length / (apiMs / 1000), plain: data.length / (plainMs / 1000) };
}

/** Asks the table's filter shape until the index crewd builds for it is ready; returns how many it has. */
async function warmUntilIndexed(label: string, plain: Plain, tableId: string, query: () => Promise<unknown>) {
  const started = Date.now();
  while (Date.now() - started < INDEX_WAIT_MS) {
    const ready = await shapeIndexes(plain, tableId);
    if (ready.length > 0) {
      process.stderr.write(`[${label}] filter index ready after ${Date.now() - started} ms: ${ready.join(', ')}\n`);
      return ready.length;
    }
    await query();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  process.stderr.write(`[${label}] no filter index after ${INDEX_WAIT_MS} ms\n`);
  return 0;
}

async function measure(
  label: string,
  database: DatabaseHandle,
  plain: Plain,
  analyze: () => Promise<void>,
): Promise<Figures> {
  const api = await startApi(database);
  try {
    const created = JSON.parse(
      (await api.post(
        '/v1/tables',
        {
          name: 'bench',
          columns: [
            { name: 'title', type: 'text' },
            { name: 'score', type: 'number' },
            { name: 'active', type: 'boolean' },
            { name: 'due', type: 'datetime' },
            { name: 'stage', type: 'select', options: STAGES },
            { name: 'meta', type: 'json' },
          ],
        },
        201,
      )) as string,
    ) as { id: string };
    for (const statement of PLAIN_DDL) await plain.exec(statement, []);
    const inserted = await insertBoth(label, api, plain, created.id, makeRows(ROWS));
    // Both tables in the state autovacuum brings them to within a minute or two: vacuumed, with statistics.
    await analyze();

    const queryBody = { filter: FILTER, sort_by: 'score', sort_direction: 'desc', limit: 50 };
    const ask = async (body: unknown) => {
      const answer = JSON.parse((await api.post(`/v1/tables/${created.id}/query`, body, 200)) as string);
      if (answer.rows.length !== 50 || answer.total <= 50) throw new Error(`unexpected answer: total ${answer.total}`);
    };
    const apiQuery = () => ask(queryBody);
    // The same shape with another value each time: every one is counted (no total known yet).
    const firstQuery = (i: number) => {
      const [stage, score] = FILTER.and;
      return ask({ ...queryBody, filter: { and: [stage, { ...score, value: 400 + i }] } });
    };

    process.stderr.write(`[${label}] the table's first ${FIRST_SAMPLES} queries of the filter shape…\n`);
    for (let i = 0; i < WARMUP; i++) await plainQuery(plain, false);
    const firstTimes: number[] = [];
    for (let i = 0; i < FIRST_SAMPLES; i++) firstTimes.push(await timed(() => firstQuery(i)));
    const shapeIndexCount = await warmUntilIndexed(label, plain, created.id, apiQuery);

    process.stderr.write(`[${label}] query latency (${LATENCY_SAMPLES} samples each)…\n`);
    for (let i = 0; i < WARMUP; i++) {
      await apiQuery();
      await plainQuery(plain, true);
      await plainQuery(plain, false);
    }
    const apiTimes: number[] = [];
    const plainTimes: number[] = [];
    const rowsOnlyTimes: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      apiTimes.push(await timed(apiQuery));
      plainTimes.push(await timed(() => plainQuery(plain, true)));
      rowsOnlyTimes.push(await timed(() => plainQuery(plain, false)));
    }

    process.stderr.write(`[${label}] query latency right after a write (${AFTER_WRITE_SAMPLES} samples each)…\n`);
    const afterWriteTimes: number[] = [];
    const rowsOnlyAfterWriteTimes: number[] = [];
    const [extra] = makeRows(1);
    const { id: _id, ...oneRow } = extra as DataRow;
    for (let i = 0; i < AFTER_WRITE_SAMPLES; i++) {
      await api.post(`/v1/tables/${created.id}/rows`, oneRow, 201);
      afterWriteTimes.push(await timed(apiQuery));
      rowsOnlyAfterWriteTimes.push(await timed(() => plainQuery(plain, false)));
    }

    process.stderr.write(
      `[${label}] ${CLIENTS} clients for ${LOAD_SECONDS} s each, in ${LOAD_SLICES} alternating slices…\n`,
    );
    const [apiRps, plainRps] = await alternatingThroughput(
      apiQuery,
      () => plainQuery(plain, true),
      CLIENTS,
      LOAD_SECONDS,
      LOAD_SLICES,
    );
    const insertedIndexed = await insertBoth(
      `${label}, with filter indexes`,
      api,
      plain,
      created.id,
      makeRows(ROWS_AFTER),
    );

    return {
      apiInsertRate: inserted.api,
      plainInsertRate: inserted.plain,
      apiInsertRateIndexed: insertedIndexed.api,
      plainInsertRateIndexed: insertedIndexed.plain,
      apiLatency: median(apiTimes),
      plainLatency: median(plainTimes),
      plainRowsOnlyLatency: median(rowsOnlyTimes),
      apiFirstLatency: median(firstTimes),
      apiAfterWriteLatency: median(afterWriteTimes),
      plainRowsOnlyAfterWriteLatency: median(rowsOnlyAfterWriteTimes),
      shapeIndexes: shapeIndexCount,
      apiRps,
      plainRps,
    };
  } finally {
    await api.pool.close();
    await api.app.close();
  }
}

function report(prefix: string, f: Figures, goals: boolean): void {
  const goal = <T>(value: T) => (goals ? value : undefined);
  // Against the hand-written query of the 50 rows alone, with an index on each filtered or sorted column.
  printFigure(
    `${prefix}.query_latency_ratio_vs_rows_only`,
    f.apiLatency / f.plainRowsOnlyLatency,
    'x',
    goal({ op: '<=', target: 3.0 }),
  );
  // The same, for the table's first queries of the filter shape, before its index exists.
  printFigure(`${prefix}.first_query_latency_ratio_vs_rows_only`, f.apiFirstLatency / f.plainRowsOnlyLatency, 'x');
  // The same, each query right after a one-row insert: the total is counted again (through the filter index).
  printFigure(
    `${prefix}.query_latency_ratio_vs_rows_only_after_write`,
    f.apiAfterWriteLatency / f.plainRowsOnlyAfterWriteLatency,
    'x',
  );
  printFigure(`${prefix}.query_latency_ratio`, f.apiLatency / f.plainLatency, 'x', goal({ op: '<=', target: 2.0 }));
  printFigure(`${prefix}.query_throughput_ratio`, f.apiRps / f.plainRps, 'x', goal({ op: '>=', target: 0.5 }));
  printFigure(
    `${prefix}.insert_throughput_ratio`,
    f.apiInsertRate / f.plainInsertRate,
    'x',
    goal({ op: '>=', target: 0.5 }),
  );
  printFigure(
    `${prefix}.insert_throughput_ratio_with_filter_indexes`,
    f.apiInsertRateIndexed / f.plainInsertRateIndexed,
    'x',
    goal({ op: '>=', target: 0.5 }),
  );
  printFigure(`${prefix}.filter_indexes_built`, f.shapeIndexes, 'indexes');
  printFigure(`${prefix}.query_latency_api_median`, f.apiLatency, 'ms');
  printFigure(`${prefix}.query_latency_api_first_median`, f.apiFirstLatency, 'ms');
  printFigure(`${prefix}.query_latency_api_after_write_median`, f.apiAfterWriteLatency, 'ms');
  printFigure(`${prefix}.query_latency_plain_rows_only_after_write_median`, f.plainRowsOnlyAfterWriteLatency, 'ms');
  printFigure(`${prefix}.query_latency_plain_median`, f.plainLatency, 'ms');
  printFigure(`${prefix}.query_latency_plain_rows_only_median`, f.plainRowsOnlyLatency, 'ms');
  printFigure(`${prefix}.query_throughput_api`, f.apiRps, 'req/s');
  printFigure(`${prefix}.query_throughput_plain`, f.plainRps, 'req/s');
  printFigure(`${prefix}.insert_rate_api`, f.apiInsertRate, 'rows/s');
  printFigure(`${prefix}.insert_rate_plain`, f.plainInsertRate, 'rows/s');
  printFigure(`${prefix}.insert_rate_api_with_filter_indexes`, f.apiInsertRateIndexed, 'rows/s');
  printFigure(`${prefix}.insert_rate_plain_second_load`, f.plainInsertRateIndexed, 'rows/s');
}

async function onPostgres(): Promise<Figures> {
  const scratch = await createScratchDatabase();
  let database: DatabaseHandle | undefined;
  const pool = new pg.Pool({ connectionString: scratch.url, max: 2 * CLIENTS });
  // An idle client whose server goes away emits 'error'; unheard, it would end the process.
  pool.on('error', () => {});
  try {
    database = connectPostgres(scratch.url);
    const plain: Plain = {
      async exec(text, params) {
        await pool.query(text, params);
      },
      async rows<T>(text: string, params: unknown[]) {
        return (await pool.query(text, params)).rows as T[];
      },
    };
    return await measure('postgres', database, plain, async () => {
      await pool.query('vacuum analyze');
    });
  } finally {
    await pool.end();
    await database?.close();
    await scratch.drop();
  }
}

async function onPglite(): Promise<Figures> {
  const database = await connectPglite({});
  const pglite = database.pglite;
  if (!pglite) throw new Error('expected the embedded database');
  try {
    const plain: Plain = {
      async exec(text, params) {
        await pglite.query(text, params);
      },
      async rows<T>(text: string, params: unknown[]) {
        return (await pglite.query<T>(text, params)).rows;
      },
    };
    return await measure('pglite', database, plain, async () => {
      await pglite.query('vacuum analyze');
    });
  } finally {
    await database.close();
  }
}

export async function run(): Promise<void> {
  report('tables', await onPostgres(), true);
  report('tables.pglite', await onPglite(), false);
}
