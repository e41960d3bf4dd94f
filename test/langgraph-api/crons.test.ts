import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import type { RunContext } from '../runs/helpers.js';
import { runSdkScript, startWithAgent } from './helpers.js';

explainWithoutPython('LangGraph API crons through langgraph-sdk');

describe.runIf(testPython() !== null)('LangGraph API crons through langgraph-sdk', () => {
  let ctx: RunContext;
  let deploymentId: string;
  let url: string;

  beforeAll(async () => {
    ({ ctx, deploymentId, url } = await startWithAgent());
  }, 60_000);
  afterAll(async () => ctx?.close());

  it("creates, searches, counts and deletes crewd's crons with the sync and async clients", {
    timeout: 60_000,
  }, async () => {
    const result = await runSdkScript('crons.py', { url, key: ADMIN_KEY });
    // The same cron through /v1, by its UUID; the thread it runs in now belongs to the agent.
    const cron = await ctx.call('GET', `/v1/crons/${result.cron}`);
    expect(cron.statusCode, cron.body).toBe(200);
    expect(cron.json()).toMatchObject({ deployment_id: deploymentId, input: { question: 'Hourly?' }, enabled: true });
    const thread = await ctx.call('GET', `/v1/threads/${result.thread}`);
    expect(thread.json().deployment_id).toBe(deploymentId);
    const gone = await ctx.call('GET', `/v1/crons/${result.async_cron}`);
    expect(gone.statusCode).toBe(404);
  });

  it('answers a schedule more frequent than CRON_MIN_INTERVAL_SECONDS with 422 naming it', async () => {
    const refused = await ctx.call('POST', '/langgraph/runs/crons', {
      body: { assistant_id: 'agent', schedule: '* * * * * *' },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().detail).toContain('CRON_MIN_INTERVAL_SECONDS');
  });
});
