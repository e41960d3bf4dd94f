import { createHash } from 'node:crypto';
import type { GraphDeployment } from '../cache/instance-caches.js';
import type { ThreadStatus } from '../db/schema/threads.js';
import type { Db, Environment } from '../db/types.js';
import { conflict, notFound } from '../errors.js';
import type { MemoCache } from '../memo-cache.js';
import type { RunStatus } from '../run-record/types.js';

/** Run statuses as the SDKs name them (CONTRACTS §14 "Statuses"). */
export type LangGraphRunStatus = 'pending' | 'running' | 'success' | 'error' | 'timeout' | 'interrupted';
export type LangGraphThreadStatus = ThreadStatus;

/** crewd's message for a run that reached its version's time limit (src/execution/active-run.ts). */
const TIMED_OUT = /^Run timed out after /;

/**
 * A crewd run's status as the SDK names it: `succeeded` → `success`, `failed` → `error` (or
 * `timeout` past the time limit), `canceled` → `interrupted`. A run that paused at `interrupt()` is
 * `success`, as on the official server; `atBreakpoint` marks one stopped by `interrupt_before` or
 * `interrupt_after` (its output holds no interrupt values), `interrupted` as CONTRACTS §14 says.
 */
export function runStatusOf(run: {
  status: RunStatus;
  error_message?: string | null;
  atBreakpoint?: boolean;
}): LangGraphRunStatus {
  switch (run.status) {
    case 'pending':
    case 'running':
      return run.status;
    case 'succeeded':
      return run.atBreakpoint ? 'interrupted' : 'success';
    case 'failed':
      return run.error_message && TIMED_OUT.test(run.error_message) ? 'timeout' : 'error';
    case 'canceled':
      return 'interrupted';
  }
}

/** Threads' statuses are the same words in both APIs. */
export const threadStatusOf = (status: ThreadStatus): LangGraphThreadStatus => status;

/** crewd's statuses that a LangGraph run status filter stands for. */
export function crewdRunStatuses(status: LangGraphRunStatus): RunStatus[] {
  switch (status) {
    case 'pending':
    case 'running':
      return [status];
    case 'success':
    case 'interrupted':
      return status === 'success' ? ['succeeded'] : ['canceled', 'succeeded'];
    case 'error':
    case 'timeout':
      return ['failed'];
  }
}

/** A UUID fixed for `name` (name-based, as UUID v5 is). */
function nameBasedUuid(name: string): string {
  const hash = createHash('sha1').update(name).digest();
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x50;
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The default assistant's UUID: fixed for a deployment, derived from its id. */
export const defaultAssistantId = (deploymentId: string): string => nameBasedUuid(`crewd-assistant:${deploymentId}`);

/**
 * The `thread_id` a stateless run answers. crewd keeps no thread for it, but the SDKs follow a run at
 * `/threads/{thread_id}/runs/{run_id}` (`runs.join`, `runs.get`, `runs.cancel`), which the official
 * server's temporary thread serves while the run goes on; derived from the run's id, so those paths
 * find the run. No thread has it: `GET /threads/{it}` is 404, as the official one once deleted.
 */
export const statelessThreadId = (runId: string): string => nameBasedUuid(`crewd-stateless-run:${runId}`);

/** A run answered with `statelessThreadId`: one of no thread. */
export const isStateless = (run: { run_id: string; thread_id: string | null }): boolean =>
  run.thread_id === null || run.thread_id === statelessThreadId(run.run_id);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string) => UUID.test(value);

/** `config.configurable.crewd_environment`: `staging` runs the staging version, anything else production. */
export function environmentOf(config: unknown): Environment {
  const configurable = (config as { configurable?: { crewd_environment?: unknown } } | null | undefined)?.configurable;
  return configurable?.crewd_environment === 'staging' ? 'staging' : 'production';
}

