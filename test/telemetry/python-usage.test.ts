import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OFFLINE_ENV, RUNNER, testPython, testVenvSettings } from '../python/helpers.js';
import { createRunContext, deploy, type RunContext, startRun, waitForRun } from '../runs/helpers.js';

/** runners/python/tests/projects/usage_projects.py: a CrewAI BaseLLM and a LangChain fake chat model that report usage. */
const PROJECTS = path.join(RUNNER, 'tests/projects');

const counts = (input: number, output: number, cached: number, reasoning: number, calls: number) => ({
  input_tokens: input,
  output_tokens: output,
  cached_input_tokens: cached,
  reasoning_tokens: reasoning,
  total_tokens: input + output,
  calls,
});

describe.runIf(testPython() !== null)(
  'usage of Python crews through crewd (CONTRACTS §15)',
  { timeout: 180_000 },
  () => {
    let ctx: RunContext;

    beforeAll(async () => {
      ctx = await createRunContext(testVenvSettings());
    });
    afterAll(() => ctx?.close());

    const runOf = async (args: string[]) => {
      const python = testPython() as string;
      const { deploymentId } = await deploy(ctx, [python, '-m', 'crewd_runner', ...args], {
        cwd: PROJECTS,
        env: OFFLINE_ENV,
        timeout_seconds: 150,
      });
      const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id, undefined, 150_000);
      expect(run.status, run.error_message).toBe('succeeded');
      return run;
    };

    it('sums a CrewAI crew’s calls and prices them exactly', async () => {
      const run = await runOf(['--crew', 'usage_projects:metered_crew']);
      // Two calls of 120 input (20 cached) and 30 output tokens on gpt-4o-mini: (100 × 0.15 + 20 × 0.075 + 30 × 0.6) / 1e6 each.
      expect(run.usage).toEqual({
        ...counts(240, 60, 40, 0, 2),
        cost: 0.000069,
        unpriced_models: [],
        by_model: { 'gpt-4o-mini': { ...counts(240, 60, 40, 0, 2), cost: 0.000069 } },
      });
    });

    it('sums a LangGraph graph’s invoked and streamed chat model calls; a model without a price is listed', async () => {
      const run = await runOf(['--graph', 'usage_projects.py:metered_graph']);
      expect(run.usage).toEqual({
        ...counts(100, 16, 20, 6, 2),
        cost: null,
        unpriced_models: ['fake-metered'],
        by_model: { 'fake-metered': { ...counts(100, 16, 20, 6, 2), cost: null } },
      });
    });
  },
);
