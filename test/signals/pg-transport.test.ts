import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgListener, type PgListener } from '../../src/db/pg-listener.js';
import { createSignalHub, type Signals } from '../../src/signals/hub.js';
import { createPgSignalTransport, SIGNALS_CHANNEL } from '../../src/signals/pg-transport.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { explainPostgresOnly } from '../scale/helpers.js';

explainPostgresOnly('signals between instances', 'with the embedded database there is one process, and no transport');

/** One instance's hub on the shared database: what its subscribers heard, and a wait for what they will hear. */
interface Instance {
  hub: Signals;
  listener: PgListener;
  heard: string[];
  hear(entry: string): Promise<void>;
}

describe.runIf(usingPostgres())('signals between instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;

  function instance(instanceId: string): Instance {
    const logger = pino({ level: 'silent' });
    const transport = createPgSignalTransport({ db: database.handle.db, instanceId, logger });
    const listener = createPgListener({
      connection: { connectionString: database.url },
      logger,
      channels: { [SIGNALS_CHANNEL]: transport.heard },
    });
    const heard: string[] = [];
    const waiting = new Map<string, () => void>();
    const note = (entry: string) => {
      heard.push(entry);
      waiting.get(entry)?.();
    };
    const hub = createSignalHub({
      logger,
      transport,
      subscribers: {
        queued: [() => note('queued')],
        threadReleased: [({ threadId }) => note(`threadReleased ${threadId}`)],
        stopRequested: [({ runId }) => note(`stopRequested ${runId}`)],
        ended: [({ runId }) => note(`ended ${runId}`)],
        instanceStarted: [({ instanceId: id }) => note(`instanceStarted ${id}`)],
      },
    });
    const hear = (entry: string) =>
      heard.includes(entry) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(entry, resolve));
    return { hub, listener, heard, hear };
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    a = instance('ins_a');
    b = instance('ins_b');
    await Promise.all([a.listener.start(), b.listener.start()]);
    expect([a.listener.connected, b.listener.connected]).toEqual([true, true]);
  });

  afterAll(async () => {
    await Promise.all([a?.listener.stop(), b?.listener.stop()]);
    await database?.destroy();
  });

  it("hands one instance's shared signals to the other's subscribers, and to its own once", async () => {
    a.hub.emit('stopRequested', { runId: 'run_1' });
    a.hub.emit('threadReleased', { threadId: 'thr_1' });
    a.hub.emit('instanceStarted', { instanceId: 'ins_a' });
    // Each signal is sent on whichever pool connection is free, so they may arrive in any order.
    const sent = ['stopRequested run_1', 'threadReleased thr_1', 'instanceStarted ins_a'];
    await Promise.all(sent.map((entry) => b.hear(entry)));
    expect([...b.heard].sort()).toEqual([...sent].sort());
    // A hears B's signal, and its own three only once: from its own emit, never back from the channel.
    b.hub.emit('queued', {});
    await a.hear('queued');
    a.hub.emit('stopRequested', { runId: 'run_1b' });
    await b.hear('stopRequested run_1b');
    expect(a.heard).toEqual([...sent, 'queued', 'stopRequested run_1b']);
  });

  it('keeps `ended` in the instance that emitted it', async () => {
    a.hub.emit('ended', { runId: 'run_2' });
    a.hub.emit('stopRequested', { runId: 'run_3' });
    await b.hear('stopRequested run_3');
    expect(a.heard).toContain('ended run_2');
    expect(b.heard).not.toContain('ended run_2');
  });

  it('ignores what it cannot read on the channel: foreign text, unknown signals, missing fields', async () => {
    const before = b.heard.length;
    for (const payload of [
      'pending',
      JSON.stringify({ i: 'ins_c', n: 'shutdown', p: {} }),
      JSON.stringify({ i: 'ins_c', n: 'ended', p: { runId: 'run_4' } }),
      JSON.stringify({ i: 'ins_c', n: 'stopRequested', p: {} }),
      JSON.stringify({ i: 'ins_c', n: 'stopRequested', p: { runId: 5 } }),
      JSON.stringify({ i: 'ins_c', n: 'threadReleased', p: { threadId: null } }),
    ]) {
      await sql`select pg_notify(${SIGNALS_CHANNEL}, ${payload})`.execute(database.handle.db);
    }
    a.hub.emit('stopRequested', { runId: 'run_5' });
    await b.hear('stopRequested run_5');
    expect(b.heard.slice(before)).toEqual(['stopRequested run_5']);
  });
});
