import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { conflict, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import * as repo from './assistants-repo.js';
import {
  assistantNotFound,
  type DeploymentRef,
  defaultAssistantId,
  deploymentOfGraph,
  type ResolvedAssistant,
  resolveAssistant,
  type StoredAssistant,
} from './translate.js';

/** The deployment's default assistant and the ones made for it carry this in metadata, as the official server's. */
const SYSTEM_METADATA = { created_by: 'system' };

export interface RunningDeployment extends DeploymentRef {
  version_number: number | null;
}

export function toAssistant(stored: StoredAssistant, graphId: string) {
  return {
    assistant_id: stored.id,
    graph_id: graphId,
    name: stored.name,
    description: stored.description,
    config: stored.config,
    context: stored.context,
    metadata: stored.metadata,
    version: stored.version,
    created_at: toIso(stored.created_at),
    updated_at: toIso(stored.updated_at),
  };
}

/** A deployment's default assistant (CONTRACTS §14): its name is the graph, its version the running one's number. */
export function defaultAssistant(deployment: RunningDeployment) {
  return {
    assistant_id: defaultAssistantId(deployment.id),
    graph_id: deployment.name,
    name: deployment.name,
    description: null,
    config: {},
    context: {},
    metadata: { ...SYSTEM_METADATA, crewd_deployment_id: deployment.id },
    version: deployment.version_number ?? 1,
    created_at: toIso(deployment.created_at),
    updated_at: toIso(deployment.updated_at),
  };
}

export type Assistant = ReturnType<typeof toAssistant>;

function matchesMetadata(metadata: Record<string, unknown>, wanted: Record<string, unknown> | undefined): boolean {
  if (!wanted) return true;
  return Object.entries(wanted).every(([key, value]) => JSON.stringify(metadata[key]) === JSON.stringify(value));
}

export interface SearchFilter {
  graph_id?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  name?: string | undefined;
}

const cannotChangeDefault = (id: string, graph: string) =>
  conflict(
    `Assistant ${id} is the default assistant of deployment ${graph}: create an assistant with graph_id "${graph}" to give it its own config`,
  );

/** Assistants: each deployment's default one, and those made through the API, per organization. */
export function createAssistantService(db: Kysely<Database>) {
  /** The organization's deployments with the number of their production version (or else staging's). */
  async function deployments(orgId: string): Promise<RunningDeployment[]> {
    return db
      .selectFrom('deployments')
      .leftJoin('deployment_versions as prod', 'prod.id', 'deployments.production_version_id')
      .leftJoin('deployment_versions as stag', 'stag.id', 'deployments.staging_version_id')
      .select([
        'deployments.id',
        'deployments.name',
        'deployments.production_version_id',
        'deployments.staging_version_id',
        'deployments.created_at',
        'deployments.updated_at',
      ])
      .select((eb) => eb.fn.coalesce('prod.number', 'stag.number').as('version_number'))
      .where('deployments.org_id', '=', orgId)
      .orderBy('deployments.created_at', 'desc')
      .execute();
  }

  const nameOf = async (orgId: string, deploymentId: string) =>
    (await deployments(orgId)).find((d) => d.id === deploymentId)?.name ?? deploymentId;

  async function view(orgId: string, resolved: ResolvedAssistant) {
    if (resolved.stored) return toAssistant(resolved.stored, resolved.deployment.name);
    const deployment = (await deployments(orgId)).find((d) => d.id === resolved.deployment.id);
    if (!deployment) throw assistantNotFound(resolved.assistantId);
    return defaultAssistant(deployment);
  }

  async function storedOf(orgId: string, id: string) {
    const resolved = await resolveAssistant(db, orgId, id);
    if (!resolved.stored) throw cannotChangeDefault(id, resolved.deployment.name);
    return resolved;
  }

  /** Defaults of deployments that match, then assistants made through the API; newest first within each. */
  async function matching(orgId: string, filter: SearchFilter, limit: number) {
    const all = await deployments(orgId);
    const wanted =
      filter.graph_id === undefined ? all : all.filter((d) => d.name === filter.graph_id || d.id === filter.graph_id);
    const name = filter.name?.toLowerCase();
    const defaults = wanted
      .filter((d) => d.production_version_id !== null || d.staging_version_id !== null)
      .map(defaultAssistant)
      .filter((a) => matchesMetadata(a.metadata, filter.metadata) && (!name || a.name.toLowerCase().includes(name)));
    const names = new Map(all.map((d) => [d.id, d.name]));
    const storedFilter = { deploymentIds: wanted.map((d) => d.id), metadata: filter.metadata, name: filter.name };
    const stored = wanted.length === 0 ? [] : await repo.searchAssistants(db, orgId, storedFilter, Math.max(limit, 0));
    return {
      defaults,
      stored: stored.map((row) => toAssistant(row, names.get(row.deployment_id) ?? row.deployment_id)),
      storedFilter,
    };
  }

  return {
    get: async (orgId: string, id: string) => view(orgId, await resolveAssistant(db, orgId, id)),

    async create(
      orgId: string,
      input: SearchFilter & {
        graph_id: string;
        assistant_id?: string | undefined;
        if_exists: 'raise' | 'do_nothing';
        config: Record<string, unknown>;
        context: Record<string, unknown>;
        metadata: Record<string, unknown>;
        description?: string | null | undefined;
      },
    ) {
      const deployment = await deploymentOfGraph(db, orgId, input.graph_id);
      const id = (input.assistant_id ?? randomUUID()).toLowerCase();
      if (input.assistant_id) {
        const existing = await resolveAssistant(db, orgId, id).catch(() => null);
        if (existing) {
          if (input.if_exists === 'do_nothing') return view(orgId, existing);
          throw conflict(`Assistant ${id} already exists`);
        }
        // Another organization's id is taken too; saying whose would tell that it exists.
        const taken = await db.selectFrom('langgraph_assistants').select('id').where('id', '=', id).executeTakeFirst();
        if (taken) throw conflict(`Assistant ${id} already exists`);
      }
      const row = await db.transaction().execute((trx) =>
        repo.insertAssistant(trx, {
          id,
          org_id: orgId,
          deployment_id: deployment.id,
          name: input.name ?? 'Untitled',
          description: input.description ?? null,
          config: input.config,
          context: input.context,
          metadata: input.metadata,
        }),
      );
      return toAssistant(row, deployment.name);
    },

    async update(
      orgId: string,
      id: string,
      change: {
        graph_id?: string | undefined;
        config?: Record<string, unknown> | undefined;
        context?: Record<string, unknown> | undefined;
        metadata?: Record<string, unknown> | undefined;
        name?: string | undefined;
        description?: string | null | undefined;
      },
    ) {
      const resolved = await storedOf(orgId, id);
      const deployment = change.graph_id ? await deploymentOfGraph(db, orgId, change.graph_id) : resolved.deployment;
      const row = await db.transaction().execute(async (trx) => {
        const current = await repo.lockAssistant(trx, orgId, resolved.assistantId);
        if (!current) throw assistantNotFound(id);
        const next = (await repo.latestVersion(trx, current.id)).version + 1;
        const fields = {
          name: change.name ?? current.name,
          description: change.description === undefined ? current.description : change.description,
          config: change.config ?? current.config,
          context: change.context ?? current.context,
          // The official server merges metadata on update.
          metadata: { ...current.metadata, ...(change.metadata ?? {}) },
        };
        await repo.insertVersion(trx, current.id, next, fields);
        return repo.setCurrent(trx, current.id, next, { ...fields, deployment_id: deployment.id });
      });
      return toAssistant(row, deployment.name);
    },

    /** Deletes an assistant made through the API; answers its UUID. */
    async remove(orgId: string, id: string): Promise<string> {
      const resolved = await storedOf(orgId, id);
      if (!(await repo.deleteAssistant(db, orgId, resolved.assistantId))) throw assistantNotFound(id);
      return resolved.assistantId;
    },

    async search(orgId: string, filter: SearchFilter, page: { limit: number; offset: number }) {
      const { defaults, stored } = await matching(orgId, filter, page.offset + page.limit);
      return [...defaults, ...stored].slice(page.offset, page.offset + page.limit);
    },

    async count(orgId: string, filter: SearchFilter) {
      const { defaults, storedFilter } = await matching(orgId, filter, 0);
      const stored = storedFilter.deploymentIds.length === 0 ? 0 : await repo.countAssistants(db, orgId, storedFilter);
      return defaults.length + stored;
    },

    async versions(
      orgId: string,
      id: string,
      filter: { metadata?: Record<string, unknown> | undefined },
      page: { limit: number; offset: number },
    ) {
      const resolved = await resolveAssistant(db, orgId, id);
      if (!resolved.stored) {
        const assistant = await view(orgId, resolved);
        return matchesMetadata(assistant.metadata, filter.metadata) && page.offset === 0 ? [assistant] : [];
      }
      const rows = await repo.listVersions(db, resolved.stored.id, filter, page);
      return rows.map((row) => ({
        assistant_id: row.assistant_id,
        graph_id: resolved.deployment.name,
        name: row.name,
        description: row.description,
        config: row.config,
        context: row.context,
        metadata: row.metadata,
        version: row.version,
        created_at: toIso(row.created_at),
      }));
    },

    async setLatest(orgId: string, id: string, version: number) {
      const resolved = await storedOf(orgId, id);
      const row = await db.transaction().execute(async (trx) => {
        const current = await repo.lockAssistant(trx, orgId, resolved.assistantId);
        if (!current) throw assistantNotFound(id);
        const chosen = await repo.findVersion(trx, current.id, version);
        if (!chosen) throw notFound(`Assistant ${id} has no version ${version}`);
        return repo.setCurrent(trx, current.id, version, chosen);
      });
      return toAssistant(row, await nameOf(orgId, row.deployment_id));
    },

    /** The running version's recorded schemas (the build's import check), when it recorded them. */
    async recorded(orgId: string, id: string) {
      const resolved = await resolveAssistant(db, orgId, id);
      const versionId = resolved.deployment.production_version_id ?? resolved.deployment.staging_version_id;
      const row = versionId
        ? await db
            .selectFrom('deployment_versions')
            .select(['tool_schemas', 'entrypoint'])
            .where('id', '=', versionId)
            .executeTakeFirst()
        : undefined;
      return { resolved, schemas: row?.tool_schemas ?? null, entrypoint: row?.entrypoint ?? null };
    },
  };
}

export type AssistantService = ReturnType<typeof createAssistantService>;
