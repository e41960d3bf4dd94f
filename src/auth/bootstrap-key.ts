import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { hashSecret } from './keys.js';

/**
 * True when BOOTSTRAP_API_KEY is set but no key has its secret: organization `default` already
 * had an admin key, so the bootstrap key was never created and requests with it answer 401.
 */
export async function isBootstrapKeyIgnored(db: Kysely<Database>, bootstrapKey: string | undefined): Promise<boolean> {
  if (bootstrapKey === undefined) return false;
  const found = await db
    .selectFrom('api_keys')
    .select('id')
    .where('key_hash', '=', hashSecret(bootstrapKey))
    .executeTakeFirst();
  return found === undefined;
}
