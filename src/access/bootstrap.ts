import { type Kysely, sql } from 'kysely';
import { generateApiKey, hashSecret } from '../auth/keys.js';
import type { Database } from '../db/types.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import * as repo from './repository.js';

export const DEFAULT_ORG_ID = 'org_default';
export const DEFAULT_ORG_NAME = 'default';

/**
 * Makes sure organization `default` exists with an admin key. Returns the secret when one
 * was generated (to print once), null otherwise. Safe when several instances start at once.
 */
export async function bootstrapDefaultOrganization(
  db: Kysely<Database>,
  bootstrapKey: string | undefined,
): Promise<{ generatedKey: string | null }> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(7310001)`.execute(trx);
    await trx
      .insertInto('organizations')
      .values({ id: DEFAULT_ORG_ID, name: DEFAULT_ORG_NAME })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    if (await repo.findAdminKey(trx, DEFAULT_ORG_ID)) return { generatedKey: null };
    const secret = bootstrapKey ?? generateApiKey();
    const taken = await trx
      .selectFrom('api_keys')
      .select('id')
      .where('key_hash', '=', hashSecret(secret))
      .executeTakeFirst();
    if (taken) throw new AppError(500, 'internal', 'BOOTSTRAP_API_KEY is already used by another key');
    await repo.insertApiKey(trx, {
      id: newId('key'),
      org_id: DEFAULT_ORG_ID,
      name: 'admin',
      role: 'admin',
      key_hash: hashSecret(secret),
    });
    return { generatedKey: bootstrapKey ? null : secret };
  });
}
