import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultAssistantId } from '../../src/langgraph-api/translate.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import type { RunContext } from '../runs/helpers.js';
import { runSdkScript, startWithAgent } from './helpers.js';

explainWithoutPython('LangGraph API assistants through langgraph-sdk');

describe.runIf(testPython() !== null)('LangGraph API assistants through langgraph-sdk', () => {
  let ctx: RunContext;
  let deploymentId: string;
  let url: string;

  beforeAll(async () => {
    ({ ctx, deploymentId, url } = await startWithAgent());
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('creates, finds, versions and deletes assistants with the sync and async clients', {
    timeout: 60_000,
  }, async () => {
    const result = await runSdkScript('assistants.py', { url, key: ADMIN_KEY });
    expect(result.default).toBe(defaultAssistantId(deploymentId));
  });

  it("answers 404 for another organization's assistant, by its UUID or its graph_id", async () => {
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    expect(org.statusCode, org.body).toBe(201);
    const otherKey = org.json().api_key.key as string;
    for (const id of [defaultAssistantId(deploymentId), 'agent', deploymentId]) {
      const seen = await ctx.call('GET', `/langgraph/assistants/${id}`, {
        key: null,
        headers: { 'x-api-key': otherKey },
      });
      expect(seen.statusCode).toBe(404);
      expect(seen.json()).toEqual({ detail: `Assistant ${id} not found` });
    }
  });
});
