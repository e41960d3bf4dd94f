import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WAITING_CALLS, RunCalls } from '../../src/execution/run-calls.js';
import { answerStoreCall } from '../../src/langgraph-api/store-calls.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { until } from '../helpers/poll.js';

/** A run's store calls as active-runs.ts answers them, on a real database: what goes back on the run's channel. */
describe("a run's store calls", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
    await database.handle.db
      .insertInto('organizations')
      .values([
        { id: 'org_calls_a', name: 'a' },
        { id: 'org_calls_b', name: 'b' },
      ])
      .execute();
  });
  afterAll(async () => {
    await database.destroy();
  });

  /** The calls of a run of `orgId`, and the answer lines its channel got, parsed. */
  function callsOf(orgId: string) {
    const lines: { answer: { id: string; result?: unknown; error?: string } }[] = [];
    const handler = (org: string, fields: Record<string, unknown>) => answerStoreCall(database.handle.db, org, fields);
    const calls = new RunCalls(orgId, handler, (line) => lines.push(JSON.parse(line)), pino({ level: 'silent' }));
    return { calls, lines };
  }

  it(`refuses a call at once while ${MAX_WAITING_CALLS} of the run wait, and answers the others`, async () => {
    const { calls, lines } = callsOf('org_calls_a');
    const total = MAX_WAITING_CALLS + 4;
    for (let n = 1; n <= total; n += 1) calls.take({ id: String(n), op: 'get', namespace: ['x'], key: 'k' });
    // The calls past the bound are refused before any answer could come.
    expect(lines.map((line) => line.answer.id)).toEqual(['17', '18', '19', '20']);
    expect(lines[0]?.answer.error).toContain(`more than ${MAX_WAITING_CALLS} calls of the run are waiting`);
    await until(() => lines.length === total);
    // Each answer names its call: on PostgreSQL's pool, calls end in any order.
    const answers = lines.slice(4).map((line) => line.answer);
    expect(answers.sort((a, b) => Number(a.id) - Number(b.id))).toEqual(
      Array.from({ length: MAX_WAITING_CALLS }, (_, i) => ({ id: String(i + 1), result: null })),
    );
  });

  it("reaches only its run's organization, whatever the line says", async () => {
    const a = callsOf('org_calls_a');
    a.calls.take({ id: '1', op: 'put', namespace: ['mine'], key: 'k', value: { of: 'a' } });
    await until(() => a.lines.length === 1);
    const b = callsOf('org_calls_b');
    b.calls.take({ id: '1', op: 'get', namespace: ['mine'], key: 'k' });
    b.calls.take({ id: '2', op: 'get', namespace: ['mine'], key: 'k', org_id: 'org_calls_a' });
    b.calls.take({ id: '3', op: 'search', namespace_prefix: [] });
    await until(() => b.lines.length === 3);
    const byId = Object.fromEntries(b.lines.map((line) => [line.answer.id, line.answer]));
    expect(byId['1']).toEqual({ id: '1', result: null });
    expect(byId['2']?.error).toMatch(/^store call refused: /);
    expect(byId['3']).toEqual({ id: '3', result: [] });
  });

  it("searches with LangGraph's filter operators, and refuses one it does not know", async () => {
    const { calls, lines } = callsOf('org_calls_a');
    for (const [key, score] of [
      ['low', 2],
      ['high', 8],
    ] as const) {
      calls.take({ id: key, op: 'put', namespace: ['scores'], key, value: { score } });
    }
    await until(() => lines.length === 2);
    calls.take({ id: 'over', op: 'search', namespace_prefix: ['scores'], filter: { score: { $gt: 5 } } });
    calls.take({ id: 'unknown', op: 'search', namespace_prefix: ['scores'], filter: { score: { $in: [2] } } });
    await until(() => lines.length === 4);
    const byId = Object.fromEntries(lines.map((line) => [line.answer.id, line.answer]));
    expect(((byId.over?.result ?? []) as { key: string }[]).map((item) => item.key)).toEqual(['high']);
    expect(byId.unknown?.error).toMatch(/^store call refused: filter: score: unknown operator \$in/);
  });

  it('answers nothing once the run ended, and takes no more calls', async () => {
    const { calls, lines } = callsOf('org_calls_a');
    calls.take({ id: '1', op: 'put', namespace: ['late'], key: 'first', value: {} });
    calls.close();
    calls.take({ id: '2', op: 'put', namespace: ['late'], key: 'second', value: {} });
    // Once the call taken before the end has run (its item is there), its answer would have been sent.
    const keys = async () => {
      const check = callsOf('org_calls_a');
      check.calls.take({ id: 'seen', op: 'search', namespace_prefix: ['late'] });
      const [line] = await until(() => (check.lines.length === 1 ? check.lines : null));
      return (line?.answer.result as { key: string }[] | undefined)?.map((item) => item.key) ?? [];
    };
    let seen: string[] = [];
    await until(async () => {
      seen = await keys();
      return seen.includes('first');
    });
    expect(lines).toEqual([]);
    expect(seen).not.toContain('second');
  });
});
