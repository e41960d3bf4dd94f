import { randomUUID } from 'node:crypto';
import { AppError, conflict, notFound } from '../errors.js';
import type { RunEnd } from '../events/types.js';
import * as runRepo from '../run-record/repository.js';
import { type CreateRunParams, isTerminal, type RunCommand, type RunStatus } from '../run-record/types.js';
import type { RunStream } from '../streams/stream.js';
import type { StreamSink } from '../streams/stream-sink.js';
import { ThreadOfAnotherDeployment } from '../threads/run-hooks.js';
import type { LangGraphDeps } from './deps.js';
import { unprocessable } from './errors.js';
import type { LangGraphRun, RunCreateBody } from './runs-schemas.js';
import { STREAM_REQUEST_KEY } from './state-update-runs.js';
import { errorOf } from './stream-framing.js';
import { createLangGraphThreads } from './threads.js';
import * as threadsRepo from './threads-repo.js';
import {
  crewdRunStatuses,
  defaultAssistantId,
  isStateless,
  type LangGraphRunStatus,
  mergedConfig,
  resolveRunAssistant,
  runEnvironment,
  runStatusOf,
  statelessThreadId,
} from './translate.js';

/** What a run of this API was asked beside its input: kept with the run, read by the runner and by `kwargs`. */
export interface StreamRequest {
  assistant_id: string;
  metadata: Record<string, unknown>;
  multitask_strategy: 'reject' | 'interrupt' | 'rollback' | 'enqueue';
  stream_mode: string[];
  stream_subgraphs: boolean;
  config: Record<string, unknown>;
  context: Record<string, unknown> | null;
  interrupt_before: string[] | '*' | null;
  interrupt_after: string[] | '*' | null;
  /** No input and no command: the graph goes on from its checkpoint (LangGraph's `None` input). */
  null_input: boolean;
  command: Record<string, unknown> | null;
  /** `POST /threads/{id}/state` on a graph's thread: the run applies `graph.update_state` instead of running the graph. */
  update_state?: StateUpdate;
}

/** What `POST /threads/{id}/state` asks of LangGraph's `update_state`. */
export interface StateUpdate {
  values: unknown;
  as_node: string | null;
}

