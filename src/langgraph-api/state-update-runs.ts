import { type RawBuilder, sql } from 'kysely';

/**
 * The key of a run's input under which the LangGraph API keeps what the client asked (runs-service.ts
 * STREAM_REQUEST_KEY; test/webhooks/state-update.test.ts holds them equal), where a state update's run has its
 * `update_state`.
 */
const REQUEST_KEY = '__langgraph__';

/**
 * Whether the run `runId` names was made for `POST /threads/{id}/state` (state-update.ts), as SQL: crewd's own run
 * applying the graph's update_state, which no user started. The official server makes no run for it, so the run
 * lists of the LangGraph API leave it out (runs-service.ts isStateUpdate) and no webhook announces its end.
 */
export function isStateUpdateRun(runId: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`exists (select 1 from runs as su where su.id = ${runId}
    and jsonb_typeof(su.input -> ${REQUEST_KEY} -> 'update_state') = 'object')`;
}
