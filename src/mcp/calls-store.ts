import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'kysely';
import type { Db } from '../db/types.js';

/** Whose call it is: the organization, the API key and the client's Mcp-Session-Id ('' without one). */
export interface McpCaller {
  orgId: string;
  keyId: string;
  sessionId: string;
}

/** A request id with its type: `3` and `"3"` are different ids. */
export const requestKey = (requestId: RequestId) => `${typeof requestId}:${requestId}`;

/** A cancellation kept before its call's run existed counts for that long; older ones are of calls long gone. */
const PENDING_CANCEL = sql`interval '5 minutes'`;

const row = (caller: McpCaller, requestId: RequestId) => ({
  org_id: caller.orgId,
  key_id: caller.keyId,
  session_id: caller.sessionId,
  request_id: requestKey(requestId),
});

const PK = ['org_id', 'key_id', 'session_id', 'request_id'] as const;

/**
 * A call's run exists: recorded under its caller and request id, so that a cancellation reaching any instance finds
 * it. True when a cancellation of the call came first (it waited here for the run).
 */
export async function recordCallRun(db: Db, caller: McpCaller, requestId: RequestId, runId: string) {
  const recorded = await db
    .insertInto('mcp_calls')
    .values({ ...row(caller, requestId), run_id: runId })
    .onConflict((conflict) =>
      conflict.columns(PK).doUpdateSet({
        run_id: runId,
        // Only a cancellation waiting for this call counts, not one of an earlier call that had the same id.
        canceled_at: sql`case when mcp_calls.run_id is null and mcp_calls.canceled_at > now() - ${PENDING_CANCEL}
          then mcp_calls.canceled_at end`,
      }),
    )
    .returning('canceled_at')
    .executeTakeFirstOrThrow();
  return recorded.canceled_at !== null;
}

/** The call is answered: its row goes. */
export async function forgetCall(db: Db, caller: McpCaller, requestId: RequestId): Promise<void> {
  const { org_id, key_id, session_id, request_id } = row(caller, requestId);
  await db
    .deleteFrom('mcp_calls')
    .where('org_id', '=', org_id)
    .where('key_id', '=', key_id)
    .where('session_id', '=', session_id)
    .where('request_id', '=', request_id)
    .execute();
}

/**
 * notifications/cancelled for a call of this caller: the run it started, if it has one yet; if not, the
 * cancellation is kept for the call to find when its run starts. Only the caller's own calls are found: another
 * key, or another organization, naming the same session and request id finds nothing.
 */
export async function cancelCall(db: Db, caller: McpCaller, requestId: RequestId): Promise<string | null> {
  const found = await db
    .insertInto('mcp_calls')
    .values({ ...row(caller, requestId), canceled_at: sql<Date>`now()` })
    .onConflict((conflict) => conflict.columns(PK).doUpdateSet({ canceled_at: sql<Date>`now()` }))
    .returning('run_id')
    .executeTakeFirstOrThrow();
  // Cancellations of calls that never came (or had ended) once they no longer count, and calls that an instance
  // stopped while answering (a call waits MCP_CALL_WAIT_SECONDS at most).
  await db
    .deleteFrom('mcp_calls')
    .where('org_id', '=', caller.orgId)
    .where((eb) =>
      eb.or([
        eb.and([eb('run_id', 'is', null), eb('canceled_at', '<', sql<Date>`now() - ${PENDING_CANCEL}`)]),
        eb('created_at', '<', sql<Date>`now() - interval '1 hour'`),
      ]),
    )
    .execute();
  return found.run_id;
}
