import { generateApiKey, hashSecret } from '../auth/keys.js';
import type { Db } from '../db/types.js';
import { newId } from '../ids.js';
import { DEFAULT_ORG_ID, DEFAULT_ORG_NAME } from './bootstrap.js';
import * as repo from './repository.js';

export class OrganizationNotFound extends Error {}

/**
 * A new admin key for an organization named by its name or id, made straight in the database (for an operator on
 * the service's machine who lost the key `npm start` printed). Answers the secret, which is stored only as a hash.
 */
export async function createAdminKey(
  db: Db,
  organization: string,
  keyName: string,
): Promise<{ orgId: string; key: string }> {
  if (organization === DEFAULT_ORG_NAME) {
    // A database the service never started on has no organization yet: the first start would make this one.
    await db
      .insertInto('organizations')
      .values({ id: DEFAULT_ORG_ID, name: DEFAULT_ORG_NAME })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }
  const org = await db
    .selectFrom('organizations')
    .select('id')
    .where((eb) => eb.or([eb('id', '=', organization), eb('name', '=', organization)]))
    .executeTakeFirst();
  if (!org) throw new OrganizationNotFound(`no organization is named or has the id "${organization}"`);
  const key = generateApiKey();
  await repo.insertApiKey(db, {
    id: newId('key'),
    org_id: org.id,
    name: keyName,
    role: 'admin',
    key_hash: hashSecret(key),
  });
  return { orgId: org.id, key };
}
