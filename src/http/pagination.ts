import { z } from 'zod';

/**
 * `limit`/`offset` query members: non-negative integers; a limit above `max` is clamped to it
 * (the reply reports the limit used), a negative or non-numeric value is a 400.
 */
export function paginationQuery(defaultLimit: number, max = 1000) {
  return {
    limit: z.coerce
      .number({ message: 'must be a number' })
      .int('must be an integer')
      .min(0, 'must not be negative')
      .default(defaultLimit)
      .transform((value) => Math.min(value, max))
      .describe(`default ${defaultLimit}, at most ${max} (larger values are clamped)`),
    offset: z.coerce
      .number({ message: 'must be a number' })
      .int('must be an integer')
      .min(0, 'must not be negative')
      .default(0),
  };
}

/** A timestamp in a reply: services turn Dates into ISO 8601 strings with `toIso`. */
export const isoDate = z.string().describe('ISO 8601 timestamp, UTC, with milliseconds');

export function toIso(date: Date): string;
export function toIso(date: Date | null): string | null;
export function toIso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}
