import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, deploy, type RunContext, waitForRun } from '../runs/helpers.js';
import { EXAMPLES, explainWithoutPython, OFFLINE_ENV, testPython, testVenvSettings } from './helpers.js';

explainWithoutPython('a LangGraph graph through the service');

/** examples/langgraph-agent, unchanged, run by the crewd Python runner with real langgraph. */
describe.runIf(testPython() !== null)('a LangGraph graph through the service', () => {
  let ctx: RunContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createRunContext(testVenvSettings());
    const python = testPython() as string;
    ({ deploymentId } = await deploy(ctx, [python, '-m', 'crewd_runner', '--graph', 'src/agent/graph.py:graph'], {
      cwd: path.join(EXAMPLES, 'langgraph-agent'),
      env: OFFLINE_ENV,
      timeout_seconds: 120,
    }));
  }, 60_000);
  afterAll(async () => ctx?.close());

  async function runInThread(threadId: string, body: Record<string, unknown>) {
    const response = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body });
    expect(response.statusCode, response.body).toBe(202);
    return waitForRun(ctx, response.json().run_id, undefined, 60_000);
  }

  const getThread = async (threadId: string) => (await ctx.call('GET', `/v1/threads/${threadId}`)).json();

  it('runs, stops at its approval interrupt, resumes with a command and carries its state over three runs', {
    timeout: 180_000,
  }, async () => {
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const threadId = thread.thread_id as string;

    const first = await runInThread(threadId, { input: { question: 'How many words are in this question?' } });
    expect(first.status, first.error_message).toBe('succeeded');
    expect(first.output.interrupts).toHaveLength(1);
    expect(first.output.interrupts[0].value).toMatchObject({ question: 'Send this answer?' });
    const interrupted = await getThread(threadId);
    expect(interrupted.status).toBe('interrupted');
    expect(interrupted.interrupts).toEqual(first.output.interrupts);

    const events = await ctx.call('GET', `/v1/runs/${first.id}/events?last_event_id=0`);
    const types = [...events.body.matchAll(/"type":"([^"]+)"/g)].map((match) => match[1]);
    expect(types).toEqual(expect.arrayContaining(['run.started', 'node.completed', 'custom', 'run.interrupted']));

    const second = await runInThread(threadId, { command: { resume: { approved: true } } });
    expect(second.status, second.error_message).toBe('succeeded');
    const resumed = await getThread(threadId);
    expect(resumed).toMatchObject({ status: 'idle', interrupts: [] });
    expect(resumed.values).toMatchObject({ approved: true, answers: 1 });

    const third = await runInThread(threadId, { input: { question: 'And this one?' } });
    expect(third.status, third.error_message).toBe('succeeded');
    const carried = await getThread(threadId);
    expect(carried.status).toBe('interrupted');
    // The conversation goes on from the state the first two runs left: more messages, the same count of answers.
    expect(carried.values.messages.length).toBeGreaterThan(resumed.values.messages.length);
    expect(carried.values.answers).toBe(1);
  });

  it('refuses a command on a thread that is not interrupted', async () => {
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const response = await ctx.call('POST', `/v1/threads/${thread.thread_id}/runs`, {
      body: { command: { resume: true } },
    });
    expect(response.statusCode).toBe(400);
  });
});
