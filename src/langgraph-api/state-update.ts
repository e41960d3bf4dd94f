import { sql } from 'kysely';
import { AppError, badRequest } from '../errors.js';
import type { LangGraphDeps } from './deps.js';
import { unprocessable } from './errors.js';
import { type RunCreateBody, runCreateBody } from './runs-schemas.js';
import { createLangGraphRuns, type StateUpdate } from './runs-service.js';
import { STREAM_REQUEST_KEY } from './state-update-runs.js';
import { restoreAfterRefusedUpdate, type ThreadRow } from './threads-repo.js';

/** The graph-run errors LangGraph raises for a bad update (an unknown `as_node`, an ambiguous update, a bad value). */
const UPDATE_ERRORS = /^(InvalidUpdateError|ValueError|KeyError|TypeError)\b/;

/**
 * `POST /threads/{id}/state` on a thread that holds a LangGraph checkpoint (CONTRACTS §14): the
 * graph's own `update_state(config, values, as_node)`, so its reducers apply the values. It runs
 * in a crewd run of the thread's deployment (the version and assistant of the thread's last run),
 * through the runner protocol like any run of the graph; the run's end writes the new checkpoint
 * as every run's end does. The official server has no such run: this API's run lists leave it out.
 */
export function createStateUpdates(deps: Pick<LangGraphDeps, 'db' | 'services'>) {
  const { db } = deps;
  const runs = createLangGraphRuns(deps);

  /** The assistant and environment of the thread's last run: its update runs the same graph and config. */
  async function lastRunOf(thread: ThreadRow) {
    return db
      .selectFrom('runs')
      .select(['environment', sql<string | null>`input -> ${STREAM_REQUEST_KEY} ->> 'assistant_id'`.as('assistant_id')])
      .where('thread_id', '=', thread.id)
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  /** Applies the update; answers the id of the checkpoint it wrote. */
  return async function updateGraphState(
    principal: { orgId: string; keyId: string },
    thread: ThreadRow,
    update: StateUpdate,
  ): Promise<string> {
    const last = await lastRunOf(thread);
    const body: RunCreateBody = runCreateBody.parse({
      assistant_id: last?.assistant_id ?? (thread.deployment_id as string),
      input: null,
      config: { configurable: { crewd_environment: last?.environment ?? 'production' } },
      multitask_strategy: 'reject',
    });
    const run = await runs.create(principal.orgId, thread.id, body, [], update);
    const end = await runs.untilEnd(principal, run.run_id);
    const status = end?.status ?? (await runs.get(principal.orgId, thread.id, run.run_id)).status;
    if (status !== 'succeeded' && status !== 'success') {
      await restoreAfterRefusedUpdate(db, thread, run.run_id);
      const message = end?.error ?? `the state update's run ${run.run_id} ended ${status}`;
      // LangGraph's refusal of the update is the client's error, as the official server answers it.
      if (UPDATE_ERRORS.test(message)) throw badRequest(message.replace(/^\w+: /, ''));
      throw new AppError(500, 'internal', message);
    }
    const written = await db
      .selectFrom('thread_checkpoints')
      .select(['id'])
      .where('thread_id', '=', thread.id)
      .where('run_id', '=', run.run_id)
      .executeTakeFirst();
    if (!written) throw unprocessable(`Thread ${thread.id}: the state update wrote no checkpoint`);
    return written.id;
  };
}
