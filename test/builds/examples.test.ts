import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packProject } from '../../src/cli/pack.js';
import { createRunContext, type RunContext, startRun, waitForRun } from '../runs/helpers.js';
import { createDeployment, tempDataDir, upload, waitForBuild } from './helpers.js';

const EXAMPLES = path.resolve(import.meta.dirname, '../../examples');
let ctx: RunContext;

beforeAll(async () => {
  ctx = await createRunContext({ DATA_DIR: tempDataDir() });
});
afterAll(async () => ctx?.close());

async function deployExample(folder: string) {
  const deploymentId = await createDeployment(ctx, folder);
  const response = await upload(
    ctx,
    deploymentId,
    await packProject(path.join(EXAMPLES, folder)),
    '?environment=production',
  );
  expect(response.statusCode, response.body).toBe(201);
  const version = await waitForBuild(ctx, deploymentId, response.json().id);
  expect(version.status, version.build_error).toBe('ready');
  return { deploymentId, version };
}

describe('the deployable examples', () => {
  it('examples/node-crew', async () => {
    const { deploymentId, version } = await deployExample('node-crew');
    expect(version).toMatchObject({ runtime: 'node', entrypoint: { main: 'crew.js' }, command: ['node', 'crew.js'] });
    await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { CREW_TONE: 'excited' } },
    });
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, { topic: 'bees' })).run_id);
    expect(run.status).toBe('succeeded');
    expect(run.output.report).toBe('Great news! bees needs a server; bees keeps data at home.');
  });

  it('examples/python-stdlib', async () => {
    const { deploymentId, version } = await deployExample('python-stdlib');
    expect(version).toMatchObject({ runtime: 'python', timeout_seconds: 120 });
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId, { text: 'to be or not to be' })).run_id);
    expect(run.status).toBe('succeeded');
    expect(run.output).toMatchObject({
      top_words: [
        { word: 'to', count: 2 },
        { word: 'be', count: 2 },
        { word: 'or', count: 1 },
      ],
      virtual_env: true,
    });
  });
});
