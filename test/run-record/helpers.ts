import { bootstrapDefaultOrganization, DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import type { Db } from '../../src/db/types.js';
import { insertDeployment, insertVersion } from '../../src/deployments/repository.js';
import { newId } from '../../src/ids.js';
import { insertRun } from '../../src/run-record/repository.js';

/** A run of the default organization's version, running since now, with no thread: its id. */
export async function insertRunningRun(db: Db, deploymentId: string, versionId: string): Promise<string> {
  const id = newId('run');
  await insertRun(db, {
    id,
    org_id: DEFAULT_ORG_ID,
    deployment_id: deploymentId,
    version_id: versionId,
    environment: 'production',
    thread_id: null,
    status: 'running',
    input: {},
    instance_id: null,
    created_at: new Date(),
    started_at: new Date(),
  });
  return id;
}

/** The default organization, and a deployment of it named `name` with version 1 (`true`): their ids. */
export async function insertDefaultVersion(db: Db, name: string): Promise<{ deploymentId: string; versionId: string }> {
  const deploymentId = newId('dep');
  const versionId = newId('ver');
  await bootstrapDefaultOrganization(db, undefined);
  await insertDeployment(db, { id: deploymentId, org_id: DEFAULT_ORG_ID, name });
  await insertVersion(db, {
    id: versionId,
    deployment_id: deploymentId,
    number: 1,
    command: ['true'],
    cwd: null,
    env: {},
    timeout_seconds: null,
  });
  return { deploymentId, versionId };
}
