import path from 'node:path';
import { expect } from 'vitest';
import { OFFLINE_ENV, RUNNER, testPython, testVenvSettings } from '../python/helpers.js';
import { createRunContext, deploy, type RunContext } from '../runs/helpers.js';

/** runners/python/tests/projects/token_graph.py: LangChain's fake chat model, one token per word. */
const PROJECTS = path.join(RUNNER, 'tests/projects');

/** The app listening on a real port, with the token graph deployed as deployment `chat` (production). */
export async function startWithTokenGraph(): Promise<{ ctx: RunContext; url: string }> {
  const ctx = await createRunContext(testVenvSettings());
  const python = testPython() as string;
  const { deploymentId } = await deploy(ctx, [python, '-m', 'crewd_runner', '--graph', 'token_graph.py:graph'], {
    cwd: PROJECTS,
    env: OFFLINE_ENV,
    timeout_seconds: 120,
  });
  const renamed = await ctx.call('PATCH', `/v1/deployments/${deploymentId}`, { body: { name: 'chat' } });
  expect(renamed.statusCode, renamed.body).toBe(200);
  return { ctx, url: `${ctx.baseUrl}/langgraph` };
}
