import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, deploy, type RunContext, until, waitForRun } from '../runs/helpers.js';
import { CLI_TEST_TIMEOUT, runCrewd } from './helpers.js';

let ctx: RunContext;
let crewd: (args: string[]) => ReturnType<typeof runCrewd>;

beforeAll(async () => {
  ctx = await createRunContext({ DATA_DIR: tempDataDir() });
  const home = mkdtempSync(path.join(tmpdir(), 'crewd-cli-home-'));
  crewd = (args) => runCrewd(home, args, { CREWD_URL: ctx.baseUrl, CREWD_API_KEY: ADMIN_KEY });
});
afterAll(async () => ctx?.close());

async function namedDeployment(name: string, file: string): Promise<string> {
  const id = (await ctx.call('POST', '/v1/deployments', { body: { name } })).json().id;
  await ctx.call('POST', `/v1/deployments/${id}/versions`, {
    body: { command: crew(file), environment: 'production' },
  });
  return id;
}

async function newThread(deployment: string, values = '{}'): Promise<string> {
  const created = await crewd(['threads', 'create', deployment, '--values', values]);
  expect(created.code, created.stderr).toBe(0);
  return JSON.parse(created.stdout).thread_id;
}

describe('crewd threads and runs in a thread (CONTRACTS §9, §10)', { timeout: CLI_TEST_TIMEOUT }, () => {
  it('interrupts, shows what the thread waits for, and resumes with --command', async () => {
    const deploymentId = (await deploy(ctx, crew('interrupting.mjs'))).deploymentId;
    const threadId = await newThread(deploymentId, '{"topic":"tea"}');

    const asked = await crewd(['run', deploymentId, '--thread', threadId, '--input', '{"ask":"green?"}', '--follow']);
    expect(asked.code, asked.stderr).toBe(0);
    const interrupts = [{ id: 'ask-1', value: { question: 'green?' } }];
    expect(JSON.parse(asked.stdout)).toEqual({ interrupts });
    expect(asked.stderr).toMatch(/run\.interrupted {2}green\?$/m);
    expect(asked.stderr).toContain(`Thread ${threadId} is interrupted; it waits for:\n  ask-1  {"question":"green?"}`);
    expect(asked.stderr).toContain(`Resume it: crewd run ${deploymentId} --thread ${threadId} --command '{"resume":`);

    const got = await crewd(['threads', 'get', threadId]);
    expect(JSON.parse(got.stdout)).toMatchObject({ status: 'interrupted', interrupts });
    expect(got.stderr).toContain(`Resume it: crewd run ${deploymentId} --thread ${threadId}`);
    const listed = await crewd(['threads', 'list', deploymentId, '--status', 'interrupted']);
    expect(listed.stdout).toMatch(new RegExp(`^${threadId}\tinterrupted\t`, 'm'));

    const resumed = await crewd([
      'run',
      deploymentId,
      '--thread',
      threadId,
      '--command',
      '{"resume":"yes"}',
      '--follow',
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toEqual({ resumed: 'yes', from: { step: 1, waiting: 'green?' } });
    expect(resumed.stderr).not.toContain('is interrupted');
    const after = JSON.parse((await crewd(['threads', 'get', threadId])).stdout);
    expect(after).toMatchObject({ status: 'idle', interrupts: [], values: { topic: 'tea', answer: 'yes' } });

    const again = await crewd(['run', deploymentId, '--thread', threadId, '--command', '{"resume":"no"}']);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^crewd: .*interrupted/m);
  });

  it('runs tail of an interrupted run says how to resume', async () => {
    const deploymentId = await namedDeployment('cli hitl', 'interrupting.mjs');
    const threadId = await newThread(deploymentId);
    const started = await crewd(['run', 'cli hitl', '--thread', threadId, '--input', '{"ask":"why?"}']);
    expect(started.code, started.stderr).toBe(0);
    const tailed = await crewd(['runs', 'tail', JSON.parse(started.stdout).run_id]);
    expect(tailed.code).toBe(0);
    expect(tailed.stderr).toContain(`Resume it: crewd run ${deploymentId} --thread ${threadId}`);
  });

  it('refuses --command without a thread, and a thread of another deployment (exit 2)', async () => {
    const first = await namedDeployment('cli-first', 'trivial.mjs');
    await namedDeployment('cli-second', 'trivial.mjs');
    const noThread = await crewd(['run', 'cli-first', '--command', '{"resume":1}']);
    expect(noThread.code).toBe(2);
    expect(noThread.stderr).toMatch(/--command and --multitask-strategy are for runs in a thread: add --thread <id>/);
    const threadId = await newThread(first);
    const elsewhere = await crewd(['run', 'cli-second', '--thread', threadId]);
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(`Thread ${threadId} belongs to deployment ${first}, not cli-second`);
    const unknown = await crewd(['threads', 'get', 'thr_missing']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^crewd: Thread not found$/m);
  });

  it('a member key runs a deployment given by its id, and is told to give the id for a name', async () => {
    const deploymentId = await namedDeployment('cli-member', 'trivial.mjs');
    const member = (await ctx.call('POST', '/v1/api-keys', { body: { name: 'cli member' } })).json().key;
    const home = mkdtempSync(path.join(tmpdir(), 'crewd-cli-home-'));
    const env = { CREWD_URL: ctx.baseUrl, CREWD_API_KEY: member };
    const byId = await runCrewd(home, ['run', deploymentId, '--input', '{"a":1}', '--follow'], env);
    expect(byId.code, byId.stderr).toBe(0);
    const byName = await runCrewd(home, ['run', 'cli-member'], env);
    expect(byName.code).toBe(2);
    expect(byName.stderr).toContain('Finding deployment cli-member by its name needs an admin API key');
  });

  it('a busy thread: reject says what to do; interrupt and enqueue start the run', async () => {
    const deploymentId = (await deploy(ctx, crew('slow.mjs'))).deploymentId;
    const threadId = await newThread(deploymentId);
    const thread = ['run', deploymentId, '--thread', threadId];
    const forever = JSON.parse((await crewd(thread)).stdout).run_id;

    const rejected = await crewd([...thread, '--input', '{"ticks":1}']);
    expect(rejected.code).toBe(2);
    expect(rejected.stderr).toContain(`is busy with run ${forever}: wait for it to end, or add --multitask-strategy`);

    const interrupting = await crewd([
      ...thread,
      '--multitask-strategy',
      'interrupt',
      '--input',
      '{"ticks":1}',
      '--follow',
    ]);
    expect(interrupting.code, interrupting.stderr).toBe(0);
    expect(JSON.parse(interrupting.stdout)).toEqual({ ticks: 1 });
    expect((await waitForRun(ctx, forever)).status).toBe('canceled');

    // Started directly and runs until canceled, once the CLI's run waits behind it (however slowly the CLI starts).
    const current = (await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input: {} } })).json().run_id;
    const following = crewd([...thread, '--multitask-strategy', 'enqueue', '--input', '{"ticks":1}', '--follow']);
    const queuedRun = await until(async () => {
      const { runs } = (await ctx.call('GET', `/v1/runs?thread_id=${threadId}&status=pending`)).json();
      return runs[0]?.id as string | undefined;
    }, CLI_TEST_TIMEOUT);
    await ctx.call('POST', `/v1/runs/${current}/cancel`);
    const queued = await following;
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stderr).toMatch(/^Run run_\S+ pending \(version 1, queued behind the thread’s current run\)$/m);
    expect(queued.stderr).toContain(queuedRun);
    const first = await waitForRun(ctx, current);
    const second = (await ctx.call('GET', `/v1/runs/${queuedRun}`)).json();
    expect(second).toMatchObject({ status: 'succeeded', output: { ticks: 1 } });
    expect(Date.parse(second.started_at)).toBeGreaterThanOrEqual(Date.parse(first.completed_at));
  });
});
