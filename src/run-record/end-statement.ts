import { sql } from 'kysely';
import type { RunUsage } from '../db/schema/run-usage.js';
import type { Db } from '../db/types.js';
import { type EventRow, eventTuple, eventValues } from './repository.js';
import type { JoinedEnd, RunStatus } from './types.js';

/**
 * What a run's end reads back: what its hooks (their joined parts read the CTE `ended` too) and metrics need, not its
 * input and output (large JSON, parsed for nothing).
 */
const endedColumns = [
  'id',
  'org_id',
  'deployment_id',
  'environment',
  'thread_id',
  'status',
  'error_message',
  'instance_id',
  'created_at',
  'started_at',
  'completed_at',
  'usage',
] as const;

/**
 * Ends a run still in one of `from` and stores its final event, with any of its events not yet
 * stored, in one statement; undefined when the run had ended already. `seq` 'next' numbers the
 * final event after the run's last stored one, as the statement's snapshot sees them: its caller
 * has locked the run's row first (end-recorder.ts `lockRun`), so no batch of the owner's log commits
 * after that snapshot. `event_seq` is the final event's number as stored.
 * The hooks' `joined` parts are written by the same statement; `joined` holds their results, in order.
 */
export async function endRunWithEvent(
  db: Db,
  id: string,
  from: readonly RunStatus[],
  end: {
    status: RunStatus;
    output: Record<string, unknown> | null;
    error_message: string | null;
    /** The run's final usage; undefined leaves the stored one as it is. */
    usage?: RunUsage | null | undefined;
  },
  event: { seq: number | 'next'; type: string; data: Record<string, unknown> },
  unstored: readonly EventRow[] = [],
  joined: ReadonlyArray<Pick<JoinedEnd, 'ctes' | 'result'>> = [],
) {
  const seq =
    event.seq === 'next' ? sql`(select coalesce(max(seq), 0) + 1 from run_events where run_id = ${id})` : event.seq;
  const events = eventValues([
    ...unstored.map((row) => eventTuple(row.seq, row.type, row.data)),
    eventTuple(seq, event.type, JSON.stringify(event.data)),
  ]);
  let query = db
    .with('ended', (qb) =>
      qb
        .updateTable('runs')
        .set({
          status: end.status,
          output: end.output === null ? null : JSON.stringify(end.output),
          error_message: end.error_message,
          completed_at: sql<Date>`now()`,
          ...(end.usage === undefined ? {} : { usage: end.usage === null ? null : JSON.stringify(end.usage) }),
        })
        .where('id', '=', id)
        .where('status', 'in', [...from])
        .returning(endedColumns),
    )
    .with('stored', (qb) =>
      qb
        .insertInto('run_events')
        .columns(['run_id', 'seq', 'type', 'data'])
        .expression((eb) => eb.selectFrom(['ended', events]).select(['ended.id', 'v.seq', 'v.type', 'v.data']))
        .onConflict((oc) => oc.columns(['run_id', 'seq']).doNothing())
        .returning('seq'),
    );
  for (const [name, cte] of joined.flatMap((part) => part.ctes)) {
    query = query.with(name, () => sql<Record<string, unknown>>`(${cte})`) as unknown as typeof query;
  }
  const row = await query
    .selectFrom('ended')
    .selectAll('ended')
    .select((eb) =>
      eb
        .selectFrom('stored')
        .select((inner) => inner.fn.max('stored.seq').as('seq'))
        .as('event_seq'),
    )
    .select(joined.map((part, i) => part.result.as(`joined_${i}`)))
    .executeTakeFirst();
  if (!row) return undefined;
  const results = row as unknown as Record<string, unknown>;
  return { ...row, joined: joined.map((_, i) => results[`joined_${i}`]) };
}
