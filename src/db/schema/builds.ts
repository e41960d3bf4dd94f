import type { ColumnType } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export type VersionSource = 'command' | 'bundle';
export type VersionStatus = 'building' | 'ready' | 'failed';
export type Runtime = 'python' | 'node';

export interface BundlesTable {
  sha256: string;
  size: number;
  data: Buffer;
  created_at: CreatedAt;
}

export interface DeploymentVariablesTable {
  deployment_id: string;
  name: string;
  value: string;
  encrypted: boolean;
  updated_at: UpdatedAt;
}
