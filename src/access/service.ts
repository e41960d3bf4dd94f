import type { Kysely } from 'kysely';
import { generateApiKey, hashSecret } from '../auth/keys.js';
import type { InstanceCaches } from '../cache/instance-caches.js';
import type { Database, Role } from '../db/types.js';
import { conflict, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import * as repo from './repository.js';

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

export interface AccessOptions {
  /** Why organizations beyond the default one may not be made (runners without isolation); null: they may. */
  organizationsRefused?: string | null;
  /** An organization was made: the run queue's shares between organizations apply. */
  organizationCreated?: () => void;
}

/**
 * Why no further organization may be made: with runners as plain processes, one organization's
 * crews can read another's data, unless the operator said RUNNER_SANDBOX=off knowing it (CONTRACTS §12).
 */
export function organizationsRefused(sandboxKind: 'bubblewrap' | 'none', runnerSandbox: string): string | null {
  if (sandboxKind !== 'none' || runnerSandbox === 'off') return null;
  return (
    'Runners run as plain processes (RUNNER_SANDBOX=auto found no usable bubblewrap), so the crews of one ' +
    "organization could read another's variables and data: install bubblewrap (bwrap on PATH) and restart, or set " +
    'RUNNER_SANDBOX=off to accept organizations without isolation (see "Runner isolation" in docs/operations.md)'
  );
}

export function createAccessService(
  db: Kysely<Database>,
  caches: Pick<InstanceCaches, 'changing'>,
  options: AccessOptions = {},
) {
  return {
    async createOrganization(name: string) {
      if (options.organizationsRefused) throw conflict(options.organizationsRefused);
      const created = await db.transaction().execute(async (trx) => {
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
      options.organizationCreated?.();
      return created;
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

    /** From the next request on the key gets 401, on every instance (the key cache is dropped). */
    async deleteApiKey(orgId: string, id: string) {
      const deleted = await caches.changing('api_keys', (trx) => repo.deleteApiKey(trx, orgId, id));
      if (!deleted) throw notFound('API key not found');
    },
  };
}

export type AccessService = ReturnType<typeof createAccessService>;