export interface DeploymentRef {
  id: string;
  name: string;
  production_version_id: string | null;
  staging_version_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** What an assistant id names: a deployment, and the assistant made through the API when it is one. */
export interface ResolvedAssistant {
  assistantId: string;
  deployment: DeploymentRef;
  /** Null for a deployment's default assistant. */
  stored: StoredAssistant | null;
}

export interface StoredAssistant {
  id: string;
  deployment_id: string;
  name: string;
  description: string | null;
  config: Record<string, unknown>;
  context: Record<string, unknown>;
  metadata: Record<string, unknown>;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export const assistantNotFound = (id: string) => notFound(`Assistant ${id} not found`);

function deployments(db: Db, orgId: string) {
  return db
    .selectFrom('deployments')
    .select(['id', 'name', 'production_version_id', 'staging_version_id', 'created_at', 'updated_at'])
    .where('org_id', '=', orgId);
}

export function findStoredAssistant(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('langgraph_assistants')
    .select([
      'id',
      'deployment_id',
      'name',
      'description',
      'config',
      'context',
      'metadata',
      'version',
      'created_at',
      'updated_at',
    ])
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The deployment a `graph_id` names: its name, or its id. Two deployments of one name: 409 naming their ids. */
export async function deploymentOfGraph(db: Db, orgId: string, graphId: string): Promise<DeploymentRef> {
  // One read for both (a run's path): the deployment of this id first, then the oldest of this name.
  const named = await deployments(db, orgId)
    .where((eb) => eb.or([eb('id', '=', graphId), eb('name', '=', graphId)]))
    .orderBy((eb) => eb('id', '=', graphId), 'desc')
    .orderBy('created_at')
    .limit(3)
    .execute();
  const [first, second] = named;
  if (first?.id === graphId) return first;
  if (!first) throw notFound(`Graph ${graphId} not found: no deployment has this name or id`);
  if (second) {
    throw conflict(
      `Graph ${graphId} names several deployments (${named.map((d) => d.id).join(', ')}): use a deployment id`,
    );
  }
  return first;
}

/**
 * An assistant id as the SDKs send it (CONTRACTS §14): an assistant's UUID (made through the API,
 * or a deployment's default one), a `graph_id` (the deployment's name), or a deployment id.
 */
export async function resolveAssistant(db: Db, orgId: string, assistantId: string): Promise<ResolvedAssistant> {
  if (isUuid(assistantId)) {
    const id = assistantId.toLowerCase();
    const stored = await findStoredAssistant(db, orgId, id);
    if (stored) {
      const deployment = await deployments(db, orgId).where('id', '=', stored.deployment_id).executeTakeFirst();
      if (!deployment) throw assistantNotFound(assistantId);
      return { assistantId: id, deployment, stored };
    }
    // A default assistant's id is derived from its deployment's: the organization's deployments are few.
    for (const deployment of await deployments(db, orgId).execute()) {
      if (defaultAssistantId(deployment.id) === id) return { assistantId: id, deployment, stored: null };
    }
    throw assistantNotFound(assistantId);
  }
  try {
    const deployment = await deploymentOfGraph(db, orgId, assistantId);
    return { assistantId: defaultAssistantId(deployment.id), deployment, stored: null };
  } catch (error) {
    if (error instanceof Error && 'statusCode' in error && error.statusCode === 404)
      throw assistantNotFound(assistantId);
    throw error;
  }
}

/** What a run needs of its assistant: its id, its deployment's, and the assistant made through the API when it is one. */
export interface RunAssistant {
  assistantId: string;
  deploymentId: string;
  stored: StoredAssistant | null;
}

/**
 * `resolveAssistant` for a run. A `graph_id` (a deployment's name or id, the usual assistant of a run) is answered
 * from `cache` when it holds it: a deployment's id never changes, and its name only with a rename, which drops the
 * cache (as a new deployment does). An assistant's UUID is read every time (its config changes with its versions).
 */
export async function resolveRunAssistant(
  db: Db,
  cache: MemoCache<GraphDeployment>,
  orgId: string,
  assistantId: string,
): Promise<RunAssistant> {
  if (isUuid(assistantId)) {
    const resolved = await resolveAssistant(db, orgId, assistantId);
    return { assistantId: resolved.assistantId, deploymentId: resolved.deployment.id, stored: resolved.stored };
  }
  const key = `${orgId}/${assistantId}`;
  const cached = cache.get(key);
  if (cached) return { ...cached, stored: null };
  const generation = cache.generation;
  const resolved = await resolveAssistant(db, orgId, assistantId);
  const graph = { deploymentId: resolved.deployment.id, assistantId: resolved.assistantId };
  cache.set(key, graph, generation);
  return { ...graph, stored: null };
}

/** A run's environment: the run's own config says, else the assistant's, else production. */
export function runEnvironment(resolved: Pick<ResolvedAssistant, 'stored'>, runConfig: unknown): Environment {
  if (environmentOf(runConfig) === 'staging') return 'staging';
  return environmentOf(resolved.stored?.config);
}

/** The config and context a run of this assistant starts from: the assistant's, under the run's own. */
export function mergedConfig(
  resolved: Pick<ResolvedAssistant, 'stored'>,
  runConfig: Record<string, unknown> | undefined,
) {
  const base = resolved.stored?.config ?? {};
  const own = runConfig ?? {};
  const configurable = {
    ...((base.configurable as Record<string, unknown> | undefined) ?? {}),
    ...((own.configurable as Record<string, unknown> | undefined) ?? {}),
  };
  return { ...base, ...own, configurable };
}