/** The /v1 JSON of a run (src/runs/service.ts toRun), as far as this API reads it. */
interface V1Run {
  id: string;
  deployment_id: string;
  thread_id: string | null;
  status: RunStatus;
  input: Record<string, unknown>;
  output: Record<string, unknown> | null;
  error_message: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A run made for `POST /threads/{id}/state`: the official server has no such run, so its run lists leave it out. */
const isStateUpdate = (input: Record<string, unknown>): boolean => {
  const asked = input[STREAM_REQUEST_KEY];
  return isObject(asked) && isObject(asked.update_state);
};

/** A run that stopped at an interrupt (`run.interrupted`): its output is `{interrupts}` alone. */
function pausedAt(run: Pick<V1Run, 'status' | 'output'>): unknown[] | null {
  const output = run.output;
  if (run.status !== 'succeeded' || !output) return null;
  const keys = Object.keys(output);
  return keys.length === 1 && keys[0] === 'interrupts' && Array.isArray(output.interrupts) ? output.interrupts : null;
}

/** A run as the SDKs read it (`Run`), from its /v1 JSON; a run started through /v1 gets its deployment's assistant. */
export function toLangGraphRun(run: V1Run): LangGraphRun {
  const asked = isObject(run.input[STREAM_REQUEST_KEY])
    ? (run.input[STREAM_REQUEST_KEY] as Partial<StreamRequest>)
    : {};
  const { [STREAM_REQUEST_KEY]: _asked, ...input } = run.input;
  const { assistant_id, metadata, multitask_strategy, ...rest } = asked;
  return {
    run_id: run.id,
    thread_id: run.thread_id ?? statelessThreadId(run.id),
    assistant_id: assistant_id ?? defaultAssistantId(run.deployment_id),
    created_at: run.created_at,
    updated_at: run.completed_at ?? run.started_at ?? run.created_at,
    status: runStatusOf({
      status: run.status,
      error_message: run.error_message,
      atBreakpoint: pausedAt(run)?.length === 0,
    }),
    metadata: metadata ?? {},
    multitask_strategy: multitask_strategy ?? 'reject',
    kwargs: { input: rest.null_input ? null : input, ...rest },
  };
}

/** Refuses what crewd cannot honour, naming the field and what to do instead (docs/langgraph.md). */
function refuseUnsupported(body: RunCreateBody): void {
  if (body.checkpoint != null || body.checkpoint_id) {
    throw unprocessable(
      'checkpoint_id: crewd runs a thread from its latest state; running from an earlier checkpoint is not supported',
    );
  }
  if (body.webhook) {
    throw unprocessable('webhook: crewd sends run webhooks per deployment; create one with POST /v1/webhooks');
  }
  if (body.after_seconds) {
    throw unprocessable('after_seconds: crewd starts runs at once; schedule later runs with a cron (POST /runs/crons)');
  }
  if (body.input !== undefined && body.input !== null && !isObject(body.input)) {
    throw unprocessable('input: must be a JSON object (the graph’s input) or null');
  }
}

const modesOf = (value: RunCreateBody['stream_mode']): string[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

/** A stream sink that keeps nothing: a run's end is all a waiting request needs from its stream. */
function endSink(onEnd: (json: string) => void): StreamSink {
  return {
    send: () => true,
    sendUntracked: onEnd,
    comment: () => {},
    close: () => {},
    abort: () => {},
    backlogged: () => false,
    drained: async () => {},
  };
}

/** The largest event id: a stream resumed there sends no stored event, only the run's end. */
const PAST_EVERY_EVENT = 2_147_483_647;

/** Runs of the Agent Server API over crewd's run service (CONTRACTS §14): the same rows and event log as /v1. */
export function createLangGraphRuns({ db, services }: Pick<LangGraphDeps, 'db' | 'services'>) {
  const threads = createLangGraphThreads(db, services.threads);

  /** Finished runs are cached as their answer: a deleted one is dropped from every instance's cache. */
  const deleteRun = (id: string) => services.caches.changing('runs', (trx) => runRepo.deleteRun(trx, id));

  /** Cancels a run still going (`rollback`: and deletes it); a run already over stays, and its status is answered. */
  async function cancelGoing(orgId: string, threadId: string | null, runId: string, action: 'interrupt' | 'rollback') {
    const run = await runOf(orgId, threadId, runId);
    if (isTerminal(run.status)) return run.status;
    await services.runs.cancel(orgId, run.id);
    if (action === 'rollback') await deleteRun(run.id);
    return null;
  }

  async function getV1(orgId: string, runId: string): Promise<V1Run> {
    return JSON.parse(await services.runs.getJson(orgId, runId)) as V1Run;
  }

  /** A run of the thread (404 when it belongs to another thread, or none). */
  async function runOf(orgId: string, threadId: string | null, runId: string): Promise<V1Run> {
    const run = await getV1(orgId, runId);
    const answered = run.thread_id ?? statelessThreadId(run.id);
    if (threadId !== null && answered !== threadId.toLowerCase()) throw notFound('Run not found');
    return run;
  }

  /**
   * Creates the run; a thread that does not exist is made first with `if_not_exists: create` (else
   * 404). The thread is looked for only when the run service finds none, so a run costs no extra read.
   */
  async function createIn(params: CreateRunParams, ifNotExists: RunCreateBody['if_not_exists']) {
    try {
      return await services.runs.createRun(params);
    } catch (error) {
      // CONTRACTS §14: a run of another deployment on a thread bound to one is 409 here (400 in /v1).
      if (error instanceof ThreadOfAnotherDeployment) throw conflict(error.message);
      const threadId = params.threadId;
      const missing = error instanceof AppError && error.statusCode === 404 && error.message === 'Thread not found';
      if (!missing || !threadId) throw error;
      if (ifNotExists !== 'create') throw notFound(`Thread ${threadId} not found`);
      await threads.create(params.orgId, { thread_id: threadId, metadata: {}, if_exists: 'do_nothing' });
      return services.runs.createRun(params);
    }
  }

  /** Follows the run's stream until its end; resolves with the `complete` message. */
  async function untilEnd(principal: { orgId: string; keyId: string }, runId: string): Promise<RunEnd | null> {
    for (;;) {
      let end: RunEnd | null = null;
      const stream: RunStream = services.streams.open(principal, runId, PAST_EVERY_EVENT);
      await stream.prepare();
      await stream.start(
        endSink((json) => {
          const message = JSON.parse(json) as { type?: string } & RunEnd;
          if (message.type === 'complete')
            end = { status: message.status, output: message.output, error: message.error };
        }),
      );
      await stream.done;
      if (end) return end;
      // A stream past its lifetime (or cut by a fault) ends without the run: follow it again.
      const run = await getV1(principal.orgId, runId);
      if (isTerminal(run.status)) return null;
    }
  }

  return {
    toLangGraphRun,

    /** Starts a run (in a thread, or stateless with `threadId` null); answers it as the SDKs read it. */
    async create(
      orgId: string,
      threadId: string | null,
      body: RunCreateBody,
      defaultModes: string[] = ['values'],
      stateUpdate?: StateUpdate,
    ): Promise<LangGraphRun> {
      refuseUnsupported(body);
      const resolved = await resolveRunAssistant(db, services.caches.graphDeployments, orgId, body.assistant_id);
      const thread = threadId === null ? null : threadId.toLowerCase();
      const command = body.command ?? null;
      const input = isObject(body.input) ? body.input : {};
      const stored = resolved.stored;
      const request: StreamRequest = {
        assistant_id: resolved.assistantId,
        metadata: body.metadata ?? {},
        // The official server's default: a run asked of a busy thread waits its turn.
        multitask_strategy: body.multitask_strategy ?? 'enqueue',
        stream_mode: modesOf(body.stream_mode) ?? defaultModes,
        stream_subgraphs: body.stream_subgraphs ?? false,
        config: mergedConfig(resolved, body.config),
        context: stored || body.context ? { ...(stored?.context ?? {}), ...(body.context ?? {}) } : null,
        interrupt_before: body.interrupt_before ?? null,
        interrupt_after: body.interrupt_after ?? null,
        null_input: (body.input === undefined || body.input === null) && command === null,
        command,
        ...(stateUpdate ? { update_state: stateUpdate } : {}),
      };
      // crewd's own command resumes an interrupted thread (CONTRACTS §9); update and goto alone ride in the request.
      const resume: RunCommand | null =
        command && command.resume !== undefined
          ? { resume: command.resume, ...(isObject(command.update) ? { update: command.update } : {}) }
          : null;
      const runId = randomUUID();
      const storedInput = { ...input, [STREAM_REQUEST_KEY]: request };
      const deploymentId = resolved.deploymentId;
      const created = await createIn(
        {
          runId,
          orgId,
          deploymentId,
          environment: runEnvironment(resolved, body.config),
          input: storedInput,
          threadId: thread,
          command: thread ? resume : null,
          ...(thread ? { multitaskStrategy: request.multitask_strategy } : {}),
          idempotencyScope: 'langgraph',
        },
        body.if_not_exists,
      );
      if (thread && !stateUpdate) await threadsRepo.markRunAssistant(db, orgId, thread, resolved);
      // The run as it was created, without reading it back.
      const at = new Date().toISOString();
      return toLangGraphRun({
        id: runId,
        deployment_id: deploymentId,
        thread_id: thread,
        status: created.status,
        input: storedInput,
        output: null,
        error_message: null,
        created_at: at,
        started_at: created.status === 'running' ? at : null,
        completed_at: null,
      });
    },

    async get(orgId: string, threadId: string | null, runId: string): Promise<LangGraphRun> {
      return toLangGraphRun(await runOf(orgId, threadId, runId));
    },

    /** A thread's runs, newest first; 404 for an unknown thread. */
    async list(
      orgId: string,
      threadId: string,
      page: { limit: number; offset: number; status?: LangGraphRunStatus | undefined },
    ): Promise<LangGraphRun[]> {
      const id = threadId.toLowerCase();
      if (!(await threadsRepo.findThread(db, orgId, id))) throw notFound(`Thread ${threadId} not found`);
      const statuses = page.status ? crewdRunStatuses(page.status) : [undefined];
      const wanted = page.offset + page.limit;
      /** The thread's newest runs of a status, state updates' runs left out: read further past those. */
      async function graphRuns(status: RunStatus | undefined): Promise<V1Run[]> {
        for (let limit = wanted; ; ) {
          const listed = (await services.runs.list(orgId, { thread_id: id, status }, { limit, offset: 0 }))
            .runs as unknown as V1Run[];
          const kept = listed.filter((run) => !isStateUpdate(run.input));
          if (kept.length >= wanted || listed.length < limit) return kept;
          limit += listed.length - kept.length;
        }
      }
      const lists = await Promise.all(statuses.map(graphRuns));
      const runs = lists
        .flat()
        .map(toLangGraphRun)
        .filter((run) => !page.status || run.status === page.status)
        .sort((a, b) => b.created_at.localeCompare(a.created_at));
      return runs.slice(page.offset, page.offset + page.limit);
    },

    /**
     * Cancels a pending or running run; `rollback` deletes it too, with its events. A run already over is 404 for
     * either action and stays, as on the official server (its SDKs raise NotFoundError).
     */
    async cancel(orgId: string, threadId: string | null, runId: string, action: 'interrupt' | 'rollback') {
      const over = await cancelGoing(orgId, threadId, runId, action);
      if (over) throw notFound(`No matching runs to cancel: run ${runId} is already over (${over})`);
    },

    /** Cancels the run as `cancel` does, unless it is already over: then its status, and the run stays. */
    cancelGoing,

    /** Deletes a finished run with its events; a run still going is 409 (cancel it first). */
    async remove(orgId: string, threadId: string, runId: string): Promise<void> {
      const run = await runOf(orgId, threadId, runId);
      if (!isTerminal(run.status)) {
        throw conflict(`Run ${run.id} is ${run.status}; cancel it before deleting it`);
      }
      await deleteRun(run.id);
    },

    untilEnd,

    /**
     * What `wait` and `join` answer once the run is over: the thread's values (the run's output
     * outside a thread) with `__interrupt__` when it stopped at one, or `__error__` when it failed.
     */
    async finalValues(
      orgId: string,
      started: { run_id: string; thread_id: string | null },
      end: RunEnd | null,
    ): Promise<Record<string, unknown>> {
      // The run's end as its stream told it, else as stored.
      const threadId = isStateless(started) ? null : started.thread_id;
      const run = end
        ? { status: end.status, output: end.output, error_message: end.error, thread_id: threadId }
        : await getV1(orgId, started.run_id);
      if (run.status === 'failed') return { __error__: errorOf(run.error_message ?? 'Run failed') };
      const interrupts = pausedAt(run);
      const values = run.thread_id
        ? ((await threadsRepo.findThread(db, orgId, run.thread_id))?.values ?? {})
        : interrupts
          ? {}
          : (run.output ?? {});
      // A stop at interrupt_before/interrupt_after asks nothing: the official answer has no `__interrupt__`.
      if (!interrupts || interrupts.length === 0) return values;
      return { ...values, __interrupt__: interrupts };
    },
  };
}

export type LangGraphRuns = ReturnType<typeof createLangGraphRuns>;
