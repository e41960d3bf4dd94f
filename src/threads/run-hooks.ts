import type { Db } from '../db/types.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { FinishedRun, RunEndHook, ThreadGate, ThreadState } from '../runs/types.js';
import type { ThreadStatus } from './db-types.js';
import * as repo from './repository.js';

export const threadNotFound = () => notFound('Thread not found');
export const threadBusy = (threadId: string, runId: string | null) =>
  conflict(`Thread ${threadId} is busy with run ${runId ?? 'unknown'}`);
export const notInterrupted = (threadId: string, status: ThreadStatus) =>
  badRequest(
    `command: thread ${threadId} is ${status}, not interrupted; send input without command to start a new turn`,
  );

/**
 * A run in a thread takes it (anything but busy → busy; with `command`, only interrupted → busy)
 * in the run's creating transaction, and gets what its runner starts from.
 */
export const takeThreadForRun: ThreadGate = async (trx, { orgId, threadId, deploymentId, runId, command }) => {
  const claim = { orgId, id: threadId, deploymentId, runId, interruptedOnly: command };
  const taken = await repo.takeThread(trx, claim);
  if (taken) return { values: taken.values, checkpoint: taken.checkpoint ?? null };
  const thread = await repo.findThread(trx, orgId, threadId);
  if (!thread) throw threadNotFound();
  if (thread.deployment_id !== deploymentId) {
    throw badRequest(`thread_id: thread ${threadId} belongs to deployment ${thread.deployment_id}`);
  }
  if (command && thread.status !== 'interrupted') throw notInterrupted(threadId, thread.status);
  throw threadBusy(threadId, thread.active_run_id);
};

/** The thread's status after its run: CONTRACTS §6 and, for run.interrupted, §9. */
function statusAfter(run: FinishedRun): ThreadStatus {
  if (run.status === 'failed') return 'error';
  return run.interrupts ? 'interrupted' : 'idle';
}

/** On success the runner's values replace the thread's; without them a completed run's output is merged in. */
function valuesAfter(run: FinishedRun) {
  if (run.values) return { replace: run.values };
  return run.interrupts ? undefined : { merge: run.output ?? {} };
}

/**
 * The run gives its thread back in its ending transaction: `idle`, `interrupted` or `error`, with
 * new values, its interrupts and a checkpoint (with the runner's own) on success.
 */
export const threadRunEndHook: RunEndHook = {
  applies: (run) => run.threadId !== null,
  async inTransaction(trx, run) {
    if (!run.thread_id) return;
    const status = statusAfter(run);
    if (run.status !== 'succeeded') {
      await repo.releaseThread(trx, run.thread_id, run.id, { status });
      return;
    }
    const values = valuesAfter(run);
    const interrupts = run.interrupts ?? [];
    const released = await repo.releaseThread(trx, run.thread_id, run.id, {
      status,
      interrupts,
      ...(values ? { values } : {}),
    });
    if (released) {
      await repo.insertCheckpoint(trx, {
        id: newId('chk'),
        thread_id: released.id,
        run_id: run.id,
        values: released.values,
        checkpoint: run.checkpoint,
      });
    }
  },
};

/** A queued run's thread values and latest checkpoint, read when it starts. */
export const threadStateLoader =
  (db: Db) =>
  async (threadId: string): Promise<ThreadState> => {
    const state = await repo.threadState(db, threadId);
    return { values: state?.values ?? null, checkpoint: state?.checkpoint ?? null };
  };
