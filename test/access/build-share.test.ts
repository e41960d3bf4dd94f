import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { project, tempDataDir, waitForBuild } from '../builds/helpers.js';
import type { TestContext } from '../helpers/app.js';
import { otherOrganization } from '../mcp/helpers.js';
import { createRunContext, processesWith, type RunContext, until } from '../runs/helpers.js';

const MARKER = `crewd-build-share-${randomUUID()}`;

/** A bundle whose build step (npm runs the project's preinstall script first) never ends by itself. */
const hanging = {
  'package.json': JSON.stringify({
    name: 'hanging',
    main: 'crew.js',
    scripts: { preinstall: `echo ${MARKER}; sleep 60` },
    dependencies: { local: 'file:./local' },
  }),
  'crew.js': '',
};
/** Uploads a bundle with `key` (the builds helper's upload uses the default organization's admin key). */
function uploadAs(ctx: TestContext, key: string, deploymentId: string, bundle: Buffer) {
  return ctx.app.inject({
    method: 'POST',
    url: `/v1/deployments/${deploymentId}/versions`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/gzip' },
    payload: bundle,
  });
}

const quick = { 'crewd.json': JSON.stringify({ runtime: 'node', command: ['node', 'crew.js'] }), 'crew.js': '' };

/**
 * An instance builds MAX_CONCURRENT_BUILDS bundles at a time, first queued first built: an organization that uploaded
 * bundles whose builds take their whole BUILD_TIMEOUT_SECONDS held every slot for as long as it kept uploading, and
 * another organization's upload waited behind them all. As with run slots (CONTRACTS §12), an organization holds a
 * share of the build slots once the installation has several.
 */
describe('build slots shared between organizations', () => {
  let ctx: RunContext;
  beforeAll(async () => {
    ctx = await createRunContext({ DATA_DIR: tempDataDir(), BUILD_TIMEOUT_SECONDS: '20', MAX_CONCURRENT_BUILDS: '2' });
  });
  afterAll(async () => {
    await ctx?.close();
    // Stopping the instance ends its builds, their steps with them.
    await until(() => processesWith(MARKER).length === 0, 30_000);
  });

  it("build another organization's bundle while one organization's builds hang", { timeout: 90_000 }, async () => {
    const greedy = await otherOrganization(ctx, 'greedy');
    const theirs = (await ctx.call('POST', '/v1/deployments', { key: greedy, body: { name: 'hang' } })).json().id;
    const hangs: string[] = [];
    for (let i = 0; i < 3; i++) hangs.push((await uploadAs(ctx, greedy, theirs, project(hanging))).json().id);
    const db = ctx.database.handle.db;
    const claimed = async () =>
      (await db.selectFrom('deployment_versions').select(['id', 'build_instance_id']).execute())
        .filter((version) => version.build_instance_id !== null)
        .map((version) => version.id);
    await until(async () => (await claimed()).length > 0);

    const mine = (await ctx.call('POST', '/v1/deployments', { body: { name: 'quick' } })).json().id;
    const uploaded = (await uploadAs(ctx, ctx.adminKey, mine, project(quick))).json();
    const built = await waitForBuild(ctx, mine, uploaded.id, 15_000);
    expect(built.status).toBe('ready');
    // One of theirs at a time, while another organization's waited.
    expect((await claimed()).filter((id) => hangs.includes(id))).toHaveLength(1);
  });
});
