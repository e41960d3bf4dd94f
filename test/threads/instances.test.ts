import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { crew, deploy, explainPostgresOnly, getRun, type Instance, startInstance, until } from '../scale/helpers.js';
import { lockFolder, startOrder } from './multitask-helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: answers of the API, checked by the tests' expectations.
type Json = any;

explainPostgresOnly('threads across instances', 'embedded PGlite is one process, so there is no second instance');

describe.runIf(usingPostgres())('threads across instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = database.url as string;
    // exclusive.mjs shares a lock folder between runs, which the sandbox by design does not allow.
    const env = { RUNNER_SANDBOX: 'off' };
    [a, b] = await Promise.all([startInstance('a', url, env), startInstance('b', url, env)]);
  });

  const locks = lockFolder();

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.destroy();
    locks.remove();
  });

  async function exclusiveThread(): Promise<string> {
    const deploymentId = await deploy(a, crew('exclusive.mjs'));
    return (await (await a.call('POST', '/v1/threads', { deployment_id: deploymentId })).json()).thread_id;
  }

  async function threadRuns(threadId: string): Promise<Json[]> {
    const listed = await (await a.call('GET', `/v1/runs?thread_id=${threadId}&limit=1000`)).json();
    return [...listed.runs].sort((x: Json, y: Json) =>
      x.created_at === y.created_at ? (x.id < y.id ? -1 : 1) : x.created_at < y.created_at ? -1 : 1,
    );
  }

  const finished = (instance: Instance, runId: string) =>
    until(async () => {
      const run = await getRun(instance, runId);
      return ['succeeded', 'failed', 'canceled'].includes(run.status) ? run : undefined;
    });

  async function runIn(instance: Instance, threadId: string, body: Record<string, unknown>): Promise<Json> {
    const response = await instance.call('POST', `/v1/threads/${threadId}/runs`, body);
    expect(response.status).toBe(202);
    return finished(instance, (await response.json()).run_id);
  }

  const instanceOf = async (runId: string) =>
    (
      await database.handle.db
        .selectFrom('runs')
        .select('instance_id')
        .where('id', '=', runId)
        .executeTakeFirstOrThrow()
    ).instance_id;

  it('hands a checkpoint written on one instance to the resuming run on another', async () => {
    const deploymentId = await deploy(a, crew('interrupting.mjs'));
    const thread = await (await a.call('POST', '/v1/threads', { deployment_id: deploymentId })).json();
    const id = thread.thread_id as string;

    const asked = await runIn(a, id, { input: { ask: 'which way?' } });
    expect(asked.output).toEqual({ interrupts: [{ id: 'ask-1', value: { question: 'which way?' } }] });
    expect(await (await b.call('GET', `/v1/threads/${id}`)).json()).toMatchObject({
      status: 'interrupted',
      interrupts: [{ id: 'ask-1', value: { question: 'which way?' } }],
    });

    const resumed = await runIn(b, id, { command: { resume: 'left' } });
    expect(resumed.output).toEqual({ resumed: 'left', from: { step: 1, waiting: 'which way?' } });
    expect(await instanceOf(asked.id)).not.toBe(await instanceOf(resumed.id));
    expect(await (await a.call('GET', `/v1/threads/${id}`)).json()).toMatchObject({
      status: 'idle',
      interrupts: [],
      values: { asked: 'which way?', answer: 'left' },
    });
  });

  it('enqueue: twenty concurrent requests through two instances run one at a time, in creation order', async () => {
    const id = await exclusiveThread();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        (n % 2 ? b : a).call('POST', `/v1/threads/${id}/runs`, {
          input: { lock_dir: locks.dir, n, ms: 30 },
          multitask_strategy: 'enqueue',
        }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(202));
    const ids = await Promise.all(responses.map(async (response) => (await response.json()).run_id as string));
    const ended = await Promise.all(ids.map((runId) => finished(a, runId)));
    expect(ended.map((run) => run.status)).toEqual(Array(20).fill('succeeded'));
    const runs = await threadRuns(id);
    expect(startOrder(locks.dir, id)).toEqual(runs.map((run) => run.id));
    const thread = await (await b.call('GET', `/v1/threads/${id}`)).json();
    expect(thread).toMatchObject({ status: 'idle', values: { seen: runs.map((run) => run.input.n) } });
  });

  it('interrupt through another instance: the new run starts once the old process, elsewhere, has stopped', async () => {
    const id = await exclusiveThread();
    const current = await (
      await a.call('POST', `/v1/threads/${id}/runs`, { input: { lock_dir: locks.dir, n: 'old', ms: 60_000 } })
    ).json();
    await until(async () => startOrder(locks.dir, id).length === 1);
    const next = await b.call('POST', `/v1/threads/${id}/runs`, {
      input: { lock_dir: locks.dir, n: 'new' },
      multitask_strategy: 'interrupt',
    });
    expect(next.status).toBe(202);
    const nextId = (await next.json()).run_id as string;
    expect((await getRun(b, current.run_id)).status).toBe('canceled');
    const ran = await finished(b, nextId);
    expect(ran).toMatchObject({ status: 'succeeded', error_message: null });
    expect(startOrder(locks.dir, id)).toEqual([current.run_id, nextId]);
    expect(await (await a.call('GET', `/v1/threads/${id}`)).json()).toMatchObject({
      status: 'idle',
      values: { seen: ['new'] },
    });
  });

  it('rollback through another instance: the run on the first is deleted, its process stopped, then the new run goes', async () => {
    const id = await exclusiveThread();
    const current = await (
      await a.call('POST', `/v1/threads/${id}/runs`, { input: { lock_dir: locks.dir, n: 'doomed', ms: 60_000 } })
    ).json();
    await until(async () => startOrder(locks.dir, id).length === 1);
    const next = await b.call('POST', `/v1/threads/${id}/runs`, {
      input: { lock_dir: locks.dir, n: 'instead' },
      multitask_strategy: 'rollback',
    });
    expect(next.status).toBe(202);
    const nextId = (await next.json()).run_id as string;
    expect((await a.call('GET', `/v1/runs/${current.run_id}`)).status).toBe(404);
    expect(await finished(a, nextId)).toMatchObject({ status: 'succeeded', error_message: null });
    expect(startOrder(locks.dir, id)).toEqual([current.run_id, nextId]);
    expect(await (await b.call('GET', `/v1/threads/${id}`)).json()).toMatchObject({
      status: 'idle',
      values: { seen: ['instead'] },
    });
  });
});
