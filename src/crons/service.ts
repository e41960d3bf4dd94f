import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/types.js';
import { deploymentExists } from '../deployments/repository.js';
import { badRequest, limitExceeded, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import * as repo from './repository.js';
import { nextTime, shortestGapSeconds } from './schedule.js';
import type { CreateCronInput, UpdateCronInput } from './schemas.js';

const cronNotFound = () => notFound('Cron not found');

function toCron(row: repo.CronRecord) {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    schedule: row.schedule,
    timezone: row.timezone,
    input: row.input,
    environment: row.environment,
    thread_id: row.thread_id,
    multitask_strategy: row.multitask_strategy,
    enabled: row.enabled,
    next_run_at: toIso(row.next_run_at),
    last_run_at: toIso(row.last_run_at),
    last_run_id: row.last_run_id,
    last_error: row.last_error,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/** The operator's limits on crons (CONTRACTS §12 "Limits"). */
export interface CronLimits {
  /** CRON_MIN_INTERVAL_SECONDS */
  minIntervalSeconds: number;
  /** MAX_CRONS_PER_ORGANIZATION */
  maxPerOrganization: number;
}

/** How many of a schedule's next due times are compared to find its shortest interval. */
const DUE_TIMES_COMPARED = 10;

function checkInterval(schedule: string, timezone: string, limits: CronLimits): void {
  const gap = shortestGapSeconds(schedule, timezone, new Date(), DUE_TIMES_COMPARED);
  if (gap !== null && gap < limits.minIntervalSeconds) {
    throw limitExceeded(
      `schedule: "${schedule}" falls due every ${gap} s, more often than CRON_MIN_INTERVAL_SECONDS (${limits.minIntervalSeconds} s) allows`,
    );
  }
}

/** The first due time from now on; null while disabled. A schedule that never comes again is refused. */
function firstDue(schedule: string, timezone: string, enabled: boolean): Date | null {
  const next = nextTime(schedule, timezone, new Date());
  if (!next) throw badRequest(`schedule: "${schedule}" never falls due`);
  return enabled ? next : null;
}

/**
 * Crons: a deployment's runs on a schedule. Any key of the organization manages them. Every
 * change that can move the next due time calls `changed`, so the schedulers of all instances look again.
 */
export function createCronService(db: Kysely<Database>, options: { changed: () => void; limits: CronLimits }) {
  const { limits } = options;

  async function checkThread(
    on: Kysely<Database> | Transaction<Database>,
    orgId: string,
    threadId: string,
    deploymentId: string,
  ): Promise<void> {
    const thread = await repo.findThreadDeployment(on, orgId, threadId);
    if (!thread) throw notFound('Thread not found');
    if (thread.deployment_id !== deploymentId) {
      throw badRequest(`thread_id: thread ${threadId} belongs to deployment ${thread.deployment_id}`);
    }
  }

  return {
    /** `made.id`: the id a cron made through the LangGraph API gets (a UUID, CONTRACTS §14). */
    async create(orgId: string, input: CreateCronInput, made: { id?: string } = {}) {
      if (!(await deploymentExists(db, orgId, input.deployment_id))) throw notFound('Deployment not found');
      if (input.thread_id) await checkThread(db, orgId, input.thread_id, input.deployment_id);
      checkInterval(input.schedule, input.timezone, limits);
      const next_run_at = firstDue(input.schedule, input.timezone, input.enabled);
      const row = await db.transaction().execute(async (trx) => {
        // Creates of one organization take turns here, so that two at once cannot both pass the count.
        if ((await repo.countCronsLocking(trx, orgId)) >= limits.maxPerOrganization) {
          throw limitExceeded(
            `The organization has ${limits.maxPerOrganization} crons, as many as MAX_CRONS_PER_ORGANIZATION allows: delete one first`,
          );
        }
        return repo.insertCron(trx, {
          id: made.id ?? newId('cron'),
          org_id: orgId,
          deployment_id: input.deployment_id,
          schedule: input.schedule,
          timezone: input.timezone,
          input: input.input,
          environment: input.environment,
          thread_id: input.thread_id ?? null,
          multitask_strategy: input.multitask_strategy,
          enabled: input.enabled,
          next_run_at,
        });
      });
      options.changed();
      return toCron(row);
    },

    async list(orgId: string, query: { deployment_id?: string | undefined; limit: number; offset: number }) {
      if (query.deployment_id !== undefined && !(await deploymentExists(db, orgId, query.deployment_id))) {
        throw notFound('Deployment not found');
      }
      return (await repo.listCrons(db, orgId, query.deployment_id, query)).map(toCron);
    },

    async get(orgId: string, id: string) {
      const row = await repo.findCron(db, orgId, id);
      if (!row) throw cronNotFound();
      return toCron(row);
    },

    /** Changes any field but the deployment; a new schedule, zone or enabling counts from now. */
    async update(orgId: string, id: string, changes: UpdateCronInput) {
      const row = await db.transaction().execute(async (trx) => {
        const current = await repo.findCronForUpdate(trx, orgId, id);
        if (!current) throw cronNotFound();
        if (changes.thread_id) await checkThread(trx, orgId, changes.thread_id, current.deployment_id);
        const schedule = changes.schedule ?? current.schedule;
        const timezone = changes.timezone ?? current.timezone;
        const enabled = changes.enabled ?? current.enabled;
        const timing = changes.schedule !== undefined || changes.timezone !== undefined || enabled !== current.enabled;
        if (changes.schedule !== undefined || changes.timezone !== undefined) checkInterval(schedule, timezone, limits);
        return repo.updateCron(trx, id, {
          ...changes,
          ...(timing ? { next_run_at: firstDue(schedule, timezone, enabled) } : {}),
        });
      });
      options.changed();
      return toCron(row);
    },

    async remove(orgId: string, id: string) {
      if (!(await repo.deleteCron(db, orgId, id))) throw cronNotFound();
    },
  };
}

export type CronService = ReturnType<typeof createCronService>;
