import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Backend } from '../db/connect.js';
import type { Database } from '../db/types.js';
import { safeIdentifier } from './columns.js';
import type { IndexPlan } from './filter-shape.js';
import { DATA_SCHEMA, tableRef } from './physical.js';

/** A filter shape seen this many times on one table gets its index. */
export const REPEATS_BEFORE_INDEX = 3;
/** Indexes built for filter shapes, at most, per table: each one costs every insert a little. */
export const MAX_SHAPE_INDEXES = 4;
/** An index no query has used for this long is dropped. */
export const UNUSED_INDEX_DROP_MS = 7 * 24 * 3600 * 1000;
const SWEEP_EVERY_MS = 3600 * 1000;
/** A shape settled (indexed, or refused at the bound) is looked at again after this long. */
const SETTLED_FOR_MS = 10 * 60 * 1000;
const MAX_TRACKED_SHAPES = 10_000;
/** Names of shape indexes: `<table id>_a_<10 hex>`. */
const SHAPE_INDEX_NAME = '^tbl_[a-z0-9]+_a_[0-9a-f]{10}$';

export interface IndexAdvisorOptions {
  backend: Backend;
  /** Tables with fewer rows (as of the cached definition) get no shape indexes. */
  minRows: number;
  logger: Logger;
}

interface Build {
  tableId: string;
  plan: IndexPlan;
  key: string;
}

/**
 * Builds, in the background and one at a time, the index a repeated filter shape wants (see
 * filter-shape.ts), and drops shape indexes no query has used for a week. On PostgreSQL an index
 * is built CONCURRENTLY on its own connection, so requests and writes never wait for it, under a
 * per-table advisory lock, so several instances never build for one table at once; what exists is
 * read from the catalog, never remembered. The embedded database has one connection: there the
 * build runs between statements.
 */
