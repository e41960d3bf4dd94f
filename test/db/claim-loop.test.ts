import { type Kysely, sql } from 'kysely';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ClaimedJobs,
  type ClaimIntervals,
  type ClaimLoop,
  createClaimLoop,
  type Look,
  nextWait,
} from '../../src/db/claim-loop.js';
import type { Database } from '../../src/db/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { until } from '../helpers/poll.js';

/** Only a wake, a due time or the end of a job brings a look: no test waits on the idle interval. */
const WAKE_ONLY: ClaimIntervals = { idleMs: null, busyMs: 5, backoffMs: 1, maxBackoffMs: 4 };

interface LogLine {
  level: number;
  msg: string;
}

function captureLogs() {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

/** A deferred job: it ends when the test says so. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('the claim loop', () => {
  let database: TestDatabase;
  const loops: ClaimLoop[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(loops.splice(0).map((loop) => loop.stop()));
    await sql`drop table if exists claim_test`.execute(database.handle.db);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  const db = () => database.handle.db;

  const createTable = (into: Kysely<Database> = db()) =>
    sql`create table claim_test (
      id int primary key,
      due_at timestamptz not null default now(),
      leased_by text,
      leased_until timestamptz
    )`.execute(into);

  const insert = (ids: number[], dueInMs = 0, into: Kysely<Database> = db()) =>
    sql`insert into claim_test (id, due_at)
        select id, now() + ${dueInMs} * interval '1 millisecond' from unnest(${ids}::int[]) as id`.execute(into);

  /** A claim as the users make theirs: due, not leased (or the lease lapsed), SKIP LOCKED, leased for a minute. */
  async function claim(claimer: string, limit: number): Promise<number[]> {
    const { rows } = await sql<{ id: number }>`
      update claim_test set leased_by = ${claimer}, leased_until = now() + interval '1 minute'
      where id in (
        select id from claim_test
        where due_at <= now() and (leased_until is null or leased_until < now())
        order by id limit ${limit} for update skip locked
      )
      returning id`.execute(db());
    return rows.map((row) => row.id).sort((a, b) => a - b);
  }

  async function earliestDue(): Promise<number | null> {
    const { rows } = await sql<{ due_at: Date | null }>`
      select min(due_at) as due_at from claim_test where leased_until is null or leased_until < now()`.execute(db());
    return rows[0]?.due_at ? new Date(rows[0].due_at).getTime() : null;
  }

  /** A loop over claim_test with `concurrency` jobs at once; `work` is each claimed id's job. */
  function startLoop(options: {
    claimer: string;
    concurrency: number;
    work: (id: number) => Promise<void>;
    intervals?: ClaimIntervals;
    logger?: pino.Logger;
    looks?: { count: number };
  }) {
    const jobs = new ClaimedJobs(options.concurrency, () => loop.wake());
    const loop = createClaimLoop({
      name: `claims of ${options.claimer}`,
      logger: options.logger ?? pino({ level: 'silent' }),
      intervals: options.intervals ?? WAKE_ONLY,
      async look(): Promise<Look> {
        if (options.looks) options.looks.count++;
        const room = jobs.room;
        if (room <= 0) return { kind: 'full' };
        const ids = await claim(options.claimer, room);
        for (const id of ids) jobs.add(options.work(id));
        if (ids.length === room) return { kind: 'more' };
        return { kind: 'done', claimed: ids.length, dueAt: await earliestDue() };
      },
    });
    loops.push(loop);
    loop.start();
    return { loop, jobs };
  }

  it('claims what is due at once, what falls due at its time, and new work when woken', async () => {
    await createTable();
    await insert([1, 2, 3]);
    await insert([4], 300);
    const handled: number[] = [];
    const { loop } = startLoop({
      claimer: 'a',
      concurrency: 10,
      work: async (id) => void handled.push(id),
    });
    await until(() => handled.length === 3);
    expect(handled).toEqual([1, 2, 3]);
    // No idle interval: only the due time the last look found brings the next one.
    await until(() => handled.length === 4);
    expect(handled[3]).toBe(4);

    await insert([5]);
    loop.wake();
    await until(() => handled.length === 5);
    expect(handled).toEqual([1, 2, 3, 4, 5]);
  });

  it('shares work between loops: each item claimed once (SKIP LOCKED, leases)', async () => {
    await createTable();
    await insert(Array.from({ length: 60 }, (_, index) => index + 1));
    const handledBy = new Map<number, string[]>();
    const record = (claimer: string) => async (id: number) => {
      handledBy.set(id, [...(handledBy.get(id) ?? []), claimer]);
    };
    startLoop({ claimer: 'a', concurrency: 4, work: record('a') });
    startLoop({ claimer: 'b', concurrency: 4, work: record('b') });
    await until(() => handledBy.size === 60);
    expect([...handledBy.values()].every((claimers) => claimers.length === 1)).toBe(true);
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from claim_test where leased_by is null`.execute(db());
    expect(rows[0]?.n).toBe(0);
  });

  it('takes over work whose lease lapsed, and leaves work under a live lease alone', async () => {
    await createTable();
    await insert([1, 2]);
    await sql`update claim_test set leased_by = 'dead', leased_until = now() - interval '1 second' where id = 1`.execute(
      db(),
    );
    await sql`update claim_test set leased_by = 'alive', leased_until = now() + interval '1 hour' where id = 2`.execute(
      db(),
    );
    const handled: number[] = [];
    const looks = { count: 0 };
    startLoop({ claimer: 'a', concurrency: 10, work: async (id) => void handled.push(id), looks });
    await until(() => handled.length === 1);
    expect(handled).toEqual([1]);
    const { rows } = await sql<{ id: number; leased_by: string }>`
      select id, leased_by from claim_test order by id`.execute(db());
    expect(rows).toEqual([
      { id: 1, leased_by: 'a' },
      { id: 2, leased_by: 'alive' },
    ]);
  });

  it('holds no more than its concurrency, and the end of a job wakes the full loop', async () => {
    await createTable();
    await insert([1, 2, 3, 4, 5]);
    const gates = new Map<number, ReturnType<typeof gate>>();
    let most = 0;
    const { jobs } = startLoop({
      claimer: 'a',
      concurrency: 2,
      work: (id) => {
        const job = gate();
        gates.set(id, job);
        most = Math.max(most, jobs.size + 1);
        return job.opened;
      },
    });
    await until(() => gates.size === 2);
    expect([...gates.keys()]).toEqual([1, 2]);
    // Nothing but the end of job 1 can bring the next look (no idle interval).
    gates.get(1)?.open();
    await until(() => gates.size === 3);
    expect(gates.has(3)).toBe(true);
    for (const id of [2, 3]) gates.get(id)?.open();
    await until(() => gates.size === 5);
    for (const job of gates.values()) job.open();
    await until(() => jobs.size === 0);
    expect(most).toBe(2);
  });

  it('backs off while the database fails it, logs that once, and works again once it answers', async () => {
    const { logger, lines } = captureLogs();
    const looks = { count: 0 };
    const handled: number[] = [];
    // The table is missing: every look fails in the database, as it does through an outage.
    startLoop({ claimer: 'a', concurrency: 10, work: async (id) => void handled.push(id), logger, looks });
    await until(() => looks.count >= 6);
    // Made with its row in one transaction: the first look that works finds the row (nothing else wakes the loop).
    await db()
      .transaction()
      .execute(async (trx) => {
        await createTable(trx);
        await insert([1], 0, trx);
      });
    // The look that claims it logs, once it has ended, that looks work again.
    const working = () => lines.filter((line) => line.msg === 'claims of a: working again');
    await until(() => handled.length === 1 && working().length > 0);

    const failed = lines.filter((line) => line.msg.startsWith('claims of a: a look failed'));
    expect(failed.length).toBeGreaterThanOrEqual(5);
    expect(failed.filter((line) => line.level >= 50)).toHaveLength(1);
    expect(failed.filter((line) => line.level < 50).length).toBe(failed.length - 1);
    expect(working()).toHaveLength(1);
  });

  it('looks no more once stopped', async () => {
    await createTable();
    const looks = { count: 0 };
    const { loop } = startLoop({ claimer: 'a', concurrency: 1, work: async () => {}, looks });
    await until(() => looks.count === 1);
    await loop.stop();
    const before = looks.count;
    loop.wake();
    loop.wakeBy(Date.now());
    expect(loop.running).toBe(false);
    expect(looks.count).toBe(before);
  });
});

describe('when the claim loop looks next', () => {
  const intervals: ClaimIntervals = { idleMs: 1000, busyMs: 10, backoffMs: 100, maxBackoffMs: 1000 };
  const now = 1_000_000;

  it('at once after a full batch, after the idle interval when full or when nothing is known to be due', () => {
    expect(nextWait({ kind: 'more' }, intervals, now)).toBe(0);
    expect(nextWait({ kind: 'full' }, intervals, now)).toBe(1000);
    expect(nextWait({ kind: 'done', claimed: 2, dueAt: null }, intervals, now)).toBe(1000);
    expect(nextWait({ kind: 'done', claimed: 0, dueAt: null }, { ...intervals, idleMs: null }, now)).toBeNull();
  });

  it('at the due time (at most the idle interval away), or after the busy interval when due work was locked', () => {
    expect(nextWait({ kind: 'done', claimed: 0, dueAt: now + 300 }, intervals, now)).toBe(300);
    expect(nextWait({ kind: 'done', claimed: 0, dueAt: now + 5000 }, intervals, now)).toBe(1000);
    expect(nextWait({ kind: 'done', claimed: 0, dueAt: now + 5000 }, { ...intervals, idleMs: null }, now)).toBe(5000);
    expect(nextWait({ kind: 'done', claimed: 0, dueAt: now }, intervals, now)).toBe(10);
    expect(nextWait({ kind: 'done', claimed: 3, dueAt: now - 5 }, intervals, now)).toBe(0);
  });
});
