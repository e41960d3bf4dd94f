import type { Json, NullableJson, Timestamp } from '../db/columns.js';

export type ThreadStatus = 'idle' | 'busy' | 'interrupted' | 'error';

export interface ThreadsTable {
  id: string;
  org_id: string;
  deployment_id: string;
  status: ThreadStatus;
  metadata: Json<Record<string, unknown>>;
  values: NullableJson<Record<string, unknown>>;
  active_run_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ThreadCheckpointsTable {
  id: string;
  thread_id: string;
  run_id: string | null;
  values: NullableJson<Record<string, unknown>>;
  created_at: Timestamp;
}
