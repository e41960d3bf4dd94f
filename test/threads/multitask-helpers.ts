import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { waitForRun } from '../runs/helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: answers of the API, checked by the tests' expectations.
export type Json = any;

/** The folder `exclusive.mjs` keeps its lock and order files in. */
export function lockFolder(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-thread-locks-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Run ids in the order their runners started, as `exclusive.mjs` wrote them. */
export function startOrder(dir: string, threadId: string): string[] {
  try {
    return readFileSync(path.join(dir, `${threadId}.order`), 'utf8')
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

export async function threadRun(
  ctx: Pick<RunContext, 'call'>,
  threadId: string,
  body: Record<string, unknown>,
): Promise<{ statusCode: number; json: Json }> {
  const response = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body });
  return { statusCode: response.statusCode, json: response.json() };
}

/** The thread's runs, oldest first (the order a queue serves them). */
export async function runsOf(ctx: Pick<RunContext, 'call'>, threadId: string): Promise<Json[]> {
  const listed = (await ctx.call('GET', `/v1/runs?thread_id=${threadId}&limit=1000`)).json();
  return [...listed.runs].sort((a: Json, b: Json) =>
    a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1,
  );
}

export const waitAll = (ctx: Pick<RunContext, 'call'>, ids: string[]) =>
  Promise.all(ids.map((id) => waitForRun(ctx, id, undefined, 60_000)));

/** No runner of the thread ever found another one running. */
export function expectNoOverlap(runs: Json[]): void {
  for (const run of runs) expect(run.error_message).not.toBe('another run of this thread is running');
}
