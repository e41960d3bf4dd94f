import { type RawBuilder, sql } from 'kysely';

/**
 * Where a run's stream request rides in its input (what the client asked of the LangGraph API, kept with the run),
 * for the runner (runners/python/crewd_runner/stream_modes.py); a state update's run has its `update_state` there.
 */
export const STREAM_REQUEST_KEY = '__langgraph__';

/**
 * Whether the run `runId` names was made for `POST /threads/{id}/state` (state-update.ts), as SQL: crewd's own run
 * applying the graph's update_state, which no user started. The official server makes no run for it, so the run
 * lists of the LangGraph API leave it out (runs-service.ts isStateUpdate) and no webhook announces its end.
 */
export function isStateUpdateRun(runId: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`exists (select 1 from runs as su where su.id = ${runId}
    and jsonb_typeof(su.input -> ${STREAM_REQUEST_KEY} -> 'update_state') = 'object')`;
}
