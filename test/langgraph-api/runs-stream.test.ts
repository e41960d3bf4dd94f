import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import { deploy, type RunContext } from '../runs/helpers.js';
import { startWithTokenGraph } from './runs-helpers.js';

explainWithoutPython('LangGraph API runs and streams through @langchain/langgraph-sdk');

const ALL_MODES = [
  'values',
  'updates',
  'custom',
  'messages-tuple',
  'messages',
  'events',
  'debug',
  'tasks',
  'checkpoints',
] as const;

interface Part {
  event: string;
  data: unknown;
  id?: string | undefined;
}

const question = (tokens: number, extra: Record<string, unknown> = {}) => ({
  messages: [{ role: 'user', content: 'hi' }],
  tokens,
  ...extra,
});

async function collect(stream: AsyncIterable<unknown>, onPart?: (part: Part) => void): Promise<Part[]> {
  const parts: Part[] = [];
  for await (const item of stream) {
    const part = item as Part;
    parts.push(part);
    onPart?.(part);
  }
  return parts;
}

/** The content of each `messages` (messages-tuple) event's chunk. */
const tokensOf = (parts: Part[]) =>
  parts
    .filter((part) => part.event === 'messages')
    .map((part) => (part.data as [{ content: string }, unknown])[0].content);

describe.runIf(testPython() !== null)('LangGraph API runs and streams through @langchain/langgraph-sdk', () => {
  let ctx: RunContext;
  let client: Client;
  let url: string;

  beforeAll(async () => {
    ({ ctx, url } = await startWithTokenGraph());
    client = new Client({ apiUrl: url, apiKey: ADMIN_KEY });
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('streams every mode as the SDK parses them: metadata first, chunks by mode, subgraphs by namespace, end last', {
    timeout: 120_000,
  }, async () => {
    const thread = await client.threads.create();
    let created: { run_id: string; thread_id?: string | undefined } | undefined;
    const parts = await collect(
      client.runs.stream(thread.thread_id, 'chat', {
        input: question(3),
        streamMode: [...ALL_MODES],
        streamSubgraphs: true,
        onRunCreated: (meta) => {
          created = meta;
        },
      }),
    );

    const [first] = parts;
    expect(first?.event).toBe('metadata');
    expect(first?.data).toEqual({ run_id: created?.run_id, attempt: 1 });
    expect(created?.thread_id).toBe(thread.thread_id);
    expect(parts.at(-1)?.event).toBe('end');
    const names = new Set(parts.map((part) => part.event.split('|')[0]));
    for (const name of ['values', 'updates', 'custom', 'messages', 'events', 'debug', 'tasks', 'checkpoints']) {
      expect(names, name).toContain(name);
    }
    expect(names).toContain('messages/partial');
    expect(names).toContain('messages/metadata');
    expect(tokensOf(parts)).toEqual(['w0', ' ', 'w1', ' ', 'w2']);
    const token = parts.find((part) => part.event === 'messages');
    const [, metadata] = (token?.data ?? []) as [unknown, { langgraph_node: string }];
    expect(metadata.langgraph_node).toBe('chat');
    const inner = parts.filter((part) => part.event.startsWith('updates|notes:'));
    expect(inner.map((part) => part.data)).toEqual([{ count: { answers: 1 } }]);
    expect(parts.find((part) => part.event === 'custom')?.data).toEqual({ step: 'chat', tokens: 3 });
    const values = parts.filter((part) => part.event === 'values').at(-1)?.data as { messages: { content: string }[] };
    expect(values.messages.map((message) => message.content)).toEqual(['hi', 'w0 w1 w2']);
    // Every event but end carries a distinct, rising id.
    const ids = parts.slice(0, -1).map((part) => Number(part.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);

    const run = await client.runs.get(thread.thread_id, created?.run_id as string);
    expect(run).toMatchObject({ status: 'success', thread_id: thread.thread_id, multitask_strategy: 'enqueue' });
    const again = await collect(client.runs.joinStream(thread.thread_id, run.run_id));
    expect(again[0]?.event).toBe('metadata');
    expect(again.at(-1)?.event).toBe('end');
    expect(tokensOf(again)).toEqual(tokensOf(parts));
  });

  it('resumes a dropped stream by itself, through Location and Last-Event-ID, with every token once', {
    timeout: 120_000,
  }, async () => {
    const proxy: TcpProxy = await startTcpProxy({
      host: '127.0.0.1',
      port: new URL(url).port ? Number(new URL(url).port) : 80,
    });
    try {
      const viaProxy = new Client({ apiUrl: proxy.via(url).replace(/\/$/, ''), apiKey: ADMIN_KEY });
      const thread = await viaProxy.threads.create();
      let cut = false;
      const parts = await collect(
        viaProxy.runs.stream(thread.thread_id, 'chat', {
          input: question(30, { pause: 0.05 }),
          streamMode: ['messages-tuple'],
        }),
        (part) => {
          // The third token: the model still has 27 to stream, 50 ms apart.
          if (!cut && part.event === 'messages' && tokensOf([part])[0] === 'w1') {
            cut = true;
            proxy.cut();
            proxy.restore();
          }
        },
      );
      expect(cut).toBe(true);
      const expected = Array.from({ length: 30 }, (_, index) => `w${index}`).join(' ');
      expect(tokensOf(parts).join('')).toBe(expected);
      expect(parts.filter((part) => part.event === 'metadata')).toHaveLength(1);
      expect(parts.at(-1)?.event).toBe('end');
    } finally {
      await proxy.close();
    }
  });

  it('stops at an interrupt and goes on with command: {resume}', { timeout: 120_000 }, async () => {
    const thread = await client.threads.create();
    const first = await collect(
      client.runs.stream(thread.thread_id, 'chat', { input: question(2, { ask: true }), streamMode: ['updates'] }),
    );
    const interrupt = first.find((part) => (part.data as Record<string, unknown> | null)?.__interrupt__);
    const asked = interrupt?.data as { __interrupt__: { value: unknown }[] };
    expect(asked.__interrupt__[0]?.value).toEqual({
      question: 'Send this answer?',
    });
    expect(first.at(-1)?.event).toBe('end');
    expect((await client.threads.get(thread.thread_id)).status).toBe('interrupted');
    // A run paused at interrupt() ended well, as the official server names it.
    const [paused] = await client.runs.list(thread.thread_id);
    expect(paused?.status).toBe('success');

    const second = await collect(
      client.runs.stream(thread.thread_id, 'chat', { command: { resume: 'yes' }, streamMode: ['values'] }),
    );
    const last = second.filter((part) => part.event === 'values').at(-1)?.data as { approved: unknown };
    expect(last.approved).toBe('yes');
    expect((await client.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it('waits, runs in the background, joins, lists, cancels and deletes runs; stateless runs too', {
    timeout: 120_000,
  }, async () => {
    const thread = await client.threads.create();
    const waited = (await client.runs.wait(thread.thread_id, 'chat', { input: question(2) })) as {
      messages: { content: string }[];
    };
    expect(waited.messages.map((message) => message.content)).toEqual(['hi', 'w0 w1']);

    const background = await client.runs.create(thread.thread_id, 'chat', {
      input: question(2),
      metadata: { purpose: 'test' },
    });
    expect(background).toMatchObject({ thread_id: thread.thread_id, metadata: { purpose: 'test' } });
    expect(['pending', 'running']).toContain(background.status);
    const joined = (await client.runs.join(thread.thread_id, background.run_id)) as { answers: number };
    expect(joined.answers).toBe(2);
    const listed = await client.runs.list(thread.thread_id);
    expect(listed.map((run) => run.run_id)).toContain(background.run_id);
    expect(listed.every((run) => run.status === 'success')).toBe(true);

    const slow = await client.runs.create(thread.thread_id, 'chat', { input: question(50, { pause: 0.2 }) });
    await client.runs.cancel(thread.thread_id, slow.run_id, true);
    expect((await client.runs.get(thread.thread_id, slow.run_id)).status).toBe('interrupted');
    await client.runs.delete(thread.thread_id, slow.run_id);
    await expect(client.runs.get(thread.thread_id, slow.run_id)).rejects.toThrow(/404/);

    const stateless = (await client.runs.wait(null, 'chat', { input: question(1) })) as {
      messages: { content: string }[];
    };
    expect(stateless.messages.at(-1)?.content).toBe('w0');
    const batch = await client.runs.createBatch([
      { assistantId: 'chat', input: question(1) },
      { assistantId: 'chat', input: question(2) },
    ]);
    // No thread: each answers a thread id of its own, under which the SDK joins it.
    expect(new Set(batch.map((run) => run.thread_id)).size).toBe(2);
    const batchJoined = (await client.runs.join(batch[1]?.thread_id as string, batch[1]?.run_id as string)) as {
      messages: { content: string }[];
    };
    expect(batchJoined.messages.at(-1)?.content).toBe('w0 w1');
    await expect(client.threads.get(batch[1]?.thread_id as string)).rejects.toThrow(/404/);
  });

  it('sends a failed run’s error, then end; refuses what it cannot honour with a detail naming the field', {
    timeout: 120_000,
  }, async () => {
    const thread = await client.threads.create();
    const parts = await collect(client.runs.stream(thread.thread_id, 'chat', { input: question(-1) }));
    const error = parts.find((part) => part.event === 'error');
    expect(error?.data).toEqual({ error: 'ValueError', message: 'tokens must not be negative' });
    expect(parts.at(-1)?.event).toBe('end');

    const refused = await ctx.call('POST', `/langgraph/threads/${thread.thread_id}/runs`, {
      body: { assistant_id: 'chat', input: {}, webhook: 'https://example.com/hook' },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().detail).toMatch(/^webhook: /);
    const missing = await ctx.call('POST', '/langgraph/threads/7d1f4f6e-8f51-4b9d-9a1c-2b1f0f0e5f11/runs', {
      body: { assistant_id: 'chat', input: {} },
    });
    expect(missing.statusCode).toBe(404);
  });

  it('answers 409 for a run of another deployment on a thread bound to one; /v1 still answers 400', {
    timeout: 120_000,
  }, async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'chat', { input: question(1) });
    const { deploymentId: other } = await deploy(ctx, ['true']);
    const renamed = await ctx.call('PATCH', `/v1/deployments/${other}`, { body: { name: 'other' } });
    expect(renamed.statusCode, renamed.body).toBe(200);

    const refused = await ctx.call('POST', `/langgraph/threads/${thread.thread_id}/runs`, {
      body: { assistant_id: 'other', input: {} },
    });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toMatch(`thread ${thread.thread_id} belongs to deployment `);
    const v1 = await ctx.call('POST', '/v1/runs', {
      body: { deployment_id: other, thread_id: thread.thread_id, input: {} },
    });
    expect(v1.statusCode, v1.body).toBe(400);
    expect(v1.json().error.message).toMatch(`thread_id: thread ${thread.thread_id} belongs to deployment `);
  });
});
