import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { type OrganizationsWatch, organizationShare, watchOrganizations } from '../access/organization-share.js';
import { ClaimedJobs, type ClaimIntervals, createClaimLoop, type Look } from '../db/claim-loop.js';
import type { DatabaseHandle } from '../db/connect.js';
import type { Database } from '../db/types.js';
import { randomToken } from '../ids.js';
import * as repo from './repository.js';
import { retryDelaySeconds } from './retry.js';
import { createSender, type Sender } from './sender.js';
import type { DeliveryOutbox, WrittenDelivery } from './service.js';
import { deliveryHeaders } from './signer.js';

export interface DeliveryWorkerOptions {
  database: DatabaseHandle;
  logger: Logger;
  timeoutSeconds: number;
  retrySchedule: readonly number[];
  allowPrivateUrls: boolean;
  /** Longest wait between looks at the outbox (retries due, deliveries of other instances). */
  pollIntervalMs?: number;
  /** The claim loop's other intervals (tests shorten them). */
  intervals?: Partial<ClaimIntervals> | undefined;
  /** Claimed attempts in flight at once. */
  concurrency?: number;
  /** Whether the installation has several organizations (each then claims only its share); made here if not given. */
  organizations?: OrganizationsWatch;
  /** Told the outcome of every attempt (for metrics): `pending` means a retry is scheduled. */
  onAttempt?: (outcome: 'succeeded' | 'failed' | 'pending') => void;
  /** Opens a signing secret sealed with SECRETS_KEY. */
  openSecret?: (webhookId: string, stored: string) => string;
}

/** A look that claimed nothing while something is due (locked by another claimer) is followed by one after this. */
const BUSY_BACKOFF_MS = 25;
/** On shutdown, attempts in flight get this long to finish before they are aborted and released. */
const SHUTDOWN_GRACE_MS = 2_000;

type Sendable = repo.ClaimedDelivery;

/**
 * The outbox worker: sends deliveries once their run-ending transactions commit, leases due ones
 * (retries, other instances' leftovers) with SKIP LOCKED, signs each attempt, records it and
 * schedules the next. Leases make it safe beside other instances and resumable after a crash.
 */
