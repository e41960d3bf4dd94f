import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ThreadInterrupt } from '../db/columns.js';
import type { Database } from '../db/types.js';
import { conflict, hasStatus, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import type { ThreadService } from '../threads/service.js';
import { unprocessable } from './errors.js';
import { checkpointSource, liveNext, nextNodes } from './graph-checkpoint.js';
import * as repo from './threads-repo.js';

const threadNotFound = (id: string) => notFound(`Thread ${id} not found`);

/** Runs a delete cancels before giving up: the running one, and those a queue starts after it. */
const MAX_DELETE_ATTEMPTS = 10;

/** The id an interrupt's task goes by: the interrupt's own, else one per thread and checkpoint. */
const taskIdOf = (threadId: string, checkpointId: string | null) => `${checkpointId ?? threadId}:task`;

function interruptsOf(interrupts: ThreadInterrupt[], threadId: string) {
  return interrupts.map((item, index) => ({ value: item.value, id: item.id ?? `${threadId}:${index}` }));
}

type Interrupts = ReturnType<typeof interruptsOf>;

/** A thread as the SDKs read it: `interrupts` by task id (CONTRACTS §14). */
export function toThread(row: repo.ThreadRow, latestCheckpointId: string | null = null) {
  const interrupts = interruptsOf(row.interrupts, row.id);
  return {
    thread_id: row.id,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
    metadata: row.metadata,
    status: row.status,
    values: row.values,
    interrupts: interrupts.length > 0 ? { [taskIdOf(row.id, latestCheckpointId)]: interrupts } : {},
    config: {},
    error: null,
  };
}

/**
 * The state's tasks, one per node LangGraph runs next (read from its checkpoint; `interrupt` when
 * the thread has none to read). The interrupts go with the first, under the id `interrupts` keys.
 */
function tasksOf(names: string[], threadId: string, checkpointId: string | null, interrupts: Interrupts) {
  return names.map((name, index) => ({
    id: index === 0 ? taskIdOf(threadId, checkpointId) : `${checkpointId ?? threadId}:${name}`,
    name,
    path: ['__pregel_pull', name],
    error: null,
    interrupts: index === 0 ? interrupts : [],
    checkpoint: null,
    state: null,
    result: null,
  }));
}

const checkpointRef = (threadId: string, id: string) => ({
  thread_id: threadId,
  checkpoint_ns: '',
  checkpoint_id: id,
  checkpoint_map: null,
});

/**
 * Threads of the Agent Server API over crewd's threads: the same rows, with UUIDs and no deployment
 * until the first run. Their state is built from crewd's checkpoints of the thread.
 */
export function createLangGraphThreads(db: Kysely<Database>, threads: ThreadService) {
  async function get(orgId: string, id: string) {
    const row = await repo.findThread(db, orgId, id);
    if (!row) throw threadNotFound(id);
    return row;
  }

  /** The state at one checkpoint (the latest when `at` is null); `step` counts checkpoints from the first. */
  async function stateAt(thread: repo.ThreadRow, at: repo.CheckpointRow | null, latest: boolean) {
    const parent = at ? await repo.parentCheckpoint(db, at) : undefined;
    // An earlier state's interrupts are those its run stopped at (the official history shows them too).
    const asked = latest ? thread.interrupts : at?.run_id ? await repo.interruptsOfRun(db, at.run_id) : [];
    const interrupts = interruptsOf(asked, thread.id);
    const checkpointId = at?.id ?? `${thread.id}:empty`;
    const stored = at?.has_runner_checkpoint ? await repo.runnerCheckpoint(db, at.id) : null;
    // The latest state is LangGraph's live one (finished tasks left out); an earlier one, as its history shows it.
    const names = stored ? ((latest ? liveNext(stored) : null) ?? nextNodes(stored)) : null;
    const langgraph = stored ? checkpointSource(stored) : null;
    // Interrupts with no node to hang them on (a checkpoint not read) go under a task named `interrupt`.
    const known = names && (names.length > 0 || interrupts.length === 0) ? names : null;
    const tasks = tasksOf(known ?? (interrupts.length > 0 ? ['interrupt'] : []), thread.id, at?.id ?? null, interrupts);
    return {
      values: (at ? at.values : thread.values) ?? {},
      next: tasks.map((task) => task.name),
      tasks,
      checkpoint: checkpointRef(thread.id, checkpointId),
      metadata: {
        ...thread.metadata,
        source: langgraph?.source ?? (at?.run_id ? 'loop' : 'update'),
        ...(langgraph ? { step: langgraph.step } : {}),
        // An update's run is crewd's way to run the graph's code; the official server has none to name.
        run_id: langgraph?.source === 'update' ? null : (at?.run_id ?? null),
        thread_id: thread.id,
      },
      created_at: toIso(at?.created_at ?? thread.updated_at),
      parent_checkpoint: parent ? checkpointRef(thread.id, parent.id) : null,
      interrupts,
      // The official server's deprecated copies, still read by code written for older SDKs.
      checkpoint_id: checkpointId,
      parent_checkpoint_id: parent?.id ?? null,
    };
  }

  async function latest(thread: repo.ThreadRow) {
    const [newest] = await repo.listCheckpoints(db, thread.id, { limit: 1 });
    return newest ?? null;
  }

  /**
   * Deletes the thread as the official server does, a busy one too: crewd's own delete refuses a
   * thread whose run is running, so that run is canceled first (`cancel`), and the one a queue
   * started meanwhile, each in turn. Its pending runs are canceled by the delete itself.
   */
  async function remove(orgId: string, id: string, cancel: (runId: string) => Promise<unknown>) {
    await get(orgId, id);
    for (let attempt = 1; ; attempt++) {
      try {
        return await threads.remove(orgId, id);
      } catch (error) {
        const running = await repo.activeRunId(db, orgId, id);
        if (!hasStatus(error, 409) || !running || attempt === MAX_DELETE_ATTEMPTS) throw error;
        // A run that ended since is no longer in the way: its cancel's 400 is nothing to answer.
        await cancel(running).catch((failure: unknown) => {
          if (!hasStatus(failure, 400)) throw failure;
        });
      }
    }
  }

  return {
    async create(
      orgId: string,
      input: { thread_id?: string | undefined; metadata: Record<string, unknown>; if_exists: 'raise' | 'do_nothing' },
    ) {
      const id = (input.thread_id ?? randomUUID()).toLowerCase();
      if (input.thread_id) {
        const existing = await db
          .selectFrom('threads')
          .select(['id', 'org_id'])
          .where('id', '=', id)
          .executeTakeFirst();
        if (existing) {
          // Another organization's id is taken too; saying so would tell that it exists.
          if (existing.org_id === orgId && input.if_exists === 'do_nothing') return toThread(await get(orgId, id));
          throw conflict(`Thread ${id} already exists`);
        }
      }
      return toThread(await repo.insertThread(db, { id, org_id: orgId, metadata: input.metadata }));
    },

    async get(orgId: string, id: string) {
      const thread = await get(orgId, id);
      return toThread(thread, (await latest(thread))?.id ?? null);
    },

    async search(
      orgId: string,
      filter: repo.ThreadFilter,
      order: { by: repo.ThreadSort; direction: 'asc' | 'desc' },
      page: { limit: number; offset: number },
    ) {
      return (await repo.searchThreads(db, orgId, filter, order, page)).map((row) => toThread(row));
    },

    count: (orgId: string, filter: repo.ThreadFilter) => repo.countThreads(db, orgId, filter),

    async update(orgId: string, id: string, metadata: Record<string, unknown>) {
      const row = await repo.mergeMetadata(db, orgId, id, metadata);
      if (!row) throw threadNotFound(id);
      return toThread(row);
    },

    remove,

    /** Deletes every thread whose metadata holds `metadata`, busy ones too (as `remove`). */
    async removeMatching(
      orgId: string,
      metadata: Record<string, unknown>,
      cancel: (runId: string) => Promise<unknown>,
    ) {
      const order = { by: 'created_at', direction: 'asc' } as const;
      for (;;) {
        const rows = await repo.searchThreads(db, orgId, { metadata }, order, { limit: 100, offset: 0 });
        for (const row of rows) {
          await remove(orgId, row.id, cancel).catch((error: unknown) => {
            // Deleted meanwhile by someone else: one fewer to delete.
            if (!hasStatus(error, 404)) throw error;
          });
        }
        if (rows.length < 100) return;
      }
    },

    async copy(orgId: string, id: string) {
      const thread = await get(orgId, id);
      return toThread(await db.transaction().execute((trx) => repo.copyThread(trx, orgId, thread, randomUUID())));
    },

    async state(orgId: string, id: string, checkpointId?: string) {
      const thread = await get(orgId, id);
      const newest = await latest(thread);
      if (!checkpointId || checkpointId === newest?.id) return stateAt(thread, newest, true);
      const at = await repo.findCheckpoint(db, id, checkpointId);
      if (!at) throw notFound(`Thread ${id} has no checkpoint ${checkpointId}`);
      return stateAt(thread, at, false);
    },

    async history(orgId: string, id: string, options: { limit: number; before?: string | undefined }) {
      const thread = await get(orgId, id);
      const before = options.before ? await repo.findCheckpoint(db, id, options.before) : undefined;
      if (options.before && !before) throw notFound(`Thread ${id} has no checkpoint ${options.before}`);
      const rows = await repo.listCheckpoints(db, id, { limit: options.limit, before: before?.created_at });
      const newest = before ? null : await latest(thread);
      return Promise.all(rows.map((row) => stateAt(thread, row, row.id === newest?.id)));
    },

    /**
     * `graph.update_state`. A thread holding LangGraph's own checkpoint goes to `graph` (the graph's
     * code applies it, in a run: state-update.ts); one without (a crew's, or no run yet) has its
     * values merged with these, as a new checkpoint.
     */
    async updateState(
      orgId: string,
      id: string,
      update: { values: unknown; as_node: string | undefined; checkpoint_id: string | undefined },
      graph: (thread: repo.ThreadRow, update: { values: unknown; as_node: string | null }) => Promise<string>,
    ) {
      const thread = await get(orgId, id);
      const newest = await latest(thread);
      if (update.checkpoint_id && update.checkpoint_id !== newest?.id) {
        throw unprocessable(
          `checkpoint_id: crewd updates a thread's latest state (${newest?.id ?? 'none yet'}); updating from an earlier checkpoint is not supported`,
        );
      }
      if (newest?.has_runner_checkpoint) {
        const checkpointId = await graph(thread, { values: update.values ?? null, as_node: update.as_node ?? null });
        return { checkpoint: checkpointRef(id, checkpointId) };
      }
      if (update.as_node) {
        throw unprocessable(
          `as_node: thread ${id} holds no LangGraph checkpoint yet (no graph has run on it), so there is no node to update as`,
        );
      }
      const values = Array.isArray(update.values) ? { values: update.values } : (update.values ?? {});
      const merged = { ...(thread.values ?? {}), ...(values as Record<string, unknown>) };
      await threads.update(orgId, id, { values: merged });
      const checkpoint = await latest(await get(orgId, id));
      return { checkpoint: checkpointRef(id, checkpoint?.id ?? `${id}:empty`) };
    },
  };
}

export type LangGraphThreads = ReturnType<typeof createLangGraphThreads>;
