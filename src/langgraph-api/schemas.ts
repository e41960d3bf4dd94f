import { z } from 'zod';
import { isoDate } from '../http/pagination.js';

/** Field shapes of the Agent Server API (the official clients' types). Bodies are lenient: unknown fields are ignored. */
export const jsonObject = z.record(z.string(), z.unknown());
export const optionalObject = jsonObject.nullish().transform((value) => value ?? undefined);
export const limitField = (fallback: number) =>
  z
    .number()
    .int()
    .min(1)
    .max(1000)
    .nullish()
    .transform((v) => v ?? fallback);
export const offsetField = z
  .number()
  .int()
  .min(0)
  .nullish()
  .transform((v) => v ?? 0);
export const detailSchema = z.object({ detail: z.string() }).meta({ id: 'LangGraphError' });
export const errors = { 404: detailSchema, 409: detailSchema, 422: detailSchema };

export const assistantSchema = z
  .object({
    assistant_id: z.string(),
    graph_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    config: jsonObject,
    context: jsonObject,
    metadata: jsonObject,
    version: z.number().int(),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .meta({ id: 'LangGraphAssistant' });

export const assistantVersionSchema = assistantSchema
  .omit({ updated_at: true })
  .meta({ id: 'LangGraphAssistantVersion' });

export const assistantParams = z.object({ assistant_id: z.string() });

export const createAssistantBody = z.object({
  graph_id: z.string().min(1, 'must not be empty'),
  assistant_id: z
    .uuid({ message: 'must be a UUID' })
    .nullish()
    .transform((v) => v ?? undefined),
  config: optionalObject,
  context: optionalObject,
  metadata: optionalObject,
  if_exists: z
    .enum(['raise', 'do_nothing'])
    .nullish()
    .transform((v) => v ?? 'raise'),
  name: z
    .string()
    .nullish()
    .transform((v) => v ?? undefined),
  description: z.string().nullish(),
});

export const patchAssistantBody = z.object({
  graph_id: z
    .string()
    .min(1)
    .nullish()
    .transform((v) => v ?? undefined),
  config: optionalObject,
  context: optionalObject,
  metadata: optionalObject,
  name: z
    .string()
    .nullish()
    .transform((v) => v ?? undefined),
  description: z.string().nullish(),
});

export const searchAssistantsBody = z.object({
  graph_id: z
    .string()
    .nullish()
    .transform((v) => v ?? undefined),
  metadata: optionalObject,
  name: z
    .string()
    .nullish()
    .transform((v) => v ?? undefined),
  limit: limitField(10),
  offset: offsetField,
});

export const countAssistantsBody = searchAssistantsBody.omit({ limit: true, offset: true });

export const threadStatus = z.enum(['idle', 'busy', 'interrupted', 'error']);

export const interruptSchema = z.object({ value: z.unknown(), id: z.string() });

export const threadSchema = z
  .object({
    thread_id: z.string(),
    created_at: isoDate,
    updated_at: isoDate,
    metadata: jsonObject,
    status: threadStatus,
    values: jsonObject.nullable(),
    interrupts: z.record(z.string(), z.array(interruptSchema)),
    config: jsonObject,
    error: z.unknown().nullable(),
  })
  .meta({ id: 'LangGraphThread' });

export const checkpointSchema = z.object({
  thread_id: z.string(),
  checkpoint_ns: z.string(),
  checkpoint_id: z.string(),
  checkpoint_map: jsonObject.nullable(),
});

export const threadStateSchema = z
  .object({
    values: z.union([jsonObject, z.array(z.unknown())]),
    next: z.array(z.string()),
    tasks: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        path: z.array(z.unknown()),
        error: z.string().nullable(),
        interrupts: z.array(interruptSchema),
        checkpoint: checkpointSchema.nullable(),
        state: z.unknown().nullable(),
        result: z.unknown().nullable(),
      }),
    ),
    checkpoint: checkpointSchema,
    metadata: jsonObject,
    created_at: isoDate.nullable(),
    parent_checkpoint: checkpointSchema.nullable(),
    interrupts: z.array(interruptSchema),
    checkpoint_id: z.string().describe('deprecated: checkpoint.checkpoint_id, as the official server sends it'),
    parent_checkpoint_id: z
      .string()
      .nullable()
      .describe('deprecated: parent_checkpoint.checkpoint_id, as the official server sends it'),
  })
  .meta({ id: 'LangGraphThreadState' });