export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const { database, logger, retrySchedule } = options;
  const db: Kysely<Database> = database.db;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const concurrency = options.concurrency ?? 32;
  // Long enough that a live attempt (bounded by the timeout) always ends before its lease does.
  const leaseSeconds = options.timeoutSeconds * 3 + 10;

  let sender: Sender | null = null;
  let running = false;
  let abort = new AbortController();
  /** The lease this instance writes new deliveries with. */
  let ownToken = randomToken(16);
  const jobs = new ClaimedJobs(concurrency, () => loop.wake());
  const organizations = options.organizations ?? watchOrganizations(db);
  /** Attempts in flight here, by organization: a look claims an organization's retries only within its share. */
  const holds = new Map<string, number>();
  const loop = createClaimLoop({
    name: 'webhook deliveries',
    logger,
    intervals: {
      idleMs: pollIntervalMs,
      busyMs: BUSY_BACKOFF_MS,
      backoffMs: pollIntervalMs,
      maxBackoffMs: pollIntervalMs * 4,
      ...options.intervals,
    },
    look,
  });

  async function attempt(delivery: Sendable, leaseToken: string, active: Sender): Promise<void> {
    if (!delivery.enabled) {
      await repo.closeWithoutAttempt(db, delivery.id, leaseToken, 'Webhook is disabled');
      return;
    }
    const attemptedAt = new Date();
    let result: Awaited<ReturnType<Sender['send']>>;
    try {
      result = await active.send({
        url: delivery.url,
        headers: deliveryHeaders({
          secret: options.openSecret ? options.openSecret(delivery.webhook_id, delivery.secret) : delivery.secret,
          event: delivery.event,
          deliveryId: delivery.id,
          body: delivery.payload,
          now: attemptedAt,
        }),
        body: delivery.payload,
        signal: abort.signal,
      });
    } catch {
      // Aborted by shutdown: give the delivery back untouched so a restart resumes it at once.
      await repo.releaseLease(db, delivery.id, leaseToken);
      return;
    }

    const gone = result.responseStatus === 410;
    const succeeded = result.errorMessage === null;
    const retryIn = succeeded || gone ? null : retryDelaySeconds(retrySchedule, delivery.cycle_attempts + 1);
    const outcome: repo.AttemptOutcome = {
      status: succeeded ? 'succeeded' : retryIn === null ? 'failed' : 'pending',
      responseStatus: result.responseStatus,
      errorMessage: gone ? 'Receiver answered 410 Gone; the webhook has been disabled' : result.errorMessage,
      attemptedAt,
      durationMs: result.durationMs,
      retryInSeconds: retryIn,
    };
    await db.transaction().execute(async (trx) => {
      const recorded = await repo.recordAttempt(trx, delivery, leaseToken, outcome);
      if (recorded && gone) await repo.disableWebhook(trx, delivery.webhook_id);
    });
    options.onAttempt?.(outcome.status);
    if (gone) logger.warn({ webhookId: delivery.webhook_id }, 'webhook disabled: receiver answered 410 Gone');
    // The loop's next look was timed before this retry existed; let it count the retry in.
    if (outcome.status === 'pending') loop.wake();
  }

  function start(delivery: Sendable, leaseToken: string) {
    if (!sender) return;
    const orgId = delivery.org_id;
    holds.set(orgId, (holds.get(orgId) ?? 0) + 1);
    organizations.sawOrganizations(holds.keys());
    const ended = attempt(delivery, leaseToken, sender)
      .catch((error: unknown) => {
        // The lease expires and a later look retries; nothing is lost.
        logger.error({ err: error, deliveryId: delivery.id }, 'recording a webhook delivery failed');
      })
      .finally(() => {
        const held = holds.get(orgId) ?? 1;
        if (held > 1) holds.set(orgId, held - 1);
        else holds.delete(orgId);
        // Its organization's due retries were passed over while it held its share.
        if (held >= organizationShare(concurrency, organizations.several)) loop.wake();
      });
    jobs.add(ended);
  }

  /**
   * Slots in use, each organization's attempts counted up to its share: first attempts go out at once, past the
   * share too, and those beyond it must not keep other organizations' retries from their slots.
   */
  function slotsInUse(share: number): number {
    let used = 0;
    for (const held of holds.values()) used += Math.min(held, share);
    return used;
  }

  /**
   * One look at the outbox: claims the due deliveries there is room for and starts them, an organization's only
   * while it holds less than its share of the slots (CONTRACTS §12), so that one whose receivers hang until the
   * timeout cannot hold every slot and keep other organizations' retries waiting.
   */
  async function look(): Promise<Look> {
    const share = organizationShare(concurrency, await organizations.current());
    const free = concurrency - slotsInUse(share);
    if (free <= 0) return { kind: 'full' };
    const leaseToken = randomToken(16);
    const claimed = await repo.claimDue(db, { limit: free, share, holds }, leaseToken, leaseSeconds);
    for (const delivery of claimed) start(delivery, leaseToken);
    if (claimed.length === free) return { kind: 'more' };
    const atShare = [...holds].filter(([, held]) => held >= share).map(([orgId]) => orgId);
    const due = await repo.secondsUntilNextDue(db, atShare);
    return { kind: 'done', claimed: claimed.length, dueAt: due === null ? null : Date.now() + Math.ceil(due * 1000) };
  }

  const outbox: DeliveryOutbox = {
    leaseForNew: () => (running ? { token: ownToken, seconds: leaseSeconds } : null),
    sendCommitted(deliveries: WrittenDelivery[]) {
      // Written under this incarnation's lease; after a restart the lease lapses and any worker claims them.
      if (!running) return;
      for (const delivery of deliveries) {
        start({ ...delivery, attempts: 0, cycle_attempts: 0, enabled: true }, ownToken);
      }
    },
    wake: () => setImmediate(loop.wake),
  };

  return {
    outbox,

    async start() {
      if (running) return;
      running = true;
      abort = new AbortController();
      ownToken = randomToken(16);
      sender = createSender({ timeoutSeconds: options.timeoutSeconds, allowPrivateUrls: options.allowPrivateUrls });
      loop.start();
    },

    async stop() {
      if (!running) return;
      running = false;
      await loop.stop();
      const grace = new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref());
      await Promise.race([Promise.allSettled(jobs.current()), grace]);
      abort.abort();
      await jobs.settled();
      await sender?.close();
      sender = null;
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
