import type { Kysely } from 'kysely';
import type { InstanceCaches } from '../cache/instance-caches.js';
import type { ThreadStatus } from '../db/schema/threads.js';
import type { Database, Environment } from '../db/types.js';
import { badRequest, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import type { EndRecorder } from '../run-record/end-recorder.js';
import type { MultitaskStrategy, RunCommand } from '../run-record/types.js';
import type { RunService } from '../runs/service.js';
import * as repo from './repository.js';
import { threadBusy as busy, lockThreadAndActiveRun, threadNotFound } from './run-hooks.js';

function toThread(row: repo.ThreadRecord) {
  return {
    thread_id: row.id,
    deployment_id: row.deployment_id,
    status: row.status,
    metadata: row.metadata,
    values: row.values,
    interrupts: row.interrupts,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/**
 * Threads: conversations scoped to a deployment. A run in a thread takes it (idle or error →
 * busy) in the run's creating transaction and gives it back in the run's ending transaction,
 * with new values and a checkpoint on success.
 */
export function createThreadService({
  db,
  runs,
  endRecorder,
  caches,
}: {
  db: Kysely<Database>;
  runs: RunService;
  /** Cancels a deleted thread's pending runs in the deleting transaction. */
  endRecorder: EndRecorder;
  caches: Pick<InstanceCaches, 'changing'>;
}) {
  async function get(orgId: string, id: string) {
    const row = await repo.findThread(db, orgId, id);
    if (!row) throw threadNotFound();
    return row;
  }

  return {
    async create(
      orgId: string,
      input: { deployment_id: string; metadata: Record<string, unknown>; values: Record<string, unknown> | null },
    ) {
      const exists = await db
        .selectFrom('deployments')
        .select('id')
        .where('org_id', '=', orgId)
        .where('id', '=', input.deployment_id)
        .executeTakeFirst();
      if (!exists) throw notFound('Deployment not found');
      const row = await repo.insertThread(db, {
        id: newId('thr'),
        org_id: orgId,
        deployment_id: input.deployment_id,
        metadata: input.metadata,
        values: input.values,
      });
      return toThread(row);
    },

    get: async (orgId: string, id: string) => toThread(await get(orgId, id)),

    async list(
      orgId: string,
      filter: { deployment_id: string; status?: ThreadStatus | undefined },
      page: { limit: number; offset: number },
    ) {
      return (await repo.listThreads(db, orgId, filter, page)).map(toThread);
    },

    async update(
      orgId: string,
      id: string,
      change: { metadata?: Record<string, unknown> | undefined; values?: Record<string, unknown> | null | undefined },
    ) {
      const row = await db.transaction().execute(async (trx) => {
        const thread = await repo.lockThread(trx, orgId, id);
        if (!thread) throw threadNotFound();
        // A run's end would overwrite values set under it.
        if (change.values !== undefined && thread.status === 'busy') throw busy(id, thread.active_run_id);
        const updated = await repo.updateThread(trx, orgId, id, {
          ...(change.metadata === undefined ? {} : { metadata: change.metadata }),
          ...(change.values === undefined ? {} : { values: change.values }),
        });
        if (!updated) throw threadNotFound();
        if (change.values !== undefined) {
          await repo.insertCheckpoint(trx, { id: newId('chk'), thread_id: id, run_id: null, values: updated.values });
        }
        return updated;
      });
      return toThread(row);
    },

    /**
     * Deletes the thread, unless a run of it is running (409). Its pending runs (queued, or the
     * one holding it while it waits for a slot) are canceled with it.
     */
    async remove(orgId: string, id: string) {
      // Its runs lose their thread_id: cached finished runs are dropped with it.
      const afterCommit = await caches.changing('runs', async (trx) => {
        const { thread, active } = await lockThreadAndActiveRun(trx, orgId, id);
        if (active?.status === 'running') throw busy(id, thread.active_run_id);
        await repo.detachActiveRun(trx, id);
        const ends: (() => void)[] = [];
        for (const runId of await repo.pendingRunIds(trx, id)) {
          const canceled = { status: 'canceled' as const, output: null, error: null };
          const request = { runId, from: ['pending' as const], outcome: canceled, seq: 'next' as const };
          ends.push((await endRecorder.endWithin(trx, request)).afterCommit);
        }
        await repo.deleteThread(trx, id);
        return ends;
      });
      for (const end of afterCommit) end();
    },

    async history(orgId: string, id: string, page: { limit: number; offset: number }) {
      await get(orgId, id);
      const rows = await repo.listCheckpoints(db, id, page);
      return rows.map((row) => ({
        checkpoint_id: row.id,
        thread_id: row.thread_id,
        run_id: row.run_id,
        values: row.values,
        created_at: toIso(row.created_at),
      }));
    },

    /** Starts a run in the thread, against the thread's own deployment. */
    async createRun(
      orgId: string,
      id: string,
      body: {
        input: Record<string, unknown>;
        environment: Environment;
        command?: RunCommand | undefined;
        multitask_strategy?: MultitaskStrategy | undefined;
      },
      idempotencyKey: string | null,
      traceparent: string | null = null,
    ) {
      const thread = await get(orgId, id);
      if (thread.deployment_id === null) {
        throw badRequest(
          `Thread ${id} has no deployment yet: start its first run through the LangGraph API, with an assistant_id`,
        );
      }
      const created = await runs.createRun({
        orgId,
        deploymentId: thread.deployment_id,
        environment: body.environment,
        input: body.input,
        threadId: id,
        command: body.command ?? null,
        multitaskStrategy: body.multitask_strategy ?? 'reject',
        idempotencyKey,
        idempotencyScope: `thread:${id}`,
        traceparent,
      });
      return {
        run_id: created.run_id,
        thread_id: id,
        version_id: created.version_id,
        version_number: created.version_number,
        status: created.status,
      };
    },
  };
}

export type ThreadService = ReturnType<typeof createThreadService>;
