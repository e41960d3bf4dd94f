import type { Migration } from 'kysely';
import * as foundation from './20261121_0001_foundation.js';

/** Every migration, in order. A landed migration is frozen: changes go into a new file. */
export const migrations: Record<string, Migration> = {
  '20261121_0001_foundation': foundation,
};
