import type { ColumnType } from 'kysely';
import type { Json, Timestamp } from '../columns.js';

type JsonObject = Json<Record<string, unknown>>;

/** An assistant made through the LangGraph API: a deployment's graph with its own config (CONTRACTS §14). */
export interface LanggraphAssistantsTable {
  id: string;
  org_id: string;
  deployment_id: string;
  name: string;
  description: ColumnType<string | null, string | null | undefined, string | null>;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  version: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface LanggraphAssistantVersionsTable {
  assistant_id: string;
  version: number;
  name: string;
  description: ColumnType<string | null, string | null | undefined, string | null>;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  created_at: Timestamp;
}

/** One item of the LangGraph store; `namespace` is the labels joined by ".". */
export interface LanggraphStoreItemsTable {
  org_id: string;
  namespace: string;
  key: string;
  value: JsonObject;
  created_at: Timestamp;
  updated_at: Timestamp;
}