export function createIndexAdvisor(db: Kysely<Database>, options: IndexAdvisorOptions) {
  const postgres = options.backend === 'postgres';
  const concurrently = sql.raw(postgres ? 'concurrently' : '');
  const uses = new Map<string, number>();
  const settled = new Map<string, number>();
  const queue: Build[] = [];
  let working: Promise<void> | undefined;
  let closed = false;

  function track(key: string): number {
    const count = (uses.get(key) ?? 0) + 1;
    if (!uses.has(key) && uses.size >= MAX_TRACKED_SHAPES) uses.clear();
    uses.set(key, count);
    return count;
  }

  function note(table: { id: string; row_count: number }, plan: IndexPlan | undefined): void {
    if (!plan || closed || table.row_count < options.minRows) return;
    const key = `${table.id}/${plan.suffix}`;
    const until = settled.get(key);
    if (until !== undefined && until > Date.now()) return;
    if (track(key) !== REPEATS_BEFORE_INDEX) return;
    queue.push({ tableId: table.id, plan, key });
    working ??= drain().finally(() => {
      working = undefined;
    });
  }

  async function drain(): Promise<void> {
    for (let build = queue.shift(); build && !closed; build = queue.shift()) {
      try {
        const outcome = await buildIndex(build);
        if (outcome === 'busy') uses.delete(build.key);
        else settled.set(build.key, Date.now() + SETTLED_FOR_MS);
      } catch (error) {
        // Not retried at once: a build that fails may well fail again.
        settled.set(build.key, Date.now() + SETTLED_FOR_MS);
        if (closed) return;
        options.logger.warn({ err: error, table: build.tableId }, 'building an index for a filter failed');
      }
    }
  }

  function indexName(build: Build): string {
    return safeIdentifier(`${build.tableId}_${build.plan.suffix}`);
  }

  /** The server process of the build under way, so closing can cancel a build that waits or runs long. */
  let buildBackend: number | undefined;

  async function buildIndex(build: Build): Promise<'built' | 'exists' | 'bounded' | 'busy'> {
    return db.connection().execute(async (conn) => {
      if (postgres) {
        const lock = await sql<{ ok: boolean }>`
          select pg_try_advisory_lock(hashtext('crewd.table-index'), hashtext(${build.tableId})) as ok`.execute(conn);
        if (!lock.rows[0]?.ok) return 'busy';
      }
      try {
        return await buildLocked(conn, build);
      } finally {
        if (postgres) {
          await sql`select pg_advisory_unlock(hashtext('crewd.table-index'), hashtext(${build.tableId}))`.execute(conn);
        }
      }
    });
  }

  async function buildLocked(conn: Kysely<Database>, build: Build): Promise<'built' | 'exists' | 'bounded'> {
    const name = indexName(build);
    const existing = await sql<{ name: string; valid: boolean }>`
      select c.relname as name, i.indisvalid as valid
      from pg_index i join pg_class c on c.oid = i.indexrelid join pg_class t on t.oid = i.indrelid
      join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = ${DATA_SCHEMA} and t.relname = ${build.tableId} and c.relname ~ ${SHAPE_INDEX_NAME}`.execute(
      conn,
    );
    const same = existing.rows.find((row) => row.name === name);
    if (same?.valid) return 'exists';
    // A build interrupted (crash, cancel) leaves an invalid index behind: it is rebuilt.
    if (same) await dropIndex(conn, name);
    else if (existing.rows.length >= MAX_SHAPE_INDEXES) return 'bounded';
    const column = (ident: string) => sql.id(safeIdentifier(ident));
    const include = build.plan.include.length > 0 ? sql`include (${sql.join(build.plan.include.map(column))})` : sql``;
    if (postgres) {
      const backend = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn);
      buildBackend = backend.rows[0]?.pid;
    }
    try {
      await sql`create index ${concurrently} if not exists ${sql.id(name)} on ${tableRef(build.tableId)}
        (${sql.join(build.plan.key.map(column))}) ${include}`.execute(conn);
    } finally {
      buildBackend = undefined;
    }
    // The embedded database has no autovacuum: without statistics the planner would not pick the
    // index, and without a visibility map a count would still read the table.
    if (!postgres) await sql`vacuum (analyze) ${tableRef(build.tableId)}`.execute(conn);
    options.logger.info({ table: build.tableId, index: name }, 'built an index for a repeated filter');
    return 'built';
  }

  async function dropIndex(conn: Kysely<Database>, name: string): Promise<void> {
    await sql`drop index ${concurrently} if exists ${sql.table(`${DATA_SCHEMA}.${safeIdentifier(name)}`)}`.execute(
      conn,
    );
  }

  /** Scans seen per shape index (server-wide, so any instance's queries count) and since when. */
  const scansSeen = new Map<string, { scans: number; since: number }>();

  async function sweep(now = Date.now()): Promise<void> {
    const stats = await sql<{ name: string; scans: number }>`
      select indexrelname as name, idx_scan::int8 as scans from pg_stat_user_indexes
      where schemaname = ${DATA_SCHEMA} and indexrelname ~ ${SHAPE_INDEX_NAME}`.execute(db);
    const present = new Set<string>();
    for (const { name, scans } of stats.rows) {
      present.add(name);
      const seen = scansSeen.get(name);
      if (!seen || seen.scans !== Number(scans)) {
        scansSeen.set(name, { scans: Number(scans), since: now });
      } else if (now - seen.since >= UNUSED_INDEX_DROP_MS && !closed) {
        await db.connection().execute((conn) => dropIndex(conn, name));
        scansSeen.delete(name);
        options.logger.info({ index: name }, 'dropped an index no query used for a week');
      }
    }
    for (const name of scansSeen.keys()) if (!present.has(name)) scansSeen.delete(name);
  }

  const timer = setInterval(() => {
    sweep().catch((error) => options.logger.warn({ err: error }, 'sweeping unused filter indexes failed'));
  }, SWEEP_EVERY_MS);
  timer.unref();

  return {
    note,
    sweep,
    /** Resolves once every build asked for so far is done. */
    async idle(): Promise<void> {
      while (working) await working;
    },
    /**
     * Nothing new starts; a build under way is cancelled (the invalid index it leaves is dropped and
     * rebuilt by a later attempt) and waited for.
     */
    async close(): Promise<void> {
      closed = true;
      clearInterval(timer);
      if (buildBackend !== undefined) await sql`select pg_cancel_backend(${buildBackend})`.execute(db);
      await working;
    },
  };
}

export type IndexAdvisor = ReturnType<typeof createIndexAdvisor>;
