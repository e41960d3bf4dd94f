import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Environment, UpdatedAt } from '../columns.js';

export type WebhookEvent = 'run.succeeded' | 'run.failed';
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhooksTable {
  id: string;
  org_id: string;
  deployment_id: string;
  name: string;
  url: string;
  events: ColumnType<WebhookEvent[], string, string>;
  environment: Environment;
  enabled: Generated<boolean>;
  secret: string;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  event: WebhookEvent;
  run_id: string;
  payload: string;
  status: DeliveryStatus;
  attempts: Generated<number>;
  cycle_attempts: Generated<number>;
  response_status: number | null;
  error_message: string | null;
  created_at: CreatedAt;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  lease_token: string | null;
  lease_until: Date | null;
}

export interface WebhookDeliveryAttemptsTable {
  delivery_id: string;
  number: number;
  attempted_at: Date;
  duration_ms: number;
  response_status: number | null;
  error_message: string | null;
}

export interface IncomingWebhooksTable {
  id: string;
  org_id: string;
  deployment_id: string;
  environment: Environment;
  name: string | null;
  token_hash: string;
  created_at: CreatedAt;
}
