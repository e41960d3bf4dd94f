import type { Migration } from 'kysely';
import * as foundation from './20261121_0001_foundation.js';
import * as tables from './20261121_0002_tables.js';
import * as runs from './20261121_0003_runs.js';
import * as webhooks from './20261121_0004_webhooks.js';
import * as threads from './20261121_0005_threads.js';
import * as bundles from './20261123_0006_bundles.js';
import * as crons from './20261123_0007_crons.js';
import * as threadInterrupts from './20261123_0008_thread_interrupts.js';
import * as tableIndexes from './20261123_0010_table_indexes.js';
import * as sealedVersionEnv from './20261126_0011_sealed_version_env.js';
import * as runUsage from './20261126_0013_run_usage.js';
import * as deploymentMcp from './20261126_0014_deployment_mcp.js';
import * as langgraphApi from './20261126_0015_langgraph_api.js';
import * as mcpCalls from './20261127_0016_mcp_calls.js';

/** Every migration, in order. A landed migration is frozen: changes go into a new file. */
export const migrations: Record<string, Migration> = {
  '20261121_0001_foundation': foundation,
  '20261121_0002_tables': tables,
  '20261121_0003_runs': runs,
  '20261121_0004_webhooks': webhooks,
  '20261121_0005_threads': threads,
  '20261123_0006_bundles': bundles,
  '20261123_0007_crons': crons,
  '20261123_0008_thread_interrupts': threadInterrupts,
  '20261123_0010_table_indexes': tableIndexes,
  '20261126_0011_sealed_version_env': sealedVersionEnv,
  '20261126_0013_run_usage': runUsage,
  '20261126_0014_deployment_mcp': deploymentMcp,
  '20261126_0015_langgraph_api': langgraphApi,
  '20261127_0016_mcp_calls': mcpCalls,
};
