import type { Kysely } from 'kysely';
import type { InstanceCaches } from '../cache/instance-caches.js';
import type { WebhookEvent } from '../db/schema/webhooks.js';
import type { Database } from '../db/types.js';
import { deploymentExists } from '../deployments/repository.js';
import type { StoredSecrets } from '../deployments/stored-secrets.js';
import { badRequest, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import type { EndingRun } from '../run-record/types.js';
import { forbiddenUrlMessage } from './address-guard.js';
import { eventForRun, payloadPieces } from './payload.js';
import * as repo from './repository.js';
import type { CreateWebhookInput, UpdateWebhookInput } from './schemas.js';
import { generateSigningSecret } from './signer.js';

type Page = { limit: number; offset: number };

const webhookNotFound = () => notFound('Webhook not found');
const deliveryNotFound = () => notFound('Delivery not found');

function toWebhook(row: repo.WebhookRecord) {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    name: row.name,
    url: row.url,
    events: row.events,
    environment: row.environment,
    enabled: row.enabled,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

function toDelivery(row: repo.DeliveryRecord) {
  return {
    id: row.id,
    event: row.event,
    run_id: row.run_id,
    status: row.status,
    attempts: row.attempts,
    response_status: row.response_status,
    error_message: row.error_message,
    created_at: toIso(row.created_at),
    last_attempt_at: toIso(row.last_attempt_at),
    next_attempt_at: row.status === 'pending' ? toIso(row.next_attempt_at) : null,
  };
}

/** Events in a fixed order without repeats, so equal sets read the same. */
const normaliseEvents = (events: WebhookEvent[]): WebhookEvent[] =>
  (['run.succeeded', 'run.failed'] as const).filter((event) => events.includes(event));

/** A delivery written at a run's end, leased to the instance that will send it once committed. */
export interface WrittenDelivery {
  id: string;
  webhook_id: string;
  /** The webhook's organization: whose share of the delivery slots the attempt takes. */
  org_id: string;
  event: WebhookEvent;
  payload: string;
  url: string;
  secret: string;
}

/** The delivery worker, as the service sees it. */
export interface DeliveryOutbox {
  /** The lease new deliveries are written with; null when nothing here will send them (they are polled). */
  leaseForNew(): { token: string; seconds: number } | null;
  /** Deliveries written with that lease, once their transaction has committed: sent now. */
  sendCommitted(deliveries: WrittenDelivery[]): void;
  /** Something became due now. */
  wake(): void;
}

export interface WebhookServiceOptions {
  caches: Pick<InstanceCaches, 'changing' | 'webhookDeployments'>;
  allowPrivateUrls: boolean;
  outbox?: DeliveryOutbox;
  /** Seals signing secrets with SECRETS_KEY as they are stored. */
  secrets?: Pick<StoredSecrets, 'storedWebhookSecret'>;
}

/** Ids made ahead for a run's deliveries; more matching webhooks than this get ids made in SQL. */
const IDS_PER_RUN = 8;

export function createWebhookService(db: Kysely<Database>, options: WebhookServiceOptions) {
  const { caches } = options;
  function checkTarget(url: string) {
    if (options.allowPrivateUrls) return;
    const refusal = forbiddenUrlMessage(new URL(url));
    if (refusal !== null) throw badRequest(refusal);
  }

  async function get(orgId: string, id: string) {
    const row = await repo.findWebhook(db, orgId, id);
    if (!row) throw webhookNotFound();
    return row;
  }

  return {
    async create(orgId: string, input: CreateWebhookInput) {
      checkTarget(input.url);
      if (!(await deploymentExists(db, orgId, input.deployment_id))) throw notFound('Deployment not found');
      const secret = generateSigningSecret();
      const id = newId('wh');
      const stored = options.secrets ? options.secrets.storedWebhookSecret(id, secret) : secret;
      const row = await caches.changing('webhooks', (trx) =>
        repo.insertWebhook(trx, {
          id,
          org_id: orgId,
          deployment_id: input.deployment_id,
          name: input.name,
          url: input.url,
          events: normaliseEvents(input.events),
          environment: input.environment,
          enabled: input.enabled,
          secret: stored,
        }),
      );
      return { ...toWebhook(row), secret };
    },

    async list(orgId: string, query: Page & { deployment_id?: string }) {
      if (query.deployment_id !== undefined && !(await deploymentExists(db, orgId, query.deployment_id))) {
        throw notFound('Deployment not found');
      }
      return (await repo.listWebhooks(db, orgId, query.deployment_id, query)).map(toWebhook);
    },

    get: async (orgId: string, id: string) => toWebhook(await get(orgId, id)),

    async update(orgId: string, id: string, input: UpdateWebhookInput) {
      if (input.url !== undefined) checkTarget(input.url);
      const row = await repo.updateWebhook(db, orgId, id, {
        ...input,
        ...(input.events ? { events: normaliseEvents(input.events) } : {}),
      });
      if (!row) throw webhookNotFound();
      return toWebhook(row);
    },

    async remove(orgId: string, id: string) {
      if (!(await caches.changing('webhooks', (trx) => repo.deleteWebhook(trx, orgId, id)))) throw webhookNotFound();
    },

    /** Whether runs of the deployment can have deliveries; a run of one without any ends without the webhook hook. */
    async hasWebhooks(deploymentId: string): Promise<boolean> {
      const known = caches.webhookDeployments.get(deploymentId);
      if (known !== undefined) return known;
      const generation = caches.webhookDeployments.generation;
      const found = await repo.deploymentHasWebhooks(db, deploymentId);
      caches.webhookDeployments.set(deploymentId, found, generation);
      return found;
    },

    /** A new secret signs every attempt from now on, retries of older deliveries included. */
    async regenerateSecret(orgId: string, id: string) {
      const secret = generateSigningSecret();
      const stored = options.secrets ? options.secrets.storedWebhookSecret(id, secret) : secret;
      if (!(await repo.updateWebhook(db, orgId, id, { secret: stored }))) throw webhookNotFound();
      return { secret };
    },

    async listDeliveries(orgId: string, id: string, page: Page) {
      await get(orgId, id);
      return (await repo.listDeliveries(db, id, page)).map(toDelivery);
    },

    async getDelivery(orgId: string, id: string, deliveryId: string) {
      await get(orgId, id);
      const row = await repo.findDelivery(db, id, deliveryId);
      if (!row) throw deliveryNotFound();
      const payload = await repo.findDeliveryPayload(db, deliveryId);
      const attempts = await repo.listAttempts(db, deliveryId);
      return {
        ...toDelivery(row),
        payload: JSON.parse(payload ?? '{}') as Record<string, unknown>,
        attempt_history: attempts.map((attempt) => ({ ...attempt, attempted_at: toIso(attempt.attempted_at) })),
      };
    },

    /** Sends the same delivery (same id, same body) again now, with a fresh retry schedule. */
    async redeliver(orgId: string, id: string, deliveryId: string) {
      const webhook = await get(orgId, id);
      if (!(await repo.findDelivery(db, id, deliveryId))) throw deliveryNotFound();
      if (!webhook.enabled) throw badRequest('Webhook is disabled; enable it before redelivering');
      await repo.requeueDelivery(db, id, deliveryId);
      options.outbox?.wake();
      return { id: deliveryId, status: 'pending' as const };
    },

    /**
     * A run's deliveries, as a part of the statement that ends it (RunEndHook.joinEnd): one per
     * enabled webhook of the run's deployment and environment that wants the event; with a lease,
     * held for its holder to send. `written` reads the part's result. Null for an end that sends nothing.
     */
    joinRunEnd(run: EndingRun, lease: { token: string; seconds: number } | null) {
      const event = eventForRun(run);
      if (event === null) return null;
      const part = repo.runDeliveriesInEnd({
        event,
        pieces: payloadPieces(event, run),
        ids: Array.from({ length: IDS_PER_RUN }, () => newId('dlv')),
        lease,
      });
      const written = (result: unknown): WrittenDelivery[] =>
        (result as Omit<WrittenDelivery, 'event'>[]).map((row) => ({ ...row, event }));
      return { ...part, written };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
