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
import { newId } from '../src/ids.js';
import { createLogger } from '../src/logger.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';

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
const STAGES = ['lead', 'qualified', 'proposal', 'won', 'lost'];

interface DataRow {
  id: string;
  title: string;
  score: number;
  active: boolean;
  due: string;
  stage: string;
  meta: { source: string; tags: string[]; n: number };
}

/** Deterministic rows (mulberry32), so every run measures the same data. */
function makeRows(count: number): DataRow[] {
  let seed = 42;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
  const start = Date.UTC(2024, 0, 1);
  return Array.from({ length: count }, (_, i) => ({
    id: newId('row'),
    title: `${words[Math.floor(random() * 10)]} ${words[Math.floor(random() * 10)]} ${i}`,
    score: Math.round(random() * 100_000) / 100,
    active: random() < 0.5,
    due: new Date(start + Math.floor(random() * 365 * 86_400_000)).toISOString(),
    stage: STAGES[Math.floor(random() * STAGES.length)] as string,
    meta: { source: words[i % 10] as string, tags: ['a', 'b'].slice(0, i % 3), n: i },
  }));
}

const FILTER = {
  and: [
    { column: 'stage', operator: 'eq', value: 'won' },
    { column: 'score', operator: 'gte', value: 500 },
  ],
};

/** The plain table's side: the same questions in hand-written SQL. */
interface Plain {
  exec(text: string, params: unknown[]): Promise<void>;
  rows<T>(text: string, params: unknown[]): Promise<T[]>;
}

/** The indexes crewd built for the table's filter shapes, ready for use. */
async function shapeIndexes(plain: Plain, tableId: string): Promise<string[]> {
  const rows = await plain.rows<{ name: string }>(
    `select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
     join pg_class t on t.oid = i.indrelid where t.relname = $1 and c.relname ~ '_a_[0-9a-f]+$' and i.indisvalid`,
    [tableId],
  );
  return rows.map((row) => row.name);
}

const PLAIN_DDL = [
  `create table plain (id text collate "C" primary key, title text, score double precision, active boolean,
     due timestamptz, stage text, meta jsonb)`,
  'create index plain_stage on plain (stage)',
  'create index plain_score on plain (score)',
];
const PLAIN_ROWS = `select id, title, score, active, due, stage, meta from plain
  where stage = $1 and score >= $2 order by score desc, id desc limit 50`;
const PLAIN_COUNT = 'select count(*) from plain where stage = $1 and score >= $2';

function plainInsert(rows: DataRow[]): [string, unknown[]] {
  const params: unknown[] = [];
  const tuples = rows.map((row) => {
    const base = params.length;
    params.push(row.id, row.title, row.score, row.active, row.due, row.stage, JSON.stringify(row.meta));
    return `($${base + 1}, $${base + 2}, $${base + 3}, $${base + 4}, $${base + 5}, $${base + 6}, $${base + 7})`;
  });
  return [`insert into plain (id, title, score, active, due, stage, meta) values ${tuples.join(', ')}`, params];
}

/** The question a query through the API answers: the first 50 rows and how many match in all. */
async function plainQuery(plain: Plain, withCount: boolean): Promise<void> {
  const params = ['won', 500];
  if (!withCount) return plain.exec(PLAIN_ROWS, params);
  await Promise.all([plain.exec(PLAIN_ROWS, params), plain.exec(PLAIN_COUNT, params)]);
}

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

async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await action();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Requests per second from `clients` loops running for `seconds`. */
async function throughput(action: () => Promise<unknown>, clients: number, seconds: number): Promise<number> {
  let done = 0;
  const started = Date.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < deadline) {
        await action();
        done += 1;
      }
    }),
  );
  return done / ((Date.now() - started) / 1000);
}

/**
 * Each side's `seconds` of load is taken in alternating slices, so a change in the machine's
 * other load during the run weighs on both sides alike; returns each side's requests per second.
 */
async function alternatingThroughput(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  seconds: number,
  slices: number,
): Promise<[number, number]> {
  const rates: [number[], number[]] = [[], []];
  for (let i = 0; i < slices; i++) {
    rates[0].push(await throughput(a, CLIENTS, seconds / slices));
    rates[1].push(await throughput(b, CLIENTS, seconds / slices));
  }
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  return [mean(rates[0]), mean(rates[1])];
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
