import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/types.js';
import { createSecretBox } from './secret-box.js';
import { SecretsKeyError, variableContext } from './variables.js';

/** How a sealed webhook secret is stored: crewd makes secrets as `whsec_…`, so no plain one starts so. */
const SEALED_SECRET = 'sealed:';

const envContext = (versionId: string, name: string) => `${versionId}/env/${name}`;
const webhookContext = (webhookId: string) => `webhook/${webhookId}`;

/** Opened version envs kept, past which the memory starts afresh (a version's env never changes). */
const MAX_OPENED_ENVS = 10_000;

/**
 * With SECRETS_KEY, every secret crewd stores is sealed (AES-256-GCM, secret-box.ts): deployment
 * variables (variables.ts), the `env` of command versions and webhook signing secrets, as they are
 * written and, for values stored before the key was set, at start (`sealStored`).
 */
export function createStoredSecrets(secretsKey: string | undefined) {
  const box = secretsKey ? createSecretBox(secretsKey) : null;
  const openedEnvs = new Map<string, Record<string, string>>();

  function sealEnv(versionId: string, env: Record<string, string>): Record<string, string> {
    if (!box) return env;
    return Object.fromEntries(
      Object.entries(env).map(([name, value]) => [name, box.seal(value, envContext(versionId, name))]),
    );
  }

  function sealSecret(webhookId: string, secret: string): string {
    return box ? `${SEALED_SECRET}${box.seal(secret, webhookContext(webhookId))}` : secret;
  }

  function requireBox(what: string) {
    if (!box)
      throw new SecretsKeyError(
        `${what} is stored encrypted and SECRETS_KEY is not set: set the key it was stored with`,
      );
    return box;
  }

  /** Sealed envs and secrets need the key they were sealed with (variables.ts checks the variables). */
  async function checkKey(db: Kysely<Database>): Promise<void> {
    const version = await db
      .selectFrom('deployment_versions')
      .select(['id', 'env'])
      .where('env_encrypted', '=', true)
      .where(sql<boolean>`env::text <> '{}'`)
      .limit(1)
      .executeTakeFirst();
    const webhook = await db
      .selectFrom('webhooks')
      .select(['id', 'secret'])
      .where('secret', 'like', `${SEALED_SECRET}%`)
      .limit(1)
      .executeTakeFirst();
    const [name, value] = Object.entries(version?.env ?? {})[0] ?? [];
    try {
      if (version && name !== undefined && value !== undefined)
        requireBox('Version env').open(value, envContext(version.id, name));
      if (webhook)
        requireBox('A webhook secret').open(webhook.secret.slice(SEALED_SECRET.length), webhookContext(webhook.id));
    } catch (error) {
      if (error instanceof SecretsKeyError) throw error;
      throw new SecretsKeyError('SECRETS_KEY is not the key the stored secrets were sealed with: set that key');
    }
  }

  return {
    /** A version's `env` as stored: its values sealed when SECRETS_KEY is set. */
    storedEnv(versionId: string, env: Record<string, string>) {
      return { env: sealEnv(versionId, env), env_encrypted: box !== null };
    },

    /** A version's `env` for its runner, opened once per version (run starts read it every time). */
    openEnv(version: { id: string; env: Record<string, string>; env_encrypted?: boolean | undefined }) {
      if (!version.env_encrypted) return version.env;
      const known = openedEnvs.get(version.id);
      if (known) return known;
      const key = requireBox(`The env of version ${version.id}`);
      const env = Object.fromEntries(
        Object.entries(version.env).map(([name, value]) => [name, key.open(value, envContext(version.id, name))]),
      );
      if (openedEnvs.size >= MAX_OPENED_ENVS) openedEnvs.clear();
      openedEnvs.set(version.id, env);
      return env;
    },

    storedWebhookSecret: sealSecret,

    /** The signing secret of a webhook, as its deliveries are signed. */
    openWebhookSecret(webhookId: string, stored: string): string {
      if (!stored.startsWith(SEALED_SECRET)) return stored;
      return requireBox(`The secret of webhook ${webhookId}`).open(
        stored.slice(SEALED_SECRET.length),
        webhookContext(webhookId),
      );
    },

    /**
     * At start with SECRETS_KEY: seals, in one transaction, every value stored in plain text (before
     * the key was set); those already sealed stay as they are, so it can run at every start.
     */
    async sealStored(db: Kysely<Database>): Promise<{ variables: number; versions: number; webhooks: number }> {
      await checkKey(db);
      if (!box) return { variables: 0, versions: 0, webhooks: 0 };
      return db.transaction().execute(async (trx) => {
        const variables = await trx
          .selectFrom('deployment_variables')
          .select(['deployment_id', 'name', 'value'])
          .where('encrypted', '=', false)
          .forUpdate()
          .execute();
        for (const { deployment_id, name, value } of variables) {
          await trx
            .updateTable('deployment_variables')
            .set({ value: box.seal(value, variableContext(deployment_id, name)), encrypted: true })
            .where('deployment_id', '=', deployment_id)
            .where('name', '=', name)
            .execute();
        }
        const versions = await trx
          .selectFrom('deployment_versions')
          .select(['id', 'env'])
          .where('env_encrypted', '=', false)
          .forUpdate()
          .execute();
        for (const { id, env } of versions) {
          await trx
            .updateTable('deployment_versions')
            .set({ env: JSON.stringify(sealEnv(id, env)), env_encrypted: true })
            .where('id', '=', id)
            .execute();
        }
        const webhooks = await trx
          .selectFrom('webhooks')
          .select(['id', 'secret'])
          .where('secret', 'not like', `${SEALED_SECRET}%`)
          .forUpdate()
          .execute();
        for (const { id, secret } of webhooks) {
          await trx
            .updateTable('webhooks')
            .set({ secret: sealSecret(id, secret) })
            .where('id', '=', id)
            .execute();
        }
        return { variables: variables.length, versions: versions.length, webhooks: webhooks.length };
      });
    },
  };
}

export type StoredSecrets = ReturnType<typeof createStoredSecrets>;
