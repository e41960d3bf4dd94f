import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';
import { oddObject, oddValue, seededRandom } from './random.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
const REQUESTS_PER_ROUTE = Number(process.env.FUZZ_REQUESTS_PER_ROUTE ?? 40);
const TRIVIAL_CREW = path.resolve(import.meta.dirname, '../../examples/crews/trivial.mjs');

interface Operation {
  method: string;
  path: string;
  body?: { properties?: Record<string, { type?: string }> };
}

/**
 * Sends thousands of malformed requests to every route of the OpenAPI document (wrong types,
 * huge and deep JSON, odd unicode, bad ids, bad filters, bad headers) and checks that none
 * answers 5xx, that every error has the body of CONTRACTS §2, and that the service still serves.
 */
describe('fuzzing every route', () => {
  let ctx: TestContext;
  const realIds: Record<string, string> = {};

  beforeAll(async () => {
    ctx = await createTestContext({ WEBHOOK_ALLOW_PRIVATE_URLS: 'false' });
    // Real ids, so malformed bodies also reach the validation behind the path. A set-up call that
    // fails stops the file: fuzzing without them would quietly test less.
    const post = async (url: string, body: unknown) => {
      const response = await ctx.call('POST', url, { body });
      if (response.statusCode >= 300)
        throw new Error(`fuzz set-up: POST ${url} → ${response.statusCode} ${response.body}`);
      return response.json() as Record<string, unknown>;
    };
    const deployment = await post('/v1/deployments', { name: 'fuzz' });
    realIds.deployments = deployment.id as string;
    const version = await post(`/v1/deployments/${deployment.id}/versions`, {
      command: [process.execPath, TRIVIAL_CREW],
      environment: 'production',
    });
    realIds.versions = version.id as string;
    realIds.runs = (await post('/v1/runs', { deployment_id: deployment.id, input: {} })).run_id as string;
    realIds.threads = (await post('/v1/threads', { deployment_id: deployment.id })).thread_id as string;
    const webhook = await post('/v1/webhooks', {
      deployment_id: deployment.id,
      name: 'fuzz',
      url: 'https://example.com/hook',
      events: ['run.succeeded'],
    });
    realIds.webhooks = webhook.id as string;
    const table = await post('/v1/tables', { name: 'fuzz', columns: [{ name: 'n', type: 'number' }] });
    realIds.tables = table.id as string;
    realIds.rows = (await post(`/v1/tables/${table.id}/rows`, { n: 1 })).id as string;
  });
  afterAll(() => ctx.close());

  async function operations(): Promise<Operation[]> {
    const doc = (await ctx.call('GET', '/openapi.json', { key: null })).json();
    const out: Operation[] = [];
    for (const [route, methods] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const [method, operation] of Object.entries(methods)) {
        const body = (operation as { requestBody?: { content?: Record<string, { schema?: unknown }> } }).requestBody
          ?.content?.['application/json']?.schema as Operation['body'];
        out.push({ method: method.toUpperCase(), path: route, body });
      }
    }
    return out;
  }

  const BAD_IDS = [
    'x',
    '%00',
    '..',
    'tbl_',
    'run_zzzzzzzzzzzzzzzzzzzzzzzz',
    '%F0%9F%92%A9',
    'a'.repeat(3000),
    '%E2%80%AE',
    "'%20or%201=1",
  ];

  function fillPath(template: string, random: ReturnType<typeof seededRandom>): string {
    return template.replace(/\{(\w+)\}/g, (_match, name: string) => {
      if (name === 'environment') return random.pick(['production', 'staging', 'qa', '%00']);
      const resource = template.split('/')[2] ?? '';
      const real = name === 'rowId' ? realIds.rows : name === 'delivery_id' ? undefined : realIds[resource];
      if (real && random.next() < 0.5) return real;
      return random.pick(BAD_IDS);
    });
  }

  function badBody(operation: Operation, random: ReturnType<typeof seededRandom>): unknown {
    const properties = operation.body?.properties ?? {};
    const names = Object.keys(properties);
    switch (random.int(6)) {
      case 0:
        return oddValue(random);
      case 1:
        return oddObject(random);
      case 2: {
        // Every declared field with a value of a random (usually wrong) kind.
        const body: Record<string, unknown> = {};
        for (const name of names) body[name] = oddValue(random);
        return body;
      }
      case 3: {
        const body: Record<string, unknown> = {};
        for (const name of names) if (random.next() < 0.5) body[name] = oddValue(random);
        return body;
      }
      case 4:
        return {
          filter: { and: [{ column: 'n', operator: random.pick(['gte', 'contains', 'xx']), value: oddValue(random) }] },
        };
      default:
        return [oddObject(random), oddValue(random)];
    }
  }

  it('answers every malformed request with a 4xx error body, never a 5xx', async () => {
    const random = seededRandom(SEED);
    const ops = await operations();
    expect(ops.length).toBeGreaterThan(10);
    let sent = 0;
    const failures: string[] = [];
    for (const operation of ops) {
      if (operation.path.endsWith('/events')) continue; // a stream; covered by the bad-id cases below
      for (let i = 0; i < REQUESTS_PER_ROUTE; i += 1) {
        const url = fillPath(operation.path, random);
        const query =
          random.next() < 0.3
            ? `?${random.pick(['limit=abc', 'limit=-1', 'offset=1e309', 'limit=99999999999999999999', 'status=%00', 'deployment_id=', 'limit=1&limit=2', 'x=%ZZ'])}`
            : '';
        const headers: Record<string, string> = { authorization: `Bearer ${ctx.adminKey}` };
        let payload: string | undefined;
        if (operation.method !== 'GET' && operation.method !== 'DELETE') {
          const kind = random.int(10);
          if (kind === 0) {
            headers['content-type'] = random.pick(['text/plain', 'application/xml', 'multipart/form-data; boundary=x']);
            payload = 'not json';
          } else if (kind === 1) {
            headers['content-type'] = 'application/json';
            payload = random.pick(['{', '{"a":', '[1,2', 'nul', '"\\ud800"', '{"a":1}{"b":2}', '\u0000']);
          } else {
            headers['content-type'] = 'application/json';
            payload = JSON.stringify(badBody(operation, random));
          }
        }
        if (random.next() < 0.1) headers['idempotency-key'] = random.pick(['', 'k'.repeat(5000), '\u00e9t\u00e9']);
        if (random.next() < 0.05) headers['last-event-id'] = random.pick(['-1', 'abc', '1e400']);
        const response = await ctx.app.inject({
          method: operation.method as 'GET',
          url: `${url}${query}`,
          headers,
          payload,
        });
        sent += 1;
        const describeCase = `${operation.method} ${url}${query} ${payload?.slice(0, 200) ?? ''} -> ${response.statusCode} ${response.body.slice(0, 300)}`;
        if (response.statusCode >= 500) {
          failures.push(describeCase);
          continue;
        }
        if (response.statusCode >= 400) {
          const body = response.json();
          // The LangGraph API answers its clients' error shape, {"detail": "…"} (CONTRACTS §14); /v1 its own.
          const named = operation.path.startsWith('/langgraph/')
            ? typeof body?.detail === 'string'
            : typeof body?.error?.message === 'string' && typeof body?.error?.code === 'string';
          if (!named) failures.push(describeCase);
        }
      }
    }
    expect(failures.slice(0, 20)).toEqual([]);
    expect(sent).toBeGreaterThan(1000);

    for (const id of BAD_IDS) {
      const response = await ctx.call('GET', `/v1/runs/${id}/events`);
      expect(response.statusCode).toBeGreaterThanOrEqual(400);
      expect(response.statusCode).toBeLessThan(500);
    }
    const health = await ctx.call('GET', '/readyz', { key: null });
    expect(health.statusCode).toBe(200);
  }, 300_000);
});
