import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryId } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { createRunContext, crew, deploy, type RunContext, startRun, waitForRun } from '../runs/helpers.js';

/** Whether a function of this name is on the call stack (Kysely's own frames are many: the default limit is 10). */
function calledFrom(name: string): boolean {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 100;
  try {
    return new Error().stack?.includes(name) ?? false;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * Holds the answer to the run queue's next look for pending runs (a query made from `lookForPending`, found by its
 * call stack when Kysely compiles it) until `release`: a look that stays under way as long as the test likes.
 */
function lookGate() {
  let armed = false;
  let held = () => {};
  let release = () => {};
  const holding = new Set<QueryId>();
  const plugin: KyselyPlugin = {
    transformQuery(args: PluginTransformQueryArgs) {
      if (armed && calledFrom('lookForPending')) {
        armed = false;
        holding.add(args.queryId);
      }
      return args.node;
    },
    async transformResult(args: PluginTransformResultArgs) {
      if (holding.delete(args.queryId)) {
        held();
        await new Promise<void>((resolve) => (release = resolve));
      }
      return args.result;
    },
  };
  return {
    plugin,
    /** Resolves once the next look's query is held. */
    holdNextLook(): Promise<void> {
      armed = true;
      return new Promise<void>((resolve) => (held = resolve));
    },
    release: () => release(),
  };
}

// PostgreSQL only: Kysely holds a query's connection until its result is transformed, and the embedded database has one.
describe.runIf(usingPostgres())('a run admitted while the queue looks for pending runs', () => {
  const gate = lookGate();
  let database: TestDatabase;
  let ctx: RunContext;
  let trivial: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    const gated = { ...database, handle: { ...database.handle, db: database.handle.db.withPlugin(gate.plugin) } };
    ctx = await createRunContext({ MAX_CONCURRENT_RUNS: '1' }, undefined, gated);
    trivial = (await deploy(ctx, crew('trivial.mjs'))).deploymentId;
  });
  afterAll(async () => {
    gate.release();
    await ctx?.close();
  });

  it('starts at once when a slot is free: a look that finds nothing holds no slot', async () => {
    // The queue looks on every tick; with nothing pending, its look must not take the only slot from a new run.
    await gate.holdNextLook();
    const run = await startRun(ctx, trivial, { n: 1 });
    gate.release();

    expect(run.status).toBe('running');
    expect(await waitForRun(ctx, run.run_id)).toMatchObject({ status: 'succeeded' });
  });
});

describe.runIf(usingPostgres())("the service's start and the queue's first look", () => {
  const gate = lookGate();
  let database: TestDatabase;
  let ctx: RunContext | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    gate.release();
    await ctx?.close();
  });

  it('starts once the first look answered, so that a run posted at once is not queued behind nothing', async () => {
    const firstLookHeld = gate.holdNextLook();
    const gated = { ...database, handle: { ...database.handle, db: database.handle.db.withPlugin(gate.plugin) } };
    const starting = createRunContext({}, undefined, gated);
    await firstLookHeld;
    // Until the look answers, runs an earlier life left pending may exist and a new run would queue behind them.
    const early = await Promise.race([
      starting.then(() => 'started'),
      new Promise((resolve) => setTimeout(() => resolve('waiting for the look'), 1_000)),
    ]);
    expect(early).toBe('waiting for the look');
    gate.release();
    ctx = await starting;

    const trivial = (await deploy(ctx, crew('trivial.mjs'))).deploymentId;
    const run = await startRun(ctx, trivial, { n: 1 });
    expect(run.status).toBe('running');
    expect(await waitForRun(ctx, run.run_id)).toMatchObject({ status: 'succeeded' });
  });
});
