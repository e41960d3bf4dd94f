import type { ThreadStatus } from '../db/schema/threads.js';
import type { Db } from '../db/types.js';
import { AppError, badRequest, conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { FinishedRun, RunEndHook, ThreadGate, ThreadState, ThreadTurn } from '../run-record/types.js';
import type { Signals } from '../signals/hub.js';
import * as repo from './repository.js';

export const threadNotFound = () => notFound('Thread not found');
export const threadBusy = (threadId: string, runId: string | null) =>
  conflict(`Thread ${threadId} is busy with run ${runId ?? 'unknown'}`);
/**
 * A run on a thread bound to another deployment: 400 in /v1 (docs/threads.md); the LangGraph API
 * answers it 409 (CONTRACTS §14), so it is told apart by its class.
 */
export class ThreadOfAnotherDeployment extends AppError {
  constructor(threadId: string, deploymentId: string) {
    super(400, 'bad_request', `thread_id: thread ${threadId} belongs to deployment ${deploymentId}`);
  }
}
export const notInterrupted = (threadId: string, status: ThreadStatus) =>
  badRequest(
    `command: thread ${threadId} is ${status}, not interrupted; send input without command to start a new turn`,
  );

/**
 * Locks a thread, then the run it is busy with (read after the lock, so its status is current). A
 * run's end locks its thread first too (the hook's `beforeEnd`), so the two never wait on each other.
 */
export async function lockThreadAndActiveRun(trx: Db, orgId: string, id: string) {
  const thread = await lockThread(trx, orgId, id);
  const active = thread.active_run_id ? ((await repo.lockRun(trx, thread.active_run_id)) ?? null) : null;
  return { thread, active };
}

async function lockThread(trx: Db, orgId: string, id: string) {
  const thread = await repo.lockThread(trx, orgId, id);
  if (!thread) throw threadNotFound();
  return thread;
}

/**
 * A run takes its thread in its creating transaction (CONTRACTS §9, §10). A thread that is not
 * busy is held at once. A busy one: `reject` answers 409; `enqueue` leaves the run pending in the
 * thread's queue; `interrupt` and `rollback` hand the thread to the new run, which starts once the
 * displaced run's process is gone.
 */
export const takeThreadForRun: ThreadGate = async (trx, claim) => {
  const { orgId, threadId, runId, strategy } = claim;
  // Only a run that displaces the thread's run needs that run locked too.
  const displaces = strategy === 'interrupt' || strategy === 'rollback';
  const { thread, active } = displaces
    ? await lockThreadAndActiveRun(trx, orgId, threadId)
    : { thread: await lockThread(trx, orgId, threadId), active: null };
  // A thread made through the LangGraph API belongs to the deployment of its first run (CONTRACTS §14).
  if (thread.deployment_id === null) await repo.bindThreadDeployment(trx, threadId, claim.deploymentId);
  else if (thread.deployment_id !== claim.deploymentId) {
    throw new ThreadOfAnotherDeployment(threadId, thread.deployment_id);
  }
  if (claim.command && thread.status !== 'interrupted') throw notInterrupted(threadId, thread.status);
  if (thread.status !== 'busy') {
    const state = await repo.holdThread(trx, threadId, runId);
    return turn(state, !(await repo.stoppingProcessAlive(trx, thread)), null);
  }
  if (strategy === 'reject') throw threadBusy(threadId, thread.active_run_id);
  const queued: ThreadTurn = {
    holds: false,
    startable: false,
    state: { values: null, checkpoint: null },
    displaced: null,
  };
  if (strategy === 'enqueue' || !active || (active.status !== 'pending' && active.status !== 'running')) return queued;

  // interrupt / rollback: the new run holds the thread now; a running run's process must go first.
  const displaced = { id: active.id, status: active.status };
  const stopping = active.status === 'running' ? { runId: active.id, instanceId: active.instance_id } : undefined;
  const state = await repo.holdThread(trx, threadId, runId, stopping);
  if (strategy === 'rollback') await repo.deleteCheckpointsOfRun(trx, threadId, active.id);
  const startable = !stopping && !(await repo.stoppingProcessAlive(trx, thread));
  return turn(state, startable, displaced);
};

function turn(
  state: { values: Record<string, unknown> | null; checkpoint: unknown },
  startable: boolean,
  displaced: ThreadTurn['displaced'],
): ThreadTurn {
  return { holds: true, startable, state: { values: state.values, checkpoint: state.checkpoint ?? null }, displaced };
}

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

/** Gives the thread back at the end of the run holding it: new state, a checkpoint on success. */
async function release(trx: Db, threadId: string, run: FinishedRun): Promise<void> {
  const status = statusAfter(run);
  if (run.status !== 'succeeded') {
    await repo.releaseThread(trx, threadId, run.id, { status });
    return;
  }
  const values = valuesAfter(run);
  const released = await repo.releaseThread(trx, threadId, run.id, {
    status,
    interrupts: run.interrupts ?? [],
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
}

/**
 * The run holding its thread gives it back in its ending transaction: `idle`, `interrupted` or
 * `error`, with new values, its interrupts and a checkpoint on success; then the thread's oldest
 * queued run takes it. A canceled run's process may outlive its end by the kill grace, so the
 * next run waits for its owner to see it gone. Runs that do not hold their thread (queued, displaced)
 * change nothing.
 */
export function threadRunEndHook(signals: Signals): RunEndHook {
  return {
    applies: (run) => run.threadId !== null,
    beforeEnd: (trx, runId) => repo.lockThreadOfRun(trx, runId),
    async inTransaction(trx, run) {
      if (!run.thread_id) return;
      if (!(await repo.lockThreadHeldBy(trx, run.thread_id, run.id))) return;
      await release(trx, run.thread_id, run);
      // A new statement, after the lock: a run queued by a request that locked the thread first is seen.
      const next = await repo.nextQueuedRun(trx, run.thread_id);
      if (!next) return;
      const stillRunning = run.status === 'canceled' && run.instance_id;
      const stopping = stillRunning ? { runId: run.id, instanceId: run.instance_id ?? null } : undefined;
      await repo.holdThread(trx, run.thread_id, next.id, stopping);
      const threadId = run.thread_id;
      return () => signals.emit('threadReleased', { threadId });
    },
  };
}

/**
 * A thread run's process is gone (its owner saw it stop): a run of its thread waiting for that
 * may start now.
 */
export const threadRunStopped = (db: Db, signals: Signals) => async (runId: string) => {
  const threadId = await repo.clearStoppingRun(db, runId);
  if (threadId) signals.emit('threadReleased', { threadId });
};

/** A queued run's thread values and latest checkpoint, read when it starts. */
export const threadStateLoader =
  (db: Db) =>
  async (threadId: string): Promise<ThreadState> => {
    const state = await repo.threadState(db, threadId);
    return { values: state?.values ?? null, checkpoint: state?.checkpoint ?? null };
  };
