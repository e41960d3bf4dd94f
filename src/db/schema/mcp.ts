import type { CreatedAt, NullableTimestamp } from '../columns.js';

/** A tools/call being answered, findable by any instance (migration 0016, docs/mcp.md#calls). */
export interface McpCallsTable {
  org_id: string;
  key_id: string;
  /** The client's Mcp-Session-Id, or '' for a client that sends none. */
  session_id: string;
  /** The JSON-RPC request id with its type (`number:3`, `string:abc`): `3` and `"3"` are different ids. */
  request_id: string;
  /** Null while the call's run does not exist yet. */
  run_id: string | null;
  /** When a notifications/cancelled for the call arrived. */
  canceled_at: NullableTimestamp;
  created_at: CreatedAt;
}
