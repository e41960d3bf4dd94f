import { readFileSync } from 'node:fs';
import { CliError } from './api.js';

/** `--input '{"a":1}'` or `--input @file.json` (any such option): a JSON object; `{}` when not given. */
export function jsonObjectOption(option: string, value: string | undefined): Record<string, unknown> {
  if (value === undefined) return {};
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch (error) {
      throw new CliError(`${option} ${value}: cannot read the file (${(error as Error).message})`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError(`${option}: not valid JSON; give a JSON object such as '{"topic": "AI"}' or @file.json`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CliError(`${option}: must be a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/** `--limit 20`: a whole number from 1 to 1000. */
export function limitOption(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new CliError('--limit: give a number from 1 to 1000');
  return limit;
}
