import type { Db } from '../db/types.js';

/**
 * The organization's deployments that are MCP tools: switched on, with a production version. Oldest first, so a
 * tool keeps its name when a later deployment's name makes the same tool name.
 */
export function listToolDeployments(db: Db, orgId: string) {
  return db
    .selectFrom('deployments')
    .innerJoin('deployment_versions as version', 'version.id', 'deployments.production_version_id')
    .select([
      'deployments.id',
      'deployments.name',
      'deployments.description',
      'version.entrypoint',
      'version.tool_schemas',
    ])
    .where('deployments.org_id', '=', orgId)
    .where('deployments.mcp', '=', true)
    .orderBy('deployments.created_at', 'asc')
    .orderBy('deployments.id', 'asc')
    .execute();
}

export type ToolDeployment = Awaited<ReturnType<typeof listToolDeployments>>[number];
