import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { crew, deploy, explainPostgresOnly, getRun, type Instance, startInstance, until } from '../scale/helpers.js';

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
    [a, b] = await Promise.all([startInstance('a', url), startInstance('b', url)]);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.destroy();
  });

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
});
