import type { ColumnType } from 'kysely';
import type { Json, NullableJson, ThreadInterrupt, Timestamp } from '../columns.js';

export type ThreadStatus = 'idle' | 'busy' | 'interrupted' | 'error';

export interface ThreadsTable {
  id: string;
  org_id: string;
  /** Null for a thread made through the LangGraph API until its first run binds it (CONTRACTS §14). */
  deployment_id: string | null;
  status: ThreadStatus;
  metadata: Json<Record<string, unknown>>;
  values: NullableJson<Record<string, unknown>>;
  active_run_id: string | null;
  /** What the last run stopped at (run.interrupted); `[]` otherwise. */
  interrupts: ColumnType<ThreadInterrupt[], string | undefined, string>;
  /** A run whose process may still be stopping; the thread's next run starts once it is gone. */
  stopping_run_id: string | null;
  stopping_instance_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ThreadCheckpointsTable {
  id: string;
  thread_id: string;
  run_id: string | null;
  values: NullableJson<Record<string, unknown>>;
  /** The runner's own checkpoint (opaque JSON), handed back to the thread's next run. */
  checkpoint: NullableJson<unknown>;
  created_at: Timestamp;
}
