import type { Kysely } from 'kysely';
import { hashSecret } from '../auth/keys.js';
import type { Database } from '../db/types.js';
import { deploymentExists } from '../deployments/repository.js';
import { badRequest, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId, randomToken } from '../ids.js';
import type { CreatedRun, CreateRunParams } from '../run-record/types.js';
import * as repo from './incoming-repository.js';
import type { CreateIncomingWebhookInput } from './schemas.js';

type Page = { limit: number; offset: number };

/** The part of the runs service an incoming webhook uses. */
export interface RunStarter {
  createRun(params: CreateRunParams): Promise<CreatedRun>;
}

const webhookNotFound = () => notFound('Webhook not found');

function toIncoming(row: {
  id: string;
  deployment_id: string;
  environment: 'production' | 'staging';
  name: string | null;
  created_at: Date;
}) {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    environment: row.environment,
    name: row.name,
    created_at: toIso(row.created_at),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function createIncomingWebhookService(db: Kysely<Database>, options: { publicUrl: string; runs: RunStarter }) {
  return {
    async create(orgId: string, input: CreateIncomingWebhookInput) {
      if (!(await deploymentExists(db, orgId, input.deployment_id))) throw notFound('Deployment not found');
      // ~250 bits: the token is the only credential of the URL.
      const token = randomToken(48);
      const row = await repo.insertIncomingWebhook(db, {
        id: newId('iwh'),
        org_id: orgId,
        deployment_id: input.deployment_id,
        environment: input.environment,
        name: input.name ?? null,
        token_hash: hashSecret(token),
      });
      return { ...toIncoming(row), token, url: `${options.publicUrl}/webhooks/runs/${token}` };
    },

    async list(orgId: string, query: Page & { deployment_id?: string }) {
      if (query.deployment_id !== undefined && !(await deploymentExists(db, orgId, query.deployment_id))) {
        throw notFound('Deployment not found');
      }
      return (await repo.listIncomingWebhooks(db, orgId, query.deployment_id, query)).map(toIncoming);
    },

    async get(orgId: string, id: string) {
      const row = await repo.findIncomingWebhook(db, orgId, id);
      if (!row) throw webhookNotFound();
      return toIncoming(row);
    },

    async remove(orgId: string, id: string) {
      if (!(await repo.deleteIncomingWebhook(db, orgId, id))) throw webhookNotFound();
    },

    /** POST /webhooks/runs/<token>: the token picks the deployment and environment; the body is the input. */
    async trigger(token: string, body: unknown, idempotencyKey: string | null) {
      const hook = await repo.findIncomingWebhookByToken(db, hashSecret(token));
      if (!hook) throw webhookNotFound();
      const input = body === undefined ? {} : body;
      if (!isPlainObject(input)) throw badRequest('Body must be a JSON object (it becomes the run input)');
      return options.runs.createRun({
        orgId: hook.org_id,
        deploymentId: hook.deployment_id,
        environment: hook.environment,
        input,
        idempotencyKey,
        idempotencyScope: `incoming:${hook.id}`,
      });
    },
  };
}

export type IncomingWebhookService = ReturnType<typeof createIncomingWebhookService>;
