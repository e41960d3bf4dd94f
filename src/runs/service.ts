import type { Kysely, Transaction } from 'kysely';
import { isDeadlock } from '../db/sqlstate.js';
import type { Database } from '../db/types.js';
import type { DeploymentService } from '../deployments/service.js';
import type { StoredSecrets } from '../deployments/stored-secrets.js';
import { AppError, badRequest } from '../errors.js';
import type { RunExecutor } from '../execution/port.js';
import { toIso } from '../http/pagination.js';
import * as idempotency from '../idempotency/store.js';
import { newId } from '../ids.js';
import type { MemoCache } from '../memo-cache.js';
import type { EndRecorder } from '../run-record/end-recorder.js';
import { runNotFound } from '../run-record/errors.js';
import * as repo from '../run-record/repository.js';
import {
  type CreatedRun,
  type CreateRunParams,
  isTerminal,
  type LaunchSpec,
  type MultitaskStrategy,
  type ThreadGate,
  type ThreadState,
  type ThreadTurn,
} from '../run-record/types.js';
import type { Signals } from '../signals/hub.js';
import type { RunTraceIds } from '../telemetry/trace-context.js';
import type { RunField } from './schemas.js';

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
    usage: row.usage ?? null,
    trace_id: row.trace_id ?? null,
  };
}

/** The columns a list narrowed to `fields` reads: the large JSON ones only when named. */
function listColumns(fields: readonly RunField[] | undefined) {
  if (!fields) return repo.runColumns;
  const heavy: readonly string[] = repo.heavyRunColumns;
  return repo.runColumns.filter((column) => !heavy.includes(column) || fields.includes(column.slice(5) as RunField));
}

/** A run with only the fields asked for, and its id. */
function narrowed(run: ReturnType<typeof toRun>, fields: readonly RunField[] | undefined) {
  if (!fields) return run;
  const picked: Partial<ReturnType<typeof toRun>> & { id: string } = { id: run.id };
  for (const field of fields) (picked as Record<string, unknown>)[field] = run[field];
  return picked;
}

export interface RunServiceDeps {
  db: Kysely<Database>;
  deployments: DeploymentService;
  executor: RunExecutor;
  endRecorder: EndRecorder;
  /** `stopRequested`: a run ended here whose process may run on another instance (or here) stops. */
  signals: Signals;
  /** How a run takes its thread (src/threads/run-hooks.ts). */
  threadGate: ThreadGate;
  /** Finished runs' JSON answers, by `<org id>/<run id>`. */
  cache: MemoCache<string>;
  /** Opens a version's env sealed with SECRETS_KEY. */
  secrets?: Pick<StoredSecrets, 'openEnv'> | undefined;
  /** With tracing on: a new run's trace, under the caller's `traceparent` when given (src/telemetry). */
  traceIds?: ((traceparent: string | null | undefined) => RunTraceIds) | undefined;
}

