import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { scheduleField, timezoneField } from '../crons/schemas.js';
import type { CronService } from '../crons/service.js';
import { notFound } from '../errors.js';
import { bindThreadDeployment } from '../threads/repository.js';
import type { LangGraphDeps } from './deps.js';
import { answerPage } from './pagination.js';
import { errors, jsonObject, limitField, offsetField, optionalObject } from './schemas.js';
import { findThread } from './threads-repo.js';
import { defaultAssistantId, resolveAssistant, runEnvironment } from './translate.js';

const tags = ['langgraph'];

const cronSchema = z
  .object({
    cron_id: z.string(),
    assistant_id: z.string(),
    thread_id: z.string().nullable(),
    on_run_completed: z.string().nullable(),
    end_time: z.string().nullable(),
    schedule: z.string(),
    timezone: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    payload: jsonObject,
    user_id: z.string().nullable(),
    next_run_date: z.string().nullable(),
    metadata: jsonObject,
    enabled: z.boolean(),
  })
  .meta({ id: 'LangGraphCron' });

const createBody = z.object({
  assistant_id: z.string().min(1),
  schedule: scheduleField,
  timezone: timezoneField.nullish().transform((v) => v ?? 'UTC'),
  input: optionalObject,
  config: optionalObject,
  metadata: optionalObject,
  enabled: z
    .boolean()
    .nullish()
    .transform((v) => v ?? true),
  multitask_strategy: z.enum(['reject', 'enqueue', 'interrupt', 'rollback']).nullish(),
});

type Cron = Awaited<ReturnType<CronService['get']>>;

/** A crewd cron as the SDKs read one: its payload is what each run starts with. */
function toLangGraphCron(cron: Cron) {
  const assistantId = defaultAssistantId(cron.deployment_id);
  return {
    cron_id: cron.id,
    assistant_id: assistantId,
    thread_id: cron.thread_id,
    on_run_completed: null,
    end_time: null,
    schedule: cron.schedule,
    timezone: cron.timezone,
    created_at: cron.created_at,
    updated_at: cron.updated_at,
    payload: { assistant_id: assistantId, input: cron.input },
    user_id: null,
    next_run_date: cron.next_run_at,
    metadata: {},
    enabled: cron.enabled,
  };
}

/** Crons (CONTRACTS §14): crewd's crons, with UUIDs when made here. */
export const cronRoutes: FastifyPluginAsyncZod<LangGraphDeps> = async (app, { db, services }) => {
  const { crons } = services;
  const org = (request: Parameters<typeof principalOf>[0]) => principalOf(request).orgId;

  async function create(orgId: string, body: z.output<typeof createBody>, threadId: string | null) {
    const resolved = await resolveAssistant(db, orgId, body.assistant_id);
    if (threadId) {
      const thread = await findThread(db, orgId, threadId);
      if (!thread) throw notFound(`Thread ${threadId} not found`);
      if (thread.deployment_id === null) await bindThreadDeployment(db, threadId, resolved.deployment.id);
    }
    const cron = await crons.create(
      orgId,
      {
        deployment_id: resolved.deployment.id,
        schedule: body.schedule,
        timezone: body.timezone,
        input: body.input ?? {},
        environment: runEnvironment(resolved, body.config),
        ...(threadId ? { thread_id: threadId } : {}),
        enabled: body.enabled,
        multitask_strategy: body.multitask_strategy ?? 'enqueue',
      },
      { id: randomUUID() },
    );
    return toLangGraphCron(cron);
  }

  /** The organization's crons (at most MAX_CRONS_PER_ORGANIZATION), filtered as the search asks. */
  async function matching(
    orgId: string,
    filter: { assistant_id?: string | undefined; thread_id?: string | undefined },
  ) {
    const deploymentId = filter.assistant_id
      ? (await resolveAssistant(db, orgId, filter.assistant_id)).deployment.id
      : undefined;
    const all = await crons.list(orgId, { deployment_id: deploymentId, limit: 1000, offset: 0 });
    return all.filter((cron) => !filter.thread_id || cron.thread_id === filter.thread_id).map(toLangGraphCron);
  }

  app.post(
    '/runs/crons',
    {
      schema: {
        tags,
        operationId: 'langgraphCreateCron',
        summary: "A cron that starts runs of an assistant's deployment",
        body: createBody,
        response: { 200: cronSchema, ...errors },
      },
    },
    async (request) => create(org(request), request.body, null),
  );

  app.post(
    '/threads/:thread_id/runs/crons',
    {
      schema: {
        tags,
        operationId: 'langgraphCreateThreadCron',
        summary: 'A cron that starts runs in a thread',
        params: z.object({ thread_id: z.string() }),
        body: createBody,
        response: { 200: cronSchema, ...errors },
      },
    },
    async (request) => create(org(request), request.body, request.params.thread_id),
  );

  const filterBody = z.object({
    assistant_id: z
      .string()
      .nullish()
      .transform((v) => v ?? undefined),
    thread_id: z
      .string()
      .nullish()
      .transform((v) => v ?? undefined),
  });

  app.post(
    '/runs/crons/search',
    {
      schema: {
        tags,
        operationId: 'langgraphSearchCrons',
        summary: 'Search crons',
        body: filterBody.extend({ limit: limitField(10), offset: offsetField }),
        response: { 200: z.array(cronSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { limit, offset, ...filter } = request.body;
      return answerPage(reply, (await matching(org(request), filter)).slice(offset), { limit, offset });
    },
  );

  app.post(
    '/runs/crons/count',
    {
      schema: {
        tags,
        operationId: 'langgraphCountCrons',
        summary: 'Count crons',
        body: filterBody,
        response: { 200: z.number().int(), ...errors },
      },
    },
    async (request) => (await matching(org(request), request.body)).length,
  );

  app.patch(
    '/runs/crons/:cron_id',
    {
      schema: {
        tags,
        operationId: 'langgraphUpdateCron',
        summary: "Change a cron's schedule, time zone, input or enabling",
        params: z.object({ cron_id: z.string() }),
        body: z.object({
          schedule: scheduleField.nullish(),
          timezone: timezoneField.nullish(),
          input: optionalObject,
          enabled: z.boolean().nullish(),
        }),
        response: { 200: cronSchema, ...errors },
      },
    },
    async (request) => {
      const { schedule, timezone, input, enabled } = request.body;
      const cron = await crons.update(org(request), request.params.cron_id, {
        deployment_id: undefined,
        ...(schedule ? { schedule } : {}),
        ...(timezone ? { timezone } : {}),
        ...(input ? { input } : {}),
        ...(typeof enabled === 'boolean' ? { enabled } : {}),
      });
      return toLangGraphCron(cron);
    },
  );

  app.delete(
    '/runs/crons/:cron_id',
    {
      schema: {
        tags,
        operationId: 'langgraphDeleteCron',
        summary: 'Delete a cron',
        params: z.object({ cron_id: z.string() }),
        response: { 204: z.null(), ...errors },
      },
    },
    async (request, reply) => {
      await crons.remove(org(request), request.params.cron_id);
      return reply.status(204).send(null);
    },
  );
};
