import { expect } from 'vitest';
import type { TestContext } from '../helpers/app.js';

/** Creates a table and returns its body; fails the test on any other answer. */
export async function createTable(ctx: TestContext, body: unknown, key?: string) {
  const response = await ctx.call('POST', '/v1/tables', { body, ...(key ? { key } : {}) });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

export async function insertRows(ctx: TestContext, tableId: string, rows: unknown[], key?: string) {
  const response = await ctx.call('POST', `/v1/tables/${tableId}/rows`, { body: rows, ...(key ? { key } : {}) });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().rows as Array<Record<string, unknown>>;
}

export async function query(ctx: TestContext, tableId: string, body: unknown) {
  const response = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { rows: Array<Record<string, unknown>>; total: number; limit: number; offset: number };
}

/** A new organization with its own admin key. */
export async function otherOrganization(ctx: TestContext, name: string): Promise<string> {
  const response = await ctx.call('POST', '/v1/organizations', { body: { name } });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().api_key.key;
}

export function expectError(response: { statusCode: number; json(): unknown; body: string }, status: number) {
  expect(response.statusCode, response.body).toBe(status);
  const body = response.json() as { error: { message: string; code: string } };
  return body.error;
}
