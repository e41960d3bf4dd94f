import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { crew, deploy, explainPostgresOnly, getRun, type Instance, startInstance, until } from '../scale/helpers.js';

explainPostgresOnly(
  '/mcp on several instances',
  'embedded PGlite is one process by design, so there is no second instance to start',
);

/**
 * The official client behind a load balancer that sends its notifications/cancelled to `other` and everything else
 * to `home`: the cancellation lands on another instance than the one answering the call.
 */
async function balancedClient(home: Instance, other: Instance): Promise<{ client: Client; sentOther: () => number }> {
  let sent = 0;
  const cancellations = (init?: RequestInit) =>
    typeof init?.body === 'string' && init.body.includes('"notifications/cancelled"');
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', home.baseUrl), {
    requestInit: { headers: { authorization: `Bearer ${ADMIN_KEY}` } },
    fetch: (url, init) => {
      if (!cancellations(init)) return fetch(url, init);
      sent++;
      return fetch(new URL('/mcp', other.baseUrl), init);
    },
  });
  const client = new Client({ name: 'crewd-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, sentOther: () => sent };
}

describe.runIf(usingPostgres())('/mcp on several instances of one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = database.url as string;
    [a, b] = await Promise.all([startInstance('mcp-a', url), startInstance('mcp-b', url)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.destroy();
  });

  it('cancels the run of a call answered by A when the cancellation reaches B', async () => {
    const deploymentId = await deploy(a, crew('slow.mjs'));
    const { client, sentOther } = await balancedClient(a, b);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.description)).toEqual([expect.stringContaining('crewd deployment crew-')]);
      const name = tools[0]?.name;
      let runId = '';
      const controller = new AbortController();
      const call = client.callTool({ name: name as string, arguments: { interval_ms: 20 } }, undefined, {
        signal: controller.signal,
        onprogress: (progress) => {
          // The notification's _meta names the run (the SDK hands the whole params over).
          const meta = (progress as { _meta?: Record<string, unknown> })._meta;
          runId = (meta?.['crewd/run_id'] as string | undefined) ?? runId;
          controller.abort('stopped from another instance');
        },
      });
      await expect(call).rejects.toThrow('stopped from another instance');
      const run = await until(async () => {
        const found = await getRun(a, runId);
        return found.status === 'canceled' ? found : null;
      });
      expect(run.deployment_id).toBe(deploymentId);
      // A never heard of the cancellation: B found the call's run in the database.
      expect(sentOther()).toBe(1);
    } finally {
      await client.close();
    }
  });
});
