import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, processesWith, type RunContext, until } from '../runs/helpers.js';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from './helpers.js';

let ctx: RunContext;

beforeAll(async () => {
  ctx = await createRunContext({ DATA_DIR: tempDataDir(), BUILD_TIMEOUT_SECONDS: '8', MAX_CONCURRENT_BUILDS: '1' });
});
afterAll(async () => ctx?.close());

// Its own marker: another suite may run this file at the same time (CI runs the suites side by side), and its build
// step's process must not count here.
const MARKER = `crewd-limits-marker-${randomUUID()}`;

// npm runs the project's own preinstall script first: a build step that never ends.
const hanging = {
  'package.json': JSON.stringify({
    name: 'hanging',
    main: 'crew.js',
    scripts: { preinstall: `echo ${MARKER}; sleep 60` },
    dependencies: { local: 'file:./local' },
  }),
  'crew.js': '',
};

const quick = { 'crewd.json': JSON.stringify({ runtime: 'node', command: ['node', 'crew.js'] }), 'crew.js': '' };

describe('the build queue', () => {
  it('builds MAX_CONCURRENT_BUILDS at a time, each within BUILD_TIMEOUT_SECONDS', async () => {
    const deploymentId = await createDeployment(ctx, 'limits');
    const slow = (await upload(ctx, deploymentId, project(hanging))).json();
    const next = (await upload(ctx, deploymentId, project(quick))).json();
    const db = ctx.database.handle.db;
    const claimed = (id: string) =>
      db.selectFrom('deployment_versions').select('build_instance_id').where('id', '=', id).executeTakeFirstOrThrow();

    // The first holds the only slot; the second waits, unclaimed.
    await until(async () => (await claimed(slow.id)).build_instance_id !== null);
    expect((await claimed(next.id)).build_instance_id).toBeNull();

    const failed = await waitForBuild(ctx, deploymentId, slow.id, 60_000);
    expect(failed.status).toBe('failed');
    expect(failed.build_error).toMatch(/^installing the dependencies timed out\n/);
    expect(processesWith(MARKER)).toEqual([]);
    expect((await waitForBuild(ctx, deploymentId, next.id, 60_000)).status).toBe('ready');
  });
});
