import type { ColumnType } from 'kysely';
import type { Environment } from '../columns.js';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json<T> = ColumnType<T, string, string>;

export type MultitaskStrategy = 'reject' | 'enqueue' | 'interrupt' | 'rollback';

export interface CronsTable {
  id: string;
  org_id: string;
  deployment_id: string;
  schedule: string;
  timezone: string;
  input: Json<Record<string, unknown>>;
  environment: Environment;
  thread_id: string | null;
  multitask_strategy: MultitaskStrategy;
  enabled: boolean;
  next_run_at: NullableTimestamp;
  claimed_until: NullableTimestamp;
  last_run_at: NullableTimestamp;
  last_run_id: string | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}