export function createRunService({
  db,
  deployments,
  executor,
  endRecorder,
  signals,
  threadGate,
  cache,
  secrets,
  traceIds,
}: RunServiceDeps) {
  const traceOf = (params: CreateRunParams): RunTraceIds | null => traceIds?.(params.traceparent) ?? null;

  async function get(orgId: string, id: string) {
    const row = await repo.findRun(db, orgId, id);
    if (!row) throw runNotFound();
    return row;
  }

  type Version = LaunchSpec['version'] & { id: string; number: number; env_encrypted?: boolean };

  /** What the run's runner starts from, should it start now. */
  function launchSpec(
    params: CreateRunParams,
    runId: string,
    version: Version,
    threadState: ThreadState | null,
    trace: RunTraceIds | null,
  ): LaunchSpec {
    const threadId = params.threadId ?? null;
    return {
      run: {
        id: runId,
        org_id: params.orgId,
        deployment_id: params.deploymentId,
        version_id: version.id,
        thread_id: threadId,
        ...trace,
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
    };
  }

  /**
   * Cancels the run a new one displaced from its thread (interrupt), or deletes it with its events
   * (rollback), in the new run's transaction. When its process runs here, its event log is handed
   * over first: the end stores the events it had not stored and numbers the final event after every
   * one a stream got; `onRollback` gives the log back should the transaction not commit. What it
   * returns runs after the commit: the end is published and the displaced run's process is stopped.
   */
  async function displace(
    trx: Transaction<Database>,
    displaced: NonNullable<ThreadTurn['displaced']>,
    strategy: MultitaskStrategy | undefined,
    onRollback: (undo: () => void) => void,
  ): Promise<() => void> {
    const rollback = strategy === 'rollback';
    const canceled = { status: 'canceled' as const, output: null, error: null };
    const handed = displaced.status === 'running' ? executor.handOver(displaced.id) : null;
    if (handed) onRollback(() => handed.release(false));
    const numbered = handed ? { seq: handed.finalSeq, unstored: handed.unstored } : { seq: 'next' as const };
    const request = { runId: displaced.id, from: [displaced.status], outcome: canceled, ...numbered };
    const { afterCommit } = await endRecorder.endWithin(trx, request, { hooks: !rollback });
    if (rollback) await repo.deleteRun(trx, displaced.id);
    return () => {
      handed?.release(true);
      afterCommit();
      if (displaced.status === 'running') signals.emit('stopRequested', { runId: displaced.id });
    };
  }

  /**
   * A thread run's transaction, tried again should PostgreSQL break a deadlock by aborting it (locks
   * are taken thread first, then runs, so this is insurance); other transactions run once. What the
   * work asked to undo (`onRollback`) is undone when a try does not commit.
   */
  async function transactionRetried<T>(
    thread: boolean,
    work: (trx: Transaction<Database>, onRollback: (undo: () => void) => void) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const undo: (() => void)[] = [];
      try {
        return await db.transaction().execute((trx) => work(trx, (step) => undo.push(step)));
      } catch (error) {
        for (const step of undo) step();
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
    const runId = params.runId ?? newId('run');
    const trace = traceOf(params);
    const admitted = await executor.admit<CreatedRun | null>({ id: runId, orgId: params.orgId }, async (seat) => {
      const { status, instanceId } = seat(true);
      const now = new Date();
      const version = await repo.insertRunOfRunningVersion(db, {
        id: runId,
        org_id: params.orgId,
        deployment_id: params.deploymentId,
        environment: params.environment,
        thread_id: null,
        cron_id: params.cron?.id ?? null,
        cron_due_at: params.cron?.dueAt ?? null,
        status,
        input: params.input,
        instance_id: instanceId,
        created_at: now,
        started_at: status === 'running' ? now : null,
        ...trace,
      });
      if (!version) return { answer: null };
      const created = { run_id: runId, version_id: version.id, version_number: version.number, status };
      return { created, spec: () => launchSpec(params, runId, version, null, trace) };
    });
    if ('answer' in admitted) return admitted.answer;
    return admitted.created && { ...admitted.created, status: admitted.status };
  }

  /**
   * One try at canceling a pending or running run as `row` found it; false when it moved on
   * meanwhile (claimed, or ended). A run of this instance is canceled by the executor; a queued one
   * or one of another instance here, whose owner is then told to stop its process (its tick would too).
   */
  async function cancelAsFound(row: repo.RunRecord): Promise<boolean> {
    const here = await executor.cancel(row);
    if (here !== 'not-here') return here === 'canceled';
    const canceled = { status: 'canceled' as const, output: null, error: null };
    const ended = await endRecorder.end({ runId: row.id, from: [row.status], outcome: canceled, seq: 'next' });
    if (ended && row.status === 'running') signals.emit('stopRequested', { runId: row.id });
    return ended !== null;
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
      const trace = traceOf(params);
      const runId = params.runId ?? newId('run');
      const response: CreatedRun = {
        run_id: runId,
        version_id: version.id,
        version_number: version.number,
        status: 'running',
      };

      // The seat is taken only once the thread (if any) is ours, so requests losing a thread race hold no slot.
      const admitted = await executor.admit<CreatedRun>({ id: runId, orgId: params.orgId }, (seat) =>
        transactionRetried(threadId !== null, async (trx, onRollback) => {
          if (ref) {
            const taken = await idempotency.claim(trx, ref, { ...response });
            if (!taken.claimed) return { answer: taken.response };
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
          const committed = turn?.displaced
            ? await displace(trx, turn.displaced, params.multitaskStrategy, onRollback)
            : null;
          const { status, instanceId } = seat(turn?.startable ?? true);
          const now = new Date();
          response.status = status;
          await repo.insertRun(trx, {
            id: runId,
            org_id: params.orgId,
            deployment_id: params.deploymentId,
            version_id: version.id,
            environment: params.environment,
            thread_id: threadId,
            cron_id: params.cron?.id ?? null,
            cron_due_at: params.cron?.dueAt ?? null,
            status,
            input: params.input,
            command: params.command ?? null,
            instance_id: instanceId,
            created_at: now,
            started_at: status === 'running' ? now : null,
            ...trace,
          });
          if (ref && status === 'pending') await idempotency.updateResponse(trx, ref, { ...response });
          return {
            created: response,
            committed,
            spec: () => launchSpec(params, runId, version, turn?.state ?? null, trace),
          };
        }),
      );
      if ('answer' in admitted) return admitted.answer;
      // A run that could not start (its process failed to spawn) is answered as it is, to a replay too.
      if (admitted.status !== response.status) {
        response.status = admitted.status;
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

    async list(
      orgId: string,
      filter: repo.RunFilter,
      page: { limit: number; offset: number },
      fields?: readonly RunField[] | undefined,
    ) {
      const [rows, total] = await Promise.all([
        repo.listRuns(db, orgId, filter, page, listColumns(fields)),
        repo.countRuns(db, orgId, filter),
      ]);
      return { runs: rows.map((row) => narrowed(toRun(row), fields)), total };
    },

    /**
     * Cancels a pending or running run; the run is `canceled` when this resolves. Each look after
     * the first follows a move of the run (pending, then running, then ended), so three suffice.
     */
    async cancel(orgId: string, id: string): Promise<{ success: boolean; status: 'canceled' }> {
      for (let look = 1; look <= 3; look++) {
        const row = await get(orgId, id);
        if (row.status !== 'pending' && row.status !== 'running') {
          throw badRequest(`Cannot cancel run with status: ${row.status}`);
        }
        if (await cancelAsFound(row)) return { success: true, status: 'canceled' };
      }
      throw new AppError(503, 'unavailable', `Run ${id} is ending but its end is not recorded yet; look at it again`);
    },
  };
}

export type RunService = ReturnType<typeof createRunService>;
