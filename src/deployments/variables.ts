import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { notFound } from '../errors.js';
import type { StoredVariable } from './launch-version.js';
import * as deploymentsRepo from './repository.js';
import { createSecretBox } from './secret-box.js';

/** Stops the start: encrypted variables cannot be read with the SECRETS_KEY given (or without one). */
export class SecretsKeyError extends Error {}

export type { StoredVariable };

/** What a variable's sealed value is bound to: its deployment and name. */
export const variableContext = (deploymentId: string, name: string) => `${deploymentId}/${name}`;
const contextOf = variableContext;

/**
 * Deployment variables (CONTRACTS §8): the crew's secrets, handed to its runners. Values are
 * written, never read back through the API; with SECRETS_KEY they are stored encrypted.
 */
export function createVariableService(db: Kysely<Database>, secretsKey: string | undefined) {
  const box = secretsKey ? createSecretBox(secretsKey) : null;

  async function names(deploymentId: string): Promise<string[]> {
    const rows = await db
      .selectFrom('deployment_variables')
      .select('name')
      .where('deployment_id', '=', deploymentId)
      .orderBy('name')
      .execute();
    return rows.map((row) => row.name);
  }

  async function requireDeployment(orgId: string, deploymentId: string): Promise<void> {
    if (!(await deploymentsRepo.deploymentExists(db, orgId, deploymentId))) throw notFound('Deployment not found');
  }

  return {
    /** At start: encrypted values need the key they were sealed with. */
    async checkKey(): Promise<void> {
      const sample = await db
        .selectFrom('deployment_variables')
        .select(['deployment_id', 'name', 'value'])
        .where('encrypted', '=', true)
        .limit(1)
        .executeTakeFirst();
      if (!sample) return;
      if (!box) {
        throw new SecretsKeyError(
          'SECRETS_KEY is not set, but deployment variables are stored encrypted: set the key they were stored with',
        );
      }
      try {
        box.open(sample.value, contextOf(sample.deployment_id, sample.name));
      } catch {
        throw new SecretsKeyError('SECRETS_KEY is not the key the deployment variables were stored with: set that key');
      }
    },

    async list(orgId: string, deploymentId: string) {
      await requireDeployment(orgId, deploymentId);
      return { names: await names(deploymentId) };
    },

    /** Sets and removes (null) in one transaction; answers every name the deployment has. */
    async put(orgId: string, deploymentId: string, variables: Record<string, string | null>) {
      await db.transaction().execute(async (trx) => {
        if (!(await deploymentsRepo.lockDeployment(trx, orgId, deploymentId))) throw notFound('Deployment not found');
        for (const [name, value] of Object.entries(variables)) {
          if (value === null) {
            await trx
              .deleteFrom('deployment_variables')
              .where('deployment_id', '=', deploymentId)
              .where('name', '=', name)
              .execute();
            continue;
          }
          const stored = box ? box.seal(value, contextOf(deploymentId, name)) : value;
          const row = { value: stored, encrypted: box !== null, updated_at: new Date() };
          await trx
            .insertInto('deployment_variables')
            .values({ deployment_id: deploymentId, name, ...row })
            .onConflict((oc) => oc.columns(['deployment_id', 'name']).doUpdateSet(row))
            .execute();
        }
      });
      return { names: await names(deploymentId) };
    },

    /** The values of stored rows, for a runner's environment only. */
    open(deploymentId: string, rows: readonly StoredVariable[]): Record<string, string> {
      const values: Record<string, string> = {};
      for (const row of rows) {
        if (!row.encrypted) values[row.name] = row.value;
        else if (box) values[row.name] = box.open(row.value, contextOf(deploymentId, row.name));
        else throw new SecretsKeyError(`variable ${row.name} is encrypted and SECRETS_KEY is not set`);
      }
      return values;
    },
  };
}

export type VariableService = ReturnType<typeof createVariableService>;
