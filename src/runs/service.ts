import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely, Transaction } from 'kysely';
import type { MemoCache } from '../cache/memo-cache.js';
import { isDeadlock } from '../db/sqlstate.js';
import type { Database } from '../db/types.js';
import type { DeploymentService } from '../deployments/service.js';
import type { StoredSecrets } from '../deployments/stored-secrets.js';
import { badRequest } from '../errors.js';
import { toIso } from '../http/pagination.js';
import * as idempotency from '../idempotency/store.js';
import { newId } from '../ids.js';
import type { EndRecorder } from '../run-record/end-recorder.js';
import { runNotFound } from '../run-record/errors.js';
import * as repo from '../run-record/repository.js';
import {
  type CreatedRun,
  type CreateRunParams,
  isTerminal,
  type LaunchSpec,
  type MultitaskStrategy,
  type RunExecutor,
  type RunStatus,
  type ThreadGate,
  type ThreadState,
  type ThreadTurn,
} from '../run-record/types.js';

export { runNotFound };

export function toRun(row: repo.RunRecord) {
  return {
    id: row.id,
    version_id: row.version_id,
    deployment_id: row.deployment_id,
    environment: row.environment,
    thread_id: row.thread_id,
    cron_id: row.cron_id,
    status: row.status,
    input: row.input,
    output: row.status === 'succeeded' ? (row.output ?? {}) : null,
    error_message: row.status === 'failed' ? row.error_message : null,
    created_at: toIso(row.created_at),
    started_at: toIso(row.started_at),
    completed_at: toIso(row.completed_at),
  };
}

export interface RunServiceDeps {
  db: Kysely<Database>;
  deployments: DeploymentService;
  executor: RunExecutor;
  endRecorder: EndRecorder;
  /** How a run takes its thread (src/threads/run-hooks.ts). */
  threadGate: ThreadGate;
  /** Finished runs' JSON answers, by `<org id>/<run id>`. */
  cache: MemoCache<string>;
  /** Opens a version's env sealed with SECRETS_KEY. */
  secrets?: Pick<StoredSecrets, 'openEnv'> | undefined;
}

