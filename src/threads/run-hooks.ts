import type { Db } from '../db/types.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { RunEndHook, ThreadGate } from '../runs/types.js';
import type { ThreadStatus } from './db-types.js';
import * as repo from './repository.js';

export const threadNotFound = () => notFound('Thread not found');
export const threadBusy = (threadId: string, runId: string | null) =>
  conflict(`Thread ${threadId} is busy with run ${runId ?? 'unknown'}`);

/** A run in a thread takes it (idle or error → busy) in the run's creating transaction. */
export const takeThreadForRun: ThreadGate = async (trx, { orgId, threadId, deploymentId, runId }) => {
  const taken = await repo.takeThread(trx, orgId, threadId, deploymentId, runId);
  if (taken) return { values: taken.values };
  const thread = await repo.findThread(trx, orgId, threadId);
  if (!thread) throw threadNotFound();
  if (thread.deployment_id !== deploymentId) {
    throw badRequest(`thread_id: thread ${threadId} belongs to deployment ${thread.deployment_id}`);
  }
  throw threadBusy(threadId, thread.active_run_id);
};

/**
 * The run gives its thread back in its ending transaction: `idle` (or `error` after a failure),
 * with new values and a checkpoint on success (CONTRACTS §6).
 */
export const threadRunEndHook: RunEndHook = {
  applies: (run) => run.threadId !== null,
  async inTransaction(trx, run) {
    if (!run.thread_id) return;
    const status: ThreadStatus = run.status === 'failed' ? 'error' : 'idle';
    if (run.status !== 'succeeded') {
      await repo.releaseThread(trx, run.thread_id, run.id, { status });
      return;
    }
    const values = run.values ? { replace: run.values } : { merge: run.output ?? {} };
    const released = await repo.releaseThread(trx, run.thread_id, run.id, { status, values });
    if (released) {
      await repo.insertCheckpoint(trx, {
        id: newId('chk'),
        thread_id: released.id,
        run_id: run.id,
        values: released.values,
      });
    }
  },
};

/** A queued run's thread values, read when it starts. */
export const threadValuesLoader = (db: Db) => async (threadId: string) =>
  (await repo.threadValues(db, threadId))?.values ?? null;
