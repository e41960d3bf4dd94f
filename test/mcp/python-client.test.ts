import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestContext } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import { createRunContext, crew } from '../runs/helpers.js';
import { deployNamed } from './helpers.js';

const CLIENT = path.join(import.meta.dirname, 'fixtures/python_client.py');

explainWithoutPython('the Python mcp client against /mcp');

/** The official Python SDK (`mcp`, in the Python test environment as CrewAI's dependency) as the client. */
describe.runIf(testPython() !== null)('the Python mcp client against /mcp', () => {
  let ctx: TestContext;

  beforeAll(async () => {
    ctx = await createRunContext();
    await deployNamed(ctx, 'echo', crew('trivial.mjs'));
  });
  afterAll(async () => ctx?.close());

  it('initializes, lists the tools and calls one with progress', { timeout: 60_000 }, async () => {
    const { stdout } = await promisify(execFile)(testPython() as string, [
      CLIENT,
      `${ctx.baseUrl}/mcp`,
      ctx.adminKey,
      'echo',
      JSON.stringify({ topic: 'otters' }),
    ]);
    const answer = JSON.parse(stdout);
    expect(answer).toMatchObject({
      protocol: '2025-11-25',
      tools: ['echo'],
      is_error: false,
      structured: { echo: { topic: 'otters' } },
    });
    expect(answer.progress).toEqual([
      '1 run.started',
      '2 task.started',
      '3 log: echoing the input',
      '4 task.completed',
      '5 run.completed',
    ]);
  });
});
