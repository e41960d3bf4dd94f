import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/app.js';
import { deployNamed, mcpClient, otherOrganization } from '../mcp/helpers.js';
import { createRunContext, crew, type RunContext } from '../runs/helpers.js';

/** What organization A's objects hold, which no answer to organization B may carry. */
const MARKERS = ['A-QUESTION', 'A-META', 'A-STORE', 'A-ASSISTANT'];

interface Answer {
  statusCode: number;
  body: string;
}

/**
 * Organization B's keys (admin and member) against organization A's objects through the LangGraph API and /mcp:
 * A's thread (an interrupted one, with checkpoints), its run, its assistant, its store items and its cron, named by
 * their ids; and B's own deployment, of the same name, aimed at them. Each is 404 (409 only where an id is taken,
 * CONTRACTS §14) and says nothing of A's.
 */
describe("another organization's LangGraph threads, runs, store, crons and MCP calls", () => {
  let ctx: RunContext;
  const a = {} as { deployment: string; thread: string; run: string; assistant: string; cron: string };
  const b = {} as { admin: string; member: string; deployment: string };

  beforeAll(async () => {
    ctx = await createRunContext();
    a.deployment = await deployNamed(ctx, 'agent', crew('interrupting.mjs'), { mcp: true });
    a.thread = (await ctx.call('POST', '/langgraph/threads', { body: { metadata: { m: 'A-META' } } })).json().thread_id;
    const waited = await ctx.call('POST', `/langgraph/threads/${a.thread}/runs/wait`, {
      body: { assistant_id: 'agent', input: { ask: 'A-QUESTION' } },
    });
    expect(waited.statusCode, waited.body).toBe(200);
    a.run = (await ctx.call('GET', `/langgraph/threads/${a.thread}/runs`)).json()[0].run_id;
    const assistant = await ctx.call('POST', '/langgraph/assistants', {
      body: { graph_id: 'agent', name: 'A-ASSISTANT' },
    });
    a.assistant = assistant.json().assistant_id;
    const item = { namespace: ['users', 'alice'], key: 'profile', value: { note: 'A-STORE' } };
    expect((await ctx.call('PUT', '/langgraph/store/items', { body: item })).statusCode).toBe(204);
    const cron = await ctx.call('POST', `/langgraph/threads/${a.thread}/runs/crons`, {
      body: { assistant_id: 'agent', schedule: '0 0 * * *', input: { ask: 'A-QUESTION' } },
    });
    expect(cron.statusCode, cron.body).toBe(200);
    a.cron = cron.json().cron_id;

    b.admin = await otherOrganization(ctx, 'B');
    b.member = await createKey(ctx, 'member', 'member', b.admin);
    b.deployment = await deployNamed(ctx, 'agent', crew('interrupting.mjs'), { key: b.admin, mcp: true });
  });
  afterAll(async () => ctx?.close());

  const as = (key: string, body?: unknown) => ({ key: null, headers: { 'x-api-key': key }, body });

  function expectNothingOfA(answer: Answer, status: number): void {
    expect(answer.statusCode, answer.body).toBe(status);
    for (const marker of MARKERS) expect(answer.body).not.toContain(marker);
  }

  it.each(['admin', 'member'] as const)(
    "B's %s key reaches none of A's thread, its state or its runs",
    async (role) => {
      const key = b[role];
      const thread = `/langgraph/threads/${a.thread}`;
      const reads: [string, string, unknown?][] = [
        ['GET', thread],
        ['GET', `${thread}/state`],
        ['POST', `${thread}/history`, {}],
        ['POST', `${thread}/copy`, {}],
        ['PATCH', thread, { metadata: { taken: true } }],
        ['POST', `${thread}/state`, { values: { taken: true } }],
        ['GET', `${thread}/runs`],
        ['GET', `${thread}/runs/${a.run}`],
        ['GET', `${thread}/runs/${a.run}/join`],
        ['GET', `${thread}/runs/${a.run}/stream`],
        ['POST', `${thread}/runs/${a.run}/cancel`, {}],
        ['DELETE', `${thread}/runs/${a.run}`],
        ['GET', `/langgraph/runs/${a.run}/stream`],
        ['POST', '/langgraph/runs/cancel', { run_ids: [a.run] }],
        ['POST', '/langgraph/runs/cancel', { thread_id: a.thread, status: 'all' }],
        // B's own deployment, of the same name, on A's thread: as a new turn, as an answer to its interrupt, as a cron.
        ['POST', `${thread}/runs/wait`, { assistant_id: 'agent', input: {} }],
        ['POST', `${thread}/runs/wait`, { assistant_id: b.deployment, command: { resume: 'yes' } }],
        ['POST', `${thread}/runs/crons`, { assistant_id: 'agent', schedule: '0 0 * * *' }],
        ['DELETE', thread],
      ];
      for (const [method, url, body] of reads) {
        expectNothingOfA(await ctx.call(method as 'GET', url, as(key, body)), 404);
      }
      // Its id is taken (ids are one namespace), which is all B learns.
      const created = await ctx.call(
        'POST',
        `${thread}/runs`,
        as(key, { assistant_id: 'agent', if_not_exists: 'create' }),
      );
      expectNothingOfA(created, 409);
      const v1 = await ctx.call('GET', `/v1/runs/${a.run}`, { key });
      expectNothingOfA(v1, 404);
      const listed = await ctx.call('GET', `/v1/runs?thread_id=${a.thread}`, { key });
      expect(listed.json()).toEqual({ runs: [], total: 0 });
    },
  );

  it.each(['admin', 'member'] as const)(
    "B's %s key names A's assistant, graph, store and crons in vain",
    async (role) => {
      const key = b[role];
      for (const assistant of [a.assistant, a.deployment]) {
        expectNothingOfA(await ctx.call('GET', `/langgraph/assistants/${assistant}`, as(key)), 404);
        for (const path of ['/langgraph/runs/wait', '/langgraph/runs', '/langgraph/runs/crons']) {
          const body = { assistant_id: assistant, input: {}, schedule: '0 0 * * *' };
          expectNothingOfA(await ctx.call('POST', path, as(key, body)), 404);
        }
      }
      const assistants = await ctx.call('POST', '/langgraph/assistants/search', as(key, { graph_id: 'agent' }));
      expectNothingOfA(assistants, 200);
      expect(assistants.json().map((found: { assistant_id: string }) => found.assistant_id)).not.toContain(a.assistant);

      const search = await ctx.call('POST', '/langgraph/store/items/search', as(key, { namespace_prefix: ['users'] }));
      expectNothingOfA(search, 200);
      expect(search.json()).toEqual({ items: [] });
      const everything = await ctx.call('POST', '/langgraph/store/items/search', as(key, {}));
      expect(everything.json()).toEqual({ items: [] });
      const item = await ctx.call('GET', '/langgraph/store/items?namespace=users.alice&key=profile', as(key));
      expectNothingOfA(item, 200);
      expect(item.json()).toBeNull();
      const namespaces = await ctx.call('POST', '/langgraph/store/namespaces', as(key, {}));
      expect(namespaces.json()).toEqual({ namespaces: [] });

      const crons = await ctx.call('POST', '/langgraph/runs/crons/search', as(key, {}));
      expectNothingOfA(crons, 200);
      expect(crons.json()).toEqual([]);
      expectNothingOfA(await ctx.call('DELETE', `/langgraph/runs/crons/${a.cron}`, as(key)), 404);
      expect((await ctx.call('GET', '/v1/crons')).json().crons).toHaveLength(1);
    },
  );

  it("B's MCP client lists B's tools only and cannot run one in A's thread", async () => {
    const client = await mcpClient(ctx, b.member);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['agent']);
      const answered = await client.callTool({ name: 'agent', arguments: { thread_id: a.thread, resume: 'yes' } });
      expect(answered.isError).toBe(true);
      expect(JSON.stringify(answered)).toContain('Thread not found');
      for (const marker of MARKERS) expect(JSON.stringify(answered)).not.toContain(marker);
    } finally {
      await client.close();
    }
    // A's thread still waits at its interrupt, untouched.
    const state = await ctx.call('GET', `/langgraph/threads/${a.thread}`);
    expect(state.json()).toMatchObject({ status: 'interrupted', metadata: { m: 'A-META' } });
  });
});
