import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STREAM_REQUEST_KEY } from '../../src/langgraph-api/state-update-runs.js';
import { EXAMPLES, explainWithoutPython, OFFLINE_ENV, testPython, testVenvSettings } from '../python/helpers.js';
import { createRunContext, deploy, type RunContext, waitForRun } from '../runs/helpers.js';
import { type Receiver, startReceiver, until } from './helpers.js';

explainWithoutPython("a LangGraph state update's run and webhooks");

/**
 * `POST /langgraph/threads/{id}/state` applies the graph's update_state in a crewd run of the thread's deployment,
 * which the user never started (the official server makes no run): its end announced a run.succeeded (run.failed for
 * an update LangGraph refused) to every webhook of the deployment.
 */
describe.runIf(testPython() !== null)("a LangGraph state update's run and webhooks", () => {
  let ctx: RunContext;
  let receiver: Receiver;
  let deploymentId: string;
  let webhookId: string;

  beforeAll(async () => {
    ctx = await createRunContext({ ...testVenvSettings(), WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
    const python = testPython() as string;
    ({ deploymentId } = await deploy(ctx, [python, '-m', 'crewd_runner', '--graph', 'src/agent/graph.py:graph'], {
      cwd: path.join(EXAMPLES, 'langgraph-agent'),
      env: OFFLINE_ENV,
      timeout_seconds: 120,
    }));
    receiver = await startReceiver();
    const hook = await ctx.call('POST', '/v1/webhooks', {
      body: { name: 'ends', events: ['run.succeeded', 'run.failed'], deployment_id: deploymentId, url: receiver.url },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    webhookId = hook.json().id;
    receiver.secret = hook.json().secret;
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await ctx?.close();
  });

  const deliveredRuns = async () =>
    (
      (await ctx.call('GET', `/v1/webhooks/${webhookId}/deliveries?limit=100`)).json().deliveries as Array<{
        run_id: string;
        event: string;
      }>
    ).map((delivery) => `${delivery.event} ${delivery.run_id}`);

  it('sends no webhook for the run of a state update, applied or refused', { timeout: 120_000 }, async () => {
    // The marker the webhooks' statement looks for is where the LangGraph API writes it.
    expect(STREAM_REQUEST_KEY).toBe('__langgraph__');
    const threadId = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json()
      .thread_id as string;
    const started = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input: { question: 'Two?' } } });
    expect(started.statusCode, started.body).toBe(202);
    const asked = await waitForRun(ctx, started.json().run_id, undefined, 60_000);
    expect(asked.status, asked.error_message).toBe('succeeded');

    const updated = await ctx.call('POST', `/langgraph/threads/${threadId}/state`, {
      body: { values: { question: 'Changed?' } },
    });
    expect(updated.statusCode, updated.body).toBe(200);
    const resumed = await ctx.call('POST', `/v1/threads/${threadId}/runs`, {
      body: { command: { resume: { approved: true } } },
    });
    expect(resumed.statusCode, resumed.body).toBe(202);
    const ended = await waitForRun(ctx, resumed.json().run_id, undefined, 60_000);
    expect(ended.status, ended.error_message).toBe('succeeded');
    const refused = await ctx.call('POST', `/langgraph/threads/${threadId}/state`, {
      body: { values: { answers: 1 }, as_node: 'nope' },
    });
    expect(refused.statusCode, refused.body).toBe(400);

    // /v1 lists the updates' runs (crewd runs of the deployment, one applied, one refused)…
    const runs = (await ctx.call('GET', `/v1/runs?thread_id=${threadId}`)).json().runs as Array<{
      id: string;
      status: string;
    }>;
    expect(runs.map((run) => run.status).sort()).toEqual(['failed', 'succeeded', 'succeeded', 'succeeded']);
    // …but only the runs the user started were announced, each once.
    const expected = [`run.succeeded ${ended.id}`, `run.succeeded ${asked.id}`];
    expect(await deliveredRuns()).toEqual(expected);
    await until(() => receiver.received.length >= 2);
    const announced = receiver.received.map((delivery) => JSON.parse(delivery.body).data.run_id).sort();
    expect(announced).toEqual([asked.id, ended.id].sort());
  });
});
