import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { AppError } from '../errors.js';
import type { StreamEnd } from '../events/types.js';
import { runNotFound } from '../run-record/errors.js';
import * as repo from '../run-record/repository.js';
import { isTerminal } from '../run-record/types.js';

/** What a stream needs to know of what it follows (a run, or a version's build), read from the store. */
export interface StreamRecord {
  status: string;
  terminal: boolean;
  /** Going on (so possibly on another instance: `instanceId`). */
  running: boolean;
  instanceId: string | null;
  end: StreamEnd;
}

/**
 * How a stream finds what it follows. Runs and builds share the event log (`run_events`, keyed by
 * the run's or the version's id) and this stream; only where their record lives differs.
 */
export interface StreamSource {
  find(db: Kysely<Database>, orgId: string, id: string): Promise<StreamRecord | undefined>;
  findById(db: Kysely<Database>, id: string): Promise<StreamRecord | undefined>;
  /** The final event stored with the end, if the record keeps one (a run's `run.completed`, say). */
  finalEvent?(db: Kysely<Database>, id: string): Promise<{ seq: number; json: string } | undefined>;
  notFound(): AppError;
}

function recordOfRun(row: repo.RunRecord): StreamRecord {
  return {
    status: row.status,
    terminal: isTerminal(row.status),
    running: row.status === 'running',
    instanceId: row.instance_id,
    end: repo.endOfRun(row),
  };
}

export const runStreamSource: StreamSource = {
  find: async (db, orgId, id) => {
    const row = await repo.findRun(db, orgId, id);
    return row && recordOfRun(row);
  },
  findById: async (db, id) => {
    const row = await repo.findRunById(db, id);
    return row && recordOfRun(row);
  },
  finalEvent: repo.storedFinalEvent,
  notFound: runNotFound,
};
