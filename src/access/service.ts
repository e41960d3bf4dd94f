import { type Kysely, sql } from 'kysely';
import { generateApiKey, hashSecret } from '../auth/keys.js';
import type { Database, Role } from '../db/types.js';
import { AppError, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import * as repo from './repository.js';

export const DEFAULT_ORG_ID = 'org_default';
export const DEFAULT_ORG_NAME = 'default';

const toOrganization = (row: { id: string; name: string; created_at: Date }) => ({
  id: row.id,
  name: row.name,
  created_at: toIso(row.created_at),
});

const toApiKey = (row: { id: string; name: string; role: Role; created_at: Date }) => ({
  id: row.id,
  name: row.name,
  role: row.role,
  created_at: toIso(row.created_at),
});

export function createAccessService(db: Kysely<Database>) {
  return {
    async createOrganization(name: string) {
      return db.transaction().execute(async (trx) => {
        const org = await repo.insertOrganization(trx, { id: newId('org'), name });
        const key = generateApiKey();
        const apiKey = await repo.insertApiKey(trx, {
          id: newId('key'),
          org_id: org.id,
          name: 'admin',
          role: 'admin',
          key_hash: hashSecret(key),
        });
        return { ...toOrganization(org), api_key: { id: apiKey.id, name: apiKey.name, role: apiKey.role, key } };
      });
    },

    listOrganizations: async (page: { limit: number; offset: number }) =>
      (await repo.listOrganizations(db, page)).map(toOrganization),

    async createApiKey(orgId: string, name: string, role: Role) {
      const key = generateApiKey();
      const row = await repo.insertApiKey(db, {
        id: newId('key'),
        org_id: orgId,
        name,
        role,
        key_hash: hashSecret(key),
      });
      return { ...toApiKey(row), key };
    },

    listApiKeys: async (orgId: string) => (await repo.listApiKeys(db, orgId)).map(toApiKey),

    async deleteApiKey(orgId: string, id: string) {
      if (!(await repo.deleteApiKey(db, orgId, id))) throw notFound('API key not found');
    },

    /**
     * Makes sure organization `default` exists with an admin key. Returns the secret when one
     * was generated (to print once), null otherwise. Safe when several instances start at once.
     */
    async bootstrap(bootstrapKey: string | undefined): Promise<{ generatedKey: string | null }> {
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
    },
  };
}

export type AccessService = ReturnType<typeof createAccessService>;
