import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgListener, type PgListener } from '../../src/db/pg-listener.js';
import { createLocalEventBus, type LocalEventBus } from '../../src/events/bus.js';
import { composeFeeds } from '../../src/events/composite-feed.js';
import { createPgEventFeed, type PgEventFeed, RUN_EVENTS_CHANNEL } from '../../src/events/pg-feed.js';
import type { LiveEvent, RunEnd } from '../../src/events/types.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { until } from '../helpers/poll.js';
import { explainPostgresOnly } from '../scale/helpers.js';

explainPostgresOnly(
  'run events between instances',
  'with the embedded database there is one process, and no remote feed',
);

const logger = pino({ level: 'silent' });
const small = (seq: number, extra = ''): LiveEvent => ({
  seq,
  json: JSON.stringify({ type: 'log', data: { seq, extra } }),
});

/** One instance's feed on the shared database, with its own LISTEN connection, named so a test can cut it. */
interface Instance {
  feed: PgEventFeed;
  listener: PgListener;
  name: string;
}

describe.runIf(usingPostgres())("the PostgreSQL feed of other instances' run events", () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;
  let peersAlive = true;

  function instance(name: string): Instance {
    // The feed is made after the listener that hands it notifications, as in compose.ts.
    let feed: PgEventFeed | null = null;
    const listener = createPgListener({
      connection: { connectionString: database.url, application_name: name },
      logger,
      reconnectMs: { min: 50, max: 100 },
      channels: { [RUN_EVENTS_CHANNEL]: (payload) => feed?.heard(payload) },
      onConnectionChange: (connected) => feed?.connectionChanged(connected),
    });
    feed = createPgEventFeed({
      listener,
      db: database.handle.db,
      instanceId: () => name,
      peersAlive: () => peersAlive,
      logger,
    });
    return { feed, listener, name };
  }

  /** What a subscriber of `runId` on `at` hears, and whether it was told the feed was lost. */
  function follow(at: Instance, runId: string) {
    const heard: LiveEvent[] = [];
    let lost = false;
    const subscription = at.feed.subscribe(
      runId,
      (event) => heard.push(event),
      () => {
        lost = true;
      },
    );
    return {
      heard,
      subscription,
      lost: () => lost,
      seqs: () => heard.map((event) => event.seq),
      upTo: (seq: number) => until(() => heard.some((event) => event.seq === seq)),
    };
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    a = instance('crewd_feed_a');
    b = instance('crewd_feed_b');
    await Promise.all([a.listener.start(), b.listener.start()]);
    a.feed.start();
    b.feed.start();
    expect([a.feed.connected, b.feed.connected]).toEqual([true, true]);
  });

  afterAll(async () => {
    await Promise.all([a?.feed.stop(), b?.feed.stop()]);
    await Promise.all([a?.listener.stop(), b?.listener.stop()]);
    await database?.destroy();
  });

  it("hands the owner's announced events to the other instance's subscribers in order, and not back to the owner", async () => {
    const there = follow(b, 'run_1');
    const here = follow(a, 'run_1');
    a.feed.announce('run_1', [small(1), small(2)]);
    a.feed.announce('run_1', [small(3)]);
    await there.upTo(3);
    expect(there.seqs()).toEqual([1, 2, 3]);
    expect(there.heard[0]).toEqual({ ...small(1), remote: true });
    // B announces after A: once A hears it, its own three would have come back before.
    const marker = follow(a, 'run_marker');
    b.feed.announce('run_marker', [small(1)]);
    await marker.upTo(1);
    expect(here.heard).toEqual([]);
    here.subscription?.close();
    there.subscription?.close();
  });

  it('sends a big event as its number only and a too-big end without its output, split over payloads under 8000 bytes', async () => {
    const there = follow(b, 'run_2');
    const big = small(1, 'x'.repeat(3000));
    const many = Array.from({ length: 12 }, (_, i) => small(i + 2, 'y'.repeat(1500)));
    const end: RunEnd = { status: 'succeeded', output: { text: 'z'.repeat(9000) }, error: null };
    a.feed.announce('run_2', [big, ...many, { seq: 14, json: '{"type":"run.completed"}', end }]);
    await there.upTo(14);
    expect(there.seqs()).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    expect(there.heard[0]).toEqual({ seq: 1, json: '', remote: true });
    expect(there.heard[5]).toEqual({ ...small(6, 'y'.repeat(1500)), remote: true });
    expect(there.heard[13]).toEqual({
      seq: 14,
      json: '',
      remote: true,
      end: { status: 'succeeded', output: null, error: null },
    });
    // A small end travels whole.
    const ended = follow(b, 'run_3');
    const failed: RunEnd = { status: 'failed', output: null, error: 'it broke' };
    a.feed.announce('run_3', [{ seq: 1, json: '{"type":"run.failed"}', end: failed }]);
    await ended.upTo(1);
    expect(ended.heard).toEqual([{ seq: 1, json: '{"type":"run.failed"}', remote: true, end: failed }]);
  });

  it('announces nothing while no other instance is alive, and ignores what it cannot read', async () => {
    const there = follow(b, 'run_4');
    peersAlive = false;
    a.feed.announce('run_4', [small(1)]);
    peersAlive = true;
    await sql`select pg_notify(${RUN_EVENTS_CHANNEL}, ${'not json'})`.execute(database.handle.db);
    a.feed.announce('run_4', [small(2)]);
    await there.upTo(2);
    expect(there.seqs()).toEqual([2]);
  });

  it('tells subscribers when its connection drops, refuses new ones until it is back, then hears again', async () => {
    const there = follow(b, 'run_5');
    await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${b.name}`.execute(
      database.handle.db,
    );
    await until(() => there.lost());
    expect(b.feed.connected).toBe(false);
    expect(
      b.feed.subscribe(
        'run_5',
        () => {},
        () => {},
      ),
    ).toBeNull();

    await until(() => b.feed.connected);
    const again = follow(b, 'run_5');
    a.feed.announce('run_5', [small(7)]);
    await again.upTo(7);
    expect(there.heard).toEqual([]);
  });

  describe('beside the local bus', () => {
    let composite: LocalEventBus;
    let local: LocalEventBus;

    beforeAll(() => {
      local = createLocalEventBus();
      composite = composeFeeds(local, a.feed);
    });

    it('announces stored events and a published end, not events only published', async () => {
      const there = follow(b, 'run_6');
      const end: RunEnd = { status: 'canceled', output: null, error: null };
      composite.publish('run_6', small(1));
      composite.stored?.('run_6', [small(1), small(2)]);
      composite.publish('run_6', { seq: 3, json: '{"type":"run.canceled"}', end });
      await there.upTo(3);
      expect(there.seqs()).toEqual([1, 2, 3]);
      expect(there.heard[2]?.end).toEqual(end);
    });

    it('hands a subscriber the events of a run here and of a run elsewhere, until it closes', async () => {
      const heard: number[] = [];
      const subscription = composite.subscribe('run_7', (event) => heard.push(event.seq));
      expect(subscription?.remote).toBe(true);
      expect(subscription?.live).toBeNull();
      local.publish('run_7', small(1));
      b.feed.announce('run_7', [small(2)]);
      await until(() => heard.length === 2);
      expect(heard).toEqual([1, 2]);

      subscription?.close();
      expect(local.listenerCount('run_7')).toBe(0);
      local.publish('run_7', small(3));
      const marker = follow(a, 'run_7_marker');
      b.feed.announce('run_7', [small(4)]);
      b.feed.announce('run_7_marker', [small(1)]);
      await marker.upTo(1);
      expect(heard).toEqual([1, 2]);
    });
  });
});
