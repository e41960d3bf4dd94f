import { sql } from 'kysely';
import type { Db } from '../db/types.js';

const columns = [
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
] as const;

export interface AssistantFields {
  name: string;
  description: string | null;
  config: Record<string, unknown>;
  context: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

const jsonFields = (fields: AssistantFields) => ({
  name: fields.name,
  description: fields.description,
  config: JSON.stringify(fields.config),
  context: JSON.stringify(fields.context),
  metadata: JSON.stringify(fields.metadata),
});

export async function insertAssistant(
  db: Db,
  row: { id: string; org_id: string; deployment_id: string } & AssistantFields,
) {
  const created = await db
    .insertInto('langgraph_assistants')
    .values({ id: row.id, org_id: row.org_id, deployment_id: row.deployment_id, version: 1, ...jsonFields(row) })
    .returning(columns)
    .executeTakeFirstOrThrow();
  await insertVersion(db, row.id, 1, row);
  return created;
}

export function insertVersion(db: Db, assistantId: string, version: number, fields: AssistantFields) {
  return db
    .insertInto('langgraph_assistant_versions')
    .values({ assistant_id: assistantId, version, ...jsonFields(fields) })
    .execute();
}

export function lockAssistant(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('langgraph_assistants')
    .select(columns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export function latestVersion(db: Db, assistantId: string) {
  return db
    .selectFrom('langgraph_assistant_versions')
    .select(sql<number>`coalesce(max(version), 0)`.as('version'))
    .where('assistant_id', '=', assistantId)
    .executeTakeFirstOrThrow();
}

export function findVersion(db: Db, assistantId: string, version: number) {
  return db
    .selectFrom('langgraph_assistant_versions')
    .selectAll()
    .where('assistant_id', '=', assistantId)
    .where('version', '=', version)
    .executeTakeFirst();
}

/** Makes `fields` the assistant's current fields at `version` (a new one, or an older one set as latest). */
export function setCurrent(db: Db, id: string, version: number, fields: AssistantFields & { deployment_id?: string }) {
  return db
    .updateTable('langgraph_assistants')
    .set({
      version,
      ...jsonFields(fields),
      ...(fields.deployment_id ? { deployment_id: fields.deployment_id } : {}),
      updated_at: sql`clock_timestamp()`,
    })
    .where('id', '=', id)
    .returning(columns)
    .executeTakeFirstOrThrow();
}

export async function deleteAssistant(db: Db, orgId: string, id: string): Promise<boolean> {
  const deleted = await db
    .deleteFrom('langgraph_assistants')
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
  return deleted.numDeletedRows > 0n;
}

export interface AssistantFilter {
  deploymentIds?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
  name?: string | undefined;
}

function filtered(db: Db, orgId: string, filter: AssistantFilter) {
  let query = db.selectFrom('langgraph_assistants').where('org_id', '=', orgId);
  if (filter.deploymentIds) query = query.where('deployment_id', 'in', filter.deploymentIds);
  if (filter.metadata) query = query.where(sql<boolean>`metadata @> ${JSON.stringify(filter.metadata)}::jsonb`);
  if (filter.name) query = query.where(sql<boolean>`position(lower(${filter.name}) in lower(name)) > 0`);
  return query;
}

/** Assistants made through the API, newest first; `limit` counts from the start. */
export function searchAssistants(db: Db, orgId: string, filter: AssistantFilter, limit: number) {
  return filtered(db, orgId, filter).select(columns).orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
}

export async function countAssistants(db: Db, orgId: string, filter: AssistantFilter): Promise<number> {
  const row = await filtered(db, orgId, filter)
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function listVersions(
  db: Db,
  assistantId: string,
  filter: { metadata?: Record<string, unknown> | undefined },
  page: { limit: number; offset: number },
) {
  let query = db.selectFrom('langgraph_assistant_versions').selectAll().where('assistant_id', '=', assistantId);
  if (filter.metadata) query = query.where(sql<boolean>`metadata @> ${JSON.stringify(filter.metadata)}::jsonb`);
  return query.orderBy('version', 'desc').limit(page.limit).offset(page.offset).execute();
}
