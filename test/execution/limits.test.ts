import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, startRun, waitForRun } from '../runs/helpers.js';

describe('output and event limits', () => {
  let ctx: RunContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    deploymentId = (await deploy(ctx, crew('large-output.mjs'))).deploymentId;
  });
  afterAll(() => ctx.close());

  const storedEvents = (runId: string) =>
    ctx.database.handle.db
      .selectFrom('run_events')
      .select(['seq', 'type', 'data'])
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();

  it('turns a line over 1 MiB into a log event saying so, and carries on', async () => {
    const { run_id } = await startRun(ctx, deploymentId, { mode: 'long_line' });
    const run = await waitForRun(ctx, run_id);
    expect(run).toMatchObject({ status: 'succeeded', output: { after: 'long line' } });
    const notice = (await storedEvents(run_id)).find((event) => event.type === 'log');
    expect(notice?.data).toEqual({
      message: 'Line truncated: 2097152 bytes exceed the limit of 1048576 bytes per line',
      truncated: true,
      bytes: 2097152,
      head: 'x'.repeat(1024),
    });
  });

  it('keeps 10,000 events of a run and fails it at the next one, naming RUN_MAX_EVENTS', async () => {
    const { run_id } = await startRun(ctx, deploymentId, { mode: 'many_events', count: 10_050 });
    const run = await waitForRun(ctx, run_id, undefined, 60_000);
    expect(run).toMatchObject({
      status: 'failed',
      error_message: 'the run wrote more than RUN_MAX_EVENTS=10000 events',
    });
    const events = await storedEvents(run_id);
    expect(events).toHaveLength(1 + 10_000 + 1);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    expect(events[10_000]?.data).toMatchObject({ message: 'event 10000' });
    expect(events.at(-1)?.type).toBe('run.failed');
  }, 90_000);

  it('fails a run whose result is over 1 MiB', async () => {
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, { mode: 'big_result' })).run_id);
    expect(run).toMatchObject({ status: 'failed', error_message: 'Runner output exceeds the limit of 1 MiB' });
  });

  it('stores events and output holding U+0000 or half a surrogate pair, which PostgreSQL cannot keep, as U+FFFD', async () => {
    const { run_id } = await startRun(ctx, deploymentId, { mode: 'nul' });
    const run = await waitForRun(ctx, run_id);
    expect(run).toMatchObject({ status: 'succeeded', output: { text: 'c\uFFFDd', half: '\uFFFD' } });
    const logs = (await storedEvents(run_id)).filter((event) => event.type === 'log').map((event) => event.data);
    expect(logs).toEqual(
      expect.arrayContaining([
        {
          message: 'a\uFFFDb',
          'k\uFFFD': ['\uFFFD'],
          literal: '\\u0000',
          half: '\uFFFDx\uFFFD',
          pair: '\u{1F600}',
        },
        { message: 'raw\uFFFDline' },
        { message: 'err\uFFFDline', stream: 'stderr' },
      ]),
    );
    expect(logs).toHaveLength(3);
  });

  it('stores events nested up to 64 levels, and turns deeper ones into a notice and a failed run', async () => {
    // The result line `{"type", "data": {"output": {"tree": [...]}}}` nests 3 levels around the tree: 64 in all.
    const fits = await waitForRun(ctx, (await startRun(ctx, deploymentId, { mode: 'deep', depth: 61 })).run_id);
    expect(fits.status).toBe('succeeded');
    const tooDeep = await waitForRun(ctx, (await startRun(ctx, deploymentId, { mode: 'deep', depth: 62 })).run_id);
    expect(tooDeep.error_message).toBe('Runner result is nested deeper than 64 levels');
    const { run_id } = await startRun(ctx, deploymentId, { mode: 'deep', depth: 200_000 });
    const run = await waitForRun(ctx, run_id);
    expect(run).toMatchObject({ status: 'failed', error_message: 'Runner result is nested deeper than 64 levels' });
    const events = (await storedEvents(run_id)).map((event) => [event.type, event.data]);
    expect(events.slice(1)).toEqual([
      ['log', { message: 'Event dropped: nested deeper than 64 levels', type: 'step' }],
      ['after', { ok: true }],
      ['run.failed', { status: 'failed', error: 'Runner result is nested deeper than 64 levels' }],
    ]);
  });

  it('fails, rather than leave running, a run whose end the database refuses as data', async () => {
    const db = ctx.database.handle.db;
    await sql`
      create function refuse_event() returns trigger language plpgsql as $$
      begin
        if new.type = 'refused.by.the.database' then
          raise exception 'this event is refused' using errcode = '22023';
        end if;
        return new;
      end $$`.execute(db);
    await sql`create trigger refuse_event before insert on run_events for each row execute function refuse_event()`.execute(
      db,
    );
    try {
      const { run_id } = await startRun(ctx, deploymentId, { mode: 'refused' });
      const run = await waitForRun(ctx, run_id);
      expect(run).toMatchObject({
        status: 'failed',
        error_message: 'Run output could not be stored: this event is refused',
      });
      expect((await storedEvents(run_id)).map((event) => event.type)).toEqual(['run.started', 'run.failed']);
    } finally {
      await sql`drop trigger refuse_event on run_events`.execute(db);
      await sql`drop function refuse_event()`.execute(db);
    }
  });

  it('fails a run whose output is not an object', async () => {
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, { mode: 'bad_output' })).run_id);
    expect(run).toMatchObject({ status: 'failed', error_message: 'Runner result output must be a JSON object' });
  });
});
