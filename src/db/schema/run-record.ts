import type {
  Environment,
  Json,
  NullableJson,
  NullableTimestamp,
  RunCommand,
  RunStatus,
  Timestamp,
} from '../columns.js';
import type { RunUsage } from './run-usage.js';

export interface InstancesTable {
  id: string;
  /** Stable across restarts of the same installation, so a restart recognises its own lost runs. */
  name: string;
  started_at: Timestamp;
  heartbeat_at: Timestamp;
  expires_at: Timestamp;
  stopped_at: NullableTimestamp;
}

export interface RunsTable {
  id: string;
  org_id: string;
  deployment_id: string;
  version_id: string;
  environment: Environment;
  thread_id: string | null;
  /** The cron that started the run, if one did, and the due time it started it for. */
  cron_id: string | null;
  cron_due_at: NullableTimestamp;
  status: RunStatus;
  input: Json<Record<string, unknown>>;
  /** How the run resumes an interrupted thread (CONTRACTS §9); handed to the runner when it starts. */
  command: NullableJson<RunCommand>;
  output: NullableJson<Record<string, unknown>>;
  error_message: string | null;
  instance_id: string | null;
  created_at: Timestamp;
  started_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  /** The run's LLM calls summed by model, with their cost (src/telemetry/usage.ts); null before any. */
  usage: NullableJson<RunUsage>;
  /** The run's OpenTelemetry trace when tracing is on, and the caller's span it hangs under (traceparent). */
  trace_id: string | null;
  trace_parent_id: string | null;
}

export interface RunEventsTable {
  run_id: string;
  seq: number;
  type: string;
  data: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface IdempotencyKeysTable {
  org_id: string;
  scope: string;
  key: string;
  request_hash: string;
  response: NullableJson<Record<string, unknown>>;
  created_at: Timestamp;
}
