import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';

type Operation = {
  operationId?: string;
  description?: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, { $ref?: string; content?: Record<string, unknown> }>;
};

describe('OpenAPI document', () => {
  let ctx: TestContext;
  let operations: { path: string; method: string; operation: Operation }[];
  let doc: { paths: Record<string, Record<string, Operation>>; components: { responses: Record<string, unknown> } };

  beforeAll(async () => {
    ctx = await createTestContext();
    doc = (await ctx.call('GET', '/openapi.json', { key: null })).json();
    operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
  });
  afterAll(async () => ctx?.close());

  it('gives every operation a unique operationId and a description', () => {
    const ids = operations.map(({ operation }) => operation.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const undescribed = operations.filter(({ operation }) => !operation.description?.trim());
    expect(undescribed.map(({ path, method }) => `${method} ${path}`)).toEqual([]);
  });

  it('names every error response, with 401 and 429 on keyed routes and 409 where a conflict can happen', () => {
    for (const { path, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        // The LangGraph API's errors are its own {"detail"} body (CONTRACTS §14), named as a schema.
        if (path.startsWith('/langgraph/') && status !== '429') {
          const schema = (response.content?.['application/json'] as { schema?: { $ref?: string } })?.schema;
          expect(schema?.$ref, `${path} ${status}`).toBe('#/components/schemas/LangGraphError');
        } else expect(response.$ref).toMatch(/^#\/components\/responses\/[A-Z][A-Za-z]+$/);
      }
      if (path.startsWith('/v1/')) {
        expect(operation.responses[401]?.$ref).toBe('#/components/responses/Unauthorized');
        expect(operation.responses[429]?.$ref).toBe('#/components/responses/RateLimited');
      }
    }
    expect(doc.paths['/v1/tables']!.post!.responses[409]?.$ref).toBe('#/components/responses/Conflict');
    expect(doc.paths['/v1/threads/{id}/runs']!.post!.responses[409]).toBeDefined();
    expect(doc.paths['/v1/runs/{id}']!.get!.responses[404]?.$ref).toBe('#/components/responses/NotFound');
    expect(doc.paths['/v1/tables/{id}/rows']!.post!.responses[413]).toBeDefined();
    expect(Object.keys(doc.components.responses)).toEqual(expect.arrayContaining(['Unauthorized', 'RateLimited']));
  });

  it('lists the event stream as text/event-stream', () => {
    const stream = doc.paths['/v1/runs/{id}/events']!.get!;
    expect(Object.keys(stream.responses[200]!.content!)).toEqual(['text/event-stream']);
  });

  it('puts no lock on routes that need no key', () => {
    for (const path of ['/healthz', '/readyz', '/webhooks/runs/{token}']) {
      for (const operation of Object.values(doc.paths[path]!)) expect(operation.security).toEqual([]);
    }
    expect(doc.paths['/v1/runs']!.get!.security).toBeUndefined();
  });

  it('gives the bodies people type an example', () => {
    for (const path of ['/v1/deployments', '/v1/runs', '/v1/tables', '/v1/webhooks', '/v1/api-keys']) {
      const media = doc.paths[path]!.post!.requestBody!.content['application/json']!;
      expect(media.example, path).toBeTypeOf('object');
    }
  });
});
