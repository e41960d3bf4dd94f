import type { ColumnType } from 'kysely';

/** Column shapes shared by every table's types; this file imports nothing of the app, so no table type forms a circle. */
export type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
export type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** JSON stored as jsonb: written as text, read back parsed. */
export type Json<T> = ColumnType<T, string, string>;
export type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;

export type Role = 'admin' | 'member';
export type Environment = 'production' | 'staging';
export type RunStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'canceled';
export type TerminalRunStatus = 'succeeded' | 'failed' | 'canceled';

/** One interrupt a runner stopped at (CONTRACTS §9). */
export interface ThreadInterrupt {
  id?: string;
  value: unknown;
}

/** `command` of a thread run: how it resumes an interrupted thread (CONTRACTS §9). */
export interface RunCommand {
  resume?: unknown;
  update?: Record<string, unknown>;
}
