import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string, string>;

export type Role = 'admin' | 'member';
export type Environment = 'production' | 'staging';

export interface OrganizationsTable {
  id: string;
  name: string;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  name: string;
  role: Role;
  key_hash: string;
  created_at: CreatedAt;
}

export interface DeploymentsTable {
  id: string;
  org_id: string;
  name: string;
  production_version_id: string | null;
  staging_version_id: string | null;
  version_count: Generated<number>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface DeploymentVersionsTable {
  id: string;
  deployment_id: string;
  number: number;
  command: Json<string[]>;
  cwd: string | null;
  env: Json<Record<string, string>>;
  timeout_seconds: number | null;
  created_at: CreatedAt;
}

export interface Database {
  organizations: OrganizationsTable;
  api_keys: ApiKeysTable;
  deployments: DeploymentsTable;
  deployment_versions: DeploymentVersionsTable;
}

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type DeploymentRow = Selectable<DeploymentsTable>;
export type DeploymentVersionRow = Selectable<DeploymentVersionsTable>;
export type NewDeploymentVersion = Insertable<DeploymentVersionsTable>;
