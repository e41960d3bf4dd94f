import { z } from 'zod';

export const errorBodySchema = z
  .object({
    error: z.object({
      message: z.string(),
      code: z.string(),
    }),
  })
  .meta({ id: 'Error' });

/** Error responses every authenticated route can give; spread into a route's `response`. */
export const commonErrors = {
  400: errorBodySchema,
  401: errorBodySchema,
  403: errorBodySchema,
  404: errorBodySchema,
  413: errorBodySchema,
  /** Request limits (src/auth/rate-limit.ts) and event-stream caps. */
  429: errorBodySchema,
  503: errorBodySchema,
  500: errorBodySchema,
} as const;

export const conflictError = { 409: errorBodySchema } as const;

/** An operator's limit refused the request (`limit_exceeded`); the message names the setting. */
export const limitError = { 422: errorBodySchema } as const;