export function createRunService({
  db,
  deployments,
  executor,
  endRecorder,
  threadGate,
  cache,
  secrets,
}: RunServiceDeps) {
  async function get(orgId: string, id: string) {
    const row = await repo.findRun(db, orgId, id);
    if (!row) throw runNotFound();
    return row;
  }

  type Version = LaunchSpec['version'] & { id: string; number: number; env_encrypted?: boolean };

  /**
   * Hands a created run to the executor: starts it in its reserved slot, or queues it. A run that
   * may not start yet (queued in its thread, or waiting for a displaced run's process) is woken by
   * its thread when it may.
   */
  async function start(
    params: CreateRunParams,
    response: CreatedRun,
    version: Version,
    reserved: boolean,
    startable: boolean,
    threadState: ThreadState | null,
  ): Promise<RunStatus> {
    if (!reserved) {
      if (startable) executor.enqueued();
      return 'pending';
    }
    const threadId = params.threadId ?? null;
    return executor.launch({
      run: {
        id: response.run_id,
        org_id: params.orgId,
        deployment_id: params.deploymentId,
        version_id: version.id,
        thread_id: threadId,
      },
      input: params.input,
      version: {
        command: version.command,
        cwd: version.cwd,
        env: secrets ? secrets.openEnv(version) : version.env,
        timeout_seconds: version.timeout_seconds,
        source: version.source,
        status: version.status,
        bundle_sha256: version.bundle_sha256,
        variables: version.variables,
      } satisfies LaunchSpec['version'],
      thread: threadId && threadState ? { thread_id: threadId, ...threadState } : null,
      command: params.command ?? null,
    });
  }

  /**
   * Cancels the run a new one displaced from its thread (interrupt), or deletes it with its events
   * (rollback), in the new run's transaction. What it returns runs after the commit: the end is
   * published and the displaced run's process is stopped.
   */
  async function displace(
    trx: Transaction<Database>,
    displaced: NonNullable<ThreadTurn['displaced']>,
    strategy: MultitaskStrategy | undefined,
  ): Promise<() => void> {
    const rollback = strategy === 'rollback';
    const canceled = { status: 'canceled' as const, output: null, error: null };
    const request = { runId: displaced.id, from: [displaced.status], outcome: canceled, seq: 'next' as const };
    const { afterCommit } = await endRecorder.endWithin(trx, request, { hooks: !rollback });
    if (rollback) await repo.deleteRun(trx, displaced.id);
    return () => {
      afterCommit();
      if (displaced.status === 'running') executor.stopProcess(displaced.id);
    };
  }

  /**
   * A thread run's transaction, tried again should PostgreSQL break a deadlock by aborting it (locks
   * are taken thread first, then runs, so this is insurance); other transactions run once.
   */
  async function transactionRetried<T>(thread: boolean, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await db.transaction().execute(work);
      } catch (error) {
        if (!thread || attempt >= 3 || !isDeadlock(error)) throw error;
      }
    }
  }

  /**
   * A run without key or thread: one statement finds the running version and inserts the run.
   * Null when there is no running version; the caller then asks the deployments service, whose
   * errors say why.
   */
  async function createPlain(params: CreateRunParams): Promise<CreatedRun | null> {
    const runId = newId('run');
    const reserved = executor.reserve(params.orgId);
    const now = new Date();
    let version: Version | undefined;
    try {
      version = await repo.insertRunOfRunningVersion(db, {
        id: runId,
        org_id: params.orgId,
        deployment_id: params.deploymentId,
        environment: params.environment,
        thread_id: null,
        cron_id: params.cron?.id ?? null,
        cron_due_at: params.cron?.dueAt ?? null,
        status: reserved ? 'running' : 'pending',
        input: params.input,
        instance_id: reserved ? executor.instanceId : null,
        created_at: now,
        started_at: reserved ? now : null,
      });
    } finally {
      if (reserved && !version) executor.release(params.orgId);
    }
    if (!version) return null;
    const response: CreatedRun = {
      run_id: runId,
      version_id: version.id,
      version_number: version.number,
      status: reserved ? 'running' : 'pending',
    };
    response.status = await start(params, response, version, reserved, true, null);
    return response;
  }

  return {
    /**
     * Starts a run: one transaction (idempotency key, thread, running version, run row), then the
     * executor starts its process. Resolves once the process runs, or the run waits as
     * `pending` for a slot.
     */
    async createRun(params: CreateRunParams): Promise<CreatedRun> {
      const threadId = params.threadId ?? null;
      if (!params.idempotencyKey && !threadId) {
        const created = await createPlain(params);
        if (created) return created;
      }
      const ref = params.idempotencyKey
        ? {
            orgId: params.orgId,
            scope: params.idempotencyScope,
            key: params.idempotencyKey,
            requestHash: idempotency.requestHash({
              deployment_id: params.deploymentId,
              environment: params.environment,
              input: params.input,
              thread_id: threadId,
              ...(params.command ? { command: params.command } : {}),
              ...(params.multitaskStrategy && params.multitaskStrategy !== 'reject'
                ? { multitask_strategy: params.multitaskStrategy }
                : {}),
            }),
          }
        : null;
      if (ref) {
        const first = await idempotency.findResponse<CreatedRun>(db, ref);
        if (first) return first;
      }

      const version = await deployments.resolveRunningVersion(params.orgId, params.deploymentId, params.environment);
      const runId = newId('run');
      const response: CreatedRun = {
        run_id: runId,
        version_id: version.id,
        version_number: version.number,
        status: 'running',
      };

      // The slot is taken only once the thread (if any) is ours, so requests losing a thread race hold none.
      let reserved = false;
      type Created = { turn: ThreadTurn | null; afterCommit: (() => void) | null };
      let outcome: { replay: CreatedRun } | Created;
      try {
        outcome = await transactionRetried(threadId !== null, async (trx) => {
          if (reserved) executor.release(params.orgId);
          reserved = false;
          if (ref) {
            const taken = await idempotency.claim(trx, ref, { ...response });
            if (!taken.claimed) return { replay: taken.response };
          }
          const turn = threadId
            ? await threadGate(trx, {
                orgId: params.orgId,
                threadId,
                deploymentId: params.deploymentId,
                runId,
                command: Boolean(params.command),
                strategy: params.multitaskStrategy ?? 'reject',
              })
            : null;
          const afterCommit = turn?.displaced ? await displace(trx, turn.displaced, params.multitaskStrategy) : null;
          reserved = (turn?.startable ?? true) && executor.reserve(params.orgId);
          const now = new Date();
          response.status = reserved ? 'running' : 'pending';
          await repo.insertRun(trx, {
            id: runId,
            org_id: params.orgId,
            deployment_id: params.deploymentId,
            version_id: version.id,
            environment: params.environment,
            thread_id: threadId,
            cron_id: params.cron?.id ?? null,
            cron_due_at: params.cron?.dueAt ?? null,
            status: response.status,
            input: params.input,
            command: params.command ?? null,
            instance_id: reserved ? executor.instanceId : null,
            created_at: now,
            started_at: reserved ? now : null,
          });
          if (ref && !reserved) await idempotency.updateResponse(trx, ref, { ...response });
          return { turn, afterCommit };
        });
      } catch (error) {
        if (reserved) executor.release(params.orgId);
        throw error;
      }
      if ('replay' in outcome) {
        if (reserved) executor.release(params.orgId);
        return outcome.replay;
      }
      outcome.afterCommit?.();
      const { turn } = outcome;
      const real = await start(params, response, version, reserved, turn?.startable ?? true, turn?.state ?? null);
      if (real !== response.status) {
        response.status = real;
        if (ref) await idempotency.updateResponse(db, ref, { ...response });
      }
      return response;
    },

    /** A run as its JSON answer; a finished run no longer changes, so it is answered from memory. */
    async getJson(orgId: string, id: string): Promise<string> {
      const key = `${orgId}/${id}`;
      const cached = cache.get(key);
      if (cached !== undefined) return cached;
      const generation = cache.generation;
      const run = toRun(await get(orgId, id));
      const json = JSON.stringify(run);
      if (isTerminal(run.status)) cache.set(key, json, generation, json.length);
      return json;
    },

    async list(orgId: string, filter: repo.RunFilter, page: { limit: number; offset: number }) {
      const [rows, total] = await Promise.all([
        repo.listRuns(db, orgId, filter, page),
        repo.countRuns(db, orgId, filter),
      ]);
      return { runs: rows.map(toRun), total };
    },

    /** Cancels a pending or running run; the run is `canceled` when this resolves. */
    async cancel(orgId: string, id: string): Promise<{ success: boolean; status: 'canceled' }> {
      for (let attempt = 0; ; attempt++) {
        if (attempt > 0) await sleep(Math.min(5 * attempt, 50));
        const row = await get(orgId, id);
        if (row.status !== 'pending' && row.status !== 'running') {
          throw badRequest(`Cannot cancel run with status: ${row.status}`);
        }
        if (row.status === 'running' && executor.owns(id)) {
          if (await executor.cancel(id)) return { success: true, status: 'canceled' };
          continue;
        }
        // Claimed here a moment ago, its process about to start: the executor will own it.
        if (row.status === 'running' && row.instance_id === executor.instanceId && attempt < 200) continue;
        // Queued here, or running on another instance, which is told to stop its process (or does on its next tick).
        const canceled = { status: 'canceled' as const, output: null, error: null };
        const ended = await endRecorder.end({ runId: id, from: [row.status], outcome: canceled, seq: 'next' });
        if (ended) {
          if (row.status === 'running') executor.canceledElsewhere(id);
          return { success: true, status: 'canceled' };
        }
        // It moved on meanwhile (started, or ended): look again.
      }
    },
  };
}

export type RunService = ReturnType<typeof createRunService>;
