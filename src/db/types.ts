import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely';
import type { CreatedAt, Environment, Json, Role, UpdatedAt } from './columns.js';
import type { BundlesTable, DeploymentVariablesTable, Runtime, VersionSource, VersionStatus } from './schema/builds.js';
import type { CronsTable } from './schema/crons.js';
import type {
  LanggraphAssistantsTable,
  LanggraphAssistantVersionsTable,
  LanggraphStoreItemsTable,
} from './schema/langgraph-api.js';
import type { McpCallsTable } from './schema/mcp.js';
import type { IdempotencyKeysTable, InstancesTable, RunEventsTable, RunsTable } from './schema/run-record.js';
import type { TableCatalogTable } from './schema/tables.js';
import type { ThreadCheckpointsTable, ThreadsTable } from './schema/threads.js';
import type {
  IncomingWebhooksTable,
  WebhookDeliveriesTable,
  WebhookDeliveryAttemptsTable,
  WebhooksTable,
} from './schema/webhooks.js';

export type { Environment, Role };

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
  /** Whether the deployment is a tool at /mcp. */
  mcp: Generated<boolean>;
  description: ColumnType<string | null, string | null | undefined, string | null>;
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
  /** `env`'s values are sealed with SECRETS_KEY. */
  env_encrypted: ColumnType<boolean, boolean | undefined, boolean>;
  timeout_seconds: number | null;
  created_at: CreatedAt;
  source: ColumnType<VersionSource, VersionSource | undefined, VersionSource>;
  status: ColumnType<VersionStatus, VersionStatus | undefined, VersionStatus>;
  build_error: ColumnType<string | null, string | null | undefined, string | null>;
  runtime: ColumnType<Runtime | null, Runtime | null | undefined, Runtime | null>;
  entrypoint: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  /** What the build's import check found the version's input and output to be (src/mcp/tools.ts reads it). */
  tool_schemas: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  bundle_sha256: ColumnType<string | null, string | null | undefined, string | null>;
  bundle_size: ColumnType<number | null, number | null | undefined, number | null>;
  promote_to: ColumnType<Environment | null, Environment | null | undefined, Environment | null>;
  build_instance_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface Database {
  bundles: BundlesTable;
  deployment_variables: DeploymentVariablesTable;
  instances: InstancesTable;
  runs: RunsTable;
  run_events: RunEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  threads: ThreadsTable;
  thread_checkpoints: ThreadCheckpointsTable;
  organizations: OrganizationsTable;
  api_keys: ApiKeysTable;
  deployments: DeploymentsTable;
  deployment_versions: DeploymentVersionsTable;
  tables: TableCatalogTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_delivery_attempts: WebhookDeliveryAttemptsTable;
  incoming_webhooks: IncomingWebhooksTable;
  crons: CronsTable;
  langgraph_assistants: LanggraphAssistantsTable;
  langgraph_assistant_versions: LanggraphAssistantVersionsTable;
  langgraph_store_items: LanggraphStoreItemsTable;
  mcp_calls: McpCallsTable;
}

/** The database, or a transaction on it: what repositories take. */
export type Db = Kysely<Database> | Transaction<Database>;

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type DeploymentRow = Selectable<DeploymentsTable>;
export type DeploymentVersionRow = Selectable<DeploymentVersionsTable>;
export type NewDeploymentVersion = Insertable<DeploymentVersionsTable>;
