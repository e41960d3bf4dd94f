import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, deploy, type RunContext, readStream, startRun, until, waitForRun } from './helpers.js';

describe('run endpoints', () => {
  let ctx: RunContext;
  let trivial: string;
  let slow: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    trivial = (await deploy(ctx, crew('trivial.mjs'))).deploymentId;
    slow = (await deploy(ctx, crew('slow.mjs'))).deploymentId;
  });
  afterAll(() => ctx.close());

  it('creates a run with 202 and reports version and status', async () => {
    const versions = await ctx.call('GET', `/v1/deployments/${trivial}/versions`);
    const version = versions.json().versions[0];
    const response = await ctx.call('POST', '/v1/runs', { body: { deployment_id: trivial, input: { a: 1 } } });
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({
      run_id: expect.stringMatching(/^run_/),
      version_id: version.id,
      version_number: 1,
      status: 'running',
    });
  });

  it('returns the Run fields of SPEC §2', async () => {
    const { run_id } = await startRun(ctx, trivial, { question: 'why' });
    const run = await waitForRun(ctx, run_id);
    expect(run).toEqual({
      id: run_id,
      version_id: expect.stringMatching(/^ver_/),
      deployment_id: trivial,
      environment: 'production',
      thread_id: null,
      cron_id: null,
      status: 'succeeded',
      input: { question: 'why' },
      output: { echo: { question: 'why' } },
      error_message: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      started_at: expect.stringMatching(/Z$/),
      completed_at: expect.stringMatching(/Z$/),
      usage: null,
      trace_id: null,
    });
    expect(Date.parse(run.started_at)).toBeGreaterThanOrEqual(Date.parse(run.created_at));
    expect(Date.parse(run.completed_at)).toBeGreaterThanOrEqual(Date.parse(run.started_at));
  });

  it('defaults input to {} and environment to production', async () => {
    const response = await ctx.call('POST', '/v1/runs', { body: { deployment_id: trivial } });
    expect(response.statusCode).toBe(202);
    const run = await waitForRun(ctx, response.json().run_id);
    expect(run.input).toEqual({});
    expect(run.environment).toBe('production');
  });

  it('answers 400 deployment_id is required', async () => {
    const response = await ctx.call('POST', '/v1/runs', { body: { input: {} } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: { message: 'deployment_id is required', code: 'bad_request' } });
  });

  it('answers 400 with the SPEC message when the environment has no running version', async () => {
    const staging = await ctx.call('POST', '/v1/runs', { body: { deployment_id: trivial, environment: 'staging' } });
    expect(staging.statusCode).toBe(400);
    expect(staging.json()).toEqual({
      error: { message: 'No running version found for staging environment', code: 'bad_request' },
    });
    const created = await ctx.call('POST', '/v1/deployments', { body: { name: 'empty' } });
    const production = await ctx.call('POST', '/v1/runs', { body: { deployment_id: created.json().id } });
    expect(production.json().error.message).toBe('No running version found for production environment');
  });

  it('answers 404 for an unknown deployment and an unknown run', async () => {
    const deployment = await ctx.call('POST', '/v1/runs', { body: { deployment_id: 'dep_nope' } });
    expect(deployment.statusCode).toBe(404);
    expect(deployment.json().error).toEqual({ message: 'Deployment not found', code: 'not_found' });
    for (const [method, url] of [
      ['GET', '/v1/runs/run_nope'],
      ['POST', '/v1/runs/run_nope/cancel'],
      ['GET', '/v1/runs/run_nope/events'],
    ] as const) {
      const response = await ctx.call(method, url);
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toEqual({ message: 'Run not found', code: 'not_found' });
    }
  });

  it('rejects an invalid body', async () => {
    const badInput = await ctx.call('POST', '/v1/runs', { body: { deployment_id: trivial, input: [1] } });
    expect(badInput.statusCode).toBe(400);
    expect(badInput.json().error.message).toMatch(/^input/);
    const badEnv = await ctx.call('POST', '/v1/runs', { body: { deployment_id: trivial, environment: 'dev' } });
    expect(badEnv.statusCode).toBe(400);
    expect(badEnv.json().error.message).toMatch(/^environment/);
  });

  it('cancels a running run and refuses to cancel a terminal one', async () => {
    const { run_id } = await startRun(ctx, slow);
    const cancel = await ctx.call('POST', `/v1/runs/${run_id}/cancel`);
    expect(cancel.statusCode).toBe(200);
    expect(cancel.json()).toEqual({ success: true, status: 'canceled' });
    const run = (await ctx.call('GET', `/v1/runs/${run_id}`)).json();
    expect(run.status).toBe('canceled');
    expect(run.completed_at).not.toBeNull();
    expect(run.output).toBeNull();
    expect(run.error_message).toBeNull();

    const again = await ctx.call('POST', `/v1/runs/${run_id}/cancel`);
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({
      error: { message: 'Cannot cancel run with status: canceled', code: 'bad_request' },
    });

    const done = await startRun(ctx, trivial);
    await waitForRun(ctx, done.run_id);
    const late = await ctx.call('POST', `/v1/runs/${done.run_id}/cancel`);
    expect(late.json().error.message).toBe('Cannot cancel run with status: succeeded');
  });

  it('lists runs newest first with filters, total and pagination', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await startRun(ctx, deploymentId, { i })).run_id);
    for (const id of ids) await waitForRun(ctx, id);
    const failing = (await deploy(ctx, crew('failing.mjs'))).deploymentId;
    const failed = (await startRun(ctx, failing)).run_id;
    await waitForRun(ctx, failed);

    const all = (await ctx.call('GET', `/v1/runs?deployment_id=${deploymentId}`)).json();
    expect(all.total).toBe(3);
    expect(all.runs.map((run: { id: string }) => run.id)).toEqual([...ids].reverse());

    const page = (await ctx.call('GET', `/v1/runs?deployment_id=${deploymentId}&limit=1&offset=1`)).json();
    expect(page.runs.map((run: { id: string }) => run.id)).toEqual([ids[1]]);
    expect(page.total).toBe(3);

    const byStatus = (await ctx.call('GET', '/v1/runs?status=failed')).json();
    expect(byStatus.runs.map((run: { id: string }) => run.id)).toContain(failed);
    expect(byStatus.runs.every((run: { status: string }) => run.status === 'failed')).toBe(true);

    const clamped = await ctx.call('GET', '/v1/runs?limit=5000');
    expect(clamped.statusCode).toBe(200);
    const badStatus = await ctx.call('GET', '/v1/runs?status=done');
    expect(badStatus.statusCode).toBe(400);
  });

  it('lets a member key create and read runs', async () => {
    const created = await ctx.call('POST', '/v1/api-keys', { body: { name: 'runner', role: 'member' } });
    const member = created.json().key as string;
    const response = await ctx.call('POST', '/v1/runs', { key: member, body: { deployment_id: trivial } });
    expect(response.statusCode).toBe(202);
    const run = await waitForRun(ctx, response.json().run_id, undefined, undefined, member);
    expect(run.status).toBe('succeeded');
    expect((await ctx.call('GET', '/v1/runs', { key: member })).statusCode).toBe(200);
  });

  it('hides runs of another organization', async () => {
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    const otherKey = org.json().api_key.key as string;
    const { run_id } = await startRun(ctx, trivial);
    for (const [method, url] of [
      ['GET', `/v1/runs/${run_id}`],
      ['POST', `/v1/runs/${run_id}/cancel`],
      ['GET', `/v1/runs/${run_id}/events`],
    ] as const) {
      const response = await ctx.call(method, url, { key: otherKey });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.message).toBe('Run not found');
    }
    const list = (await ctx.call('GET', '/v1/runs', { key: otherKey })).json();
    expect(list).toEqual({ runs: [], total: 0 });
    const start = await ctx.call('POST', '/v1/runs', { key: otherKey, body: { deployment_id: trivial } });
    expect(start.statusCode).toBe(404);
    expect(start.json().error.message).toBe('Deployment not found');
    expect(ADMIN_KEY).toBeTruthy();
  });

  it('answers the first response again for a reused Idempotency-Key and starts nothing', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const headers = { 'idempotency-key': 'order-42' };
    const body = { deployment_id: deploymentId, input: { n: 1 } };
    const first = await ctx.call('POST', '/v1/runs', { body, headers });
    expect(first.statusCode).toBe(202);
    const second = await ctx.call('POST', '/v1/runs', {
      body: { input: { n: 1 }, deployment_id: deploymentId },
      headers,
    });
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual(first.json());
    const list = (await ctx.call('GET', `/v1/runs?deployment_id=${deploymentId}`)).json();
    expect(list.total).toBe(1);

    const conflict = await ctx.call('POST', '/v1/runs', { body: { ...body, input: { n: 2 } }, headers });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.code).toBe('conflict');
    expect(conflict.json().error.message).toMatch(/Idempotency-Key/);

    const other = await ctx.call('POST', '/v1/runs', { body, headers: { 'idempotency-key': 'order-43' } });
    expect(other.json().run_id).not.toBe(first.json().run_id);
  });

  it('gives one run to concurrent requests with the same Idempotency-Key', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        ctx.call('POST', '/v1/runs', {
          body: { deployment_id: deploymentId },
          headers: { 'idempotency-key': 'same-for-all' },
        }),
      ),
    );
    expect(responses.map((response) => response.statusCode)).toEqual(Array(10).fill(202));
    expect(new Set(responses.map((response) => response.json().run_id)).size).toBe(1);
    expect((await ctx.call('GET', `/v1/runs?deployment_id=${deploymentId}`)).json().total).toBe(1);
  });

  it('counts started and finished runs and relayed events in /metrics', async () => {
    const { run_id } = await startRun(ctx, trivial);
    await waitForRun(ctx, run_id);
    await readStream(`${ctx.baseUrl}/v1/runs/${run_id}/events?last_event_id=0`);
    const metric = async (name: string) => {
      const text = (await ctx.call('GET', '/metrics', { key: null })).body;
      return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 'NaN');
    };
    expect(await metric('crewd_runs_started_total')).toBeGreaterThanOrEqual(1);
    expect(await metric('crewd_runs_finished_total\\{status="succeeded"\\}')).toBeGreaterThanOrEqual(1);
    expect(await metric('crewd_open_streams')).toBe(0);
    await until(async () => (await metric('crewd_events_relayed_total')) >= 5);
  });

  it('does not remember a key whose request failed', async () => {
    const created = await ctx.call('POST', '/v1/deployments', { body: { name: 'later' } });
    const deploymentId = created.json().id as string;
    const headers = { 'idempotency-key': 'retry-me' };
    const failed = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId }, headers });
    expect(failed.statusCode).toBe(400);
    await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, {
      body: { command: crew('trivial.mjs'), environment: 'production' },
    });
    const retried = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId }, headers });
    expect(retried.statusCode).toBe(202);
  });
});
