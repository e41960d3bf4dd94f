import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { bootstrapDefaultOrganization } from '../../src/access/bootstrap.js';
import { type AppDependencies, buildApp } from '../../src/app.js';
import type { RunTimings } from '../../src/compose.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export const ADMIN_KEY = 'test-admin-key-0123456789';

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface TestContext {
  /** The app; `restart` replaces it. */
  app: FastifyInstance;
  database: TestDatabase;
  config: Config;
  /** The bootstrap admin key of organization `default`. */
  adminKey: string;
  /** The app's address on a real socket, when built with `listen` (streams need one). */
  baseUrl: string;
  /** `app.inject` with a bearer key (default: the admin key) and a JSON body. */
  call(method: InjectOptions['method'], url: string, options?: CallOptions): Promise<LightMyRequestResponse>;
  /** Everything the app logged (at LOG_LEVEL, default silent). */
  logs(): string;
  /** Builds a new app on the same database (a restart after `closeApp`); it becomes `app`. */
  restart(): Promise<void>;
  /** Closes the app only; the database stays for another app. */
  closeApp(): Promise<void>;
  /** Closes the app and drops the database. */
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Settings over the test defaults (bootstrap key, silent log, PATH). */
  env?: Record<string, string>;
  /** An existing database (to restart on it); default a fresh one. */
  database?: TestDatabase;
  timings?: Partial<RunTimings>;
  webhookWorker?: AppDependencies['webhookWorker'];
  cronTimings?: AppDependencies['cronTimings'];
  /** Listen on a real port as well as answering `inject`. */
  listen?: boolean;
}

/**
 * A test's settings, with a DATA_DIR of its own unless `env` names one: test files run side by side,
 * and an app sharing another's DATA_DIR would remove that one's built versions at its start (they
 * are not in its database).
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    BOOTSTRAP_API_KEY: ADMIN_KEY,
    LOG_LEVEL: 'silent',
    DATA_DIR: env.DATA_DIR ?? mkdtempSync(path.join(tmpdir(), 'crewd-test-')),
    PATH: process.env.PATH ?? '',
    // The suite runs sandboxed where bubblewrap works (auto), and plain with RUNNER_SANDBOX=off.
    RUNNER_SANDBOX: process.env.RUNNER_SANDBOX,
    ...env,
  });
}

async function listenOn(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return `http://127.0.0.1:${address.port}`;
}

/** The one way tests build the app: on a fresh database (or `database`), bootstrapped with ADMIN_KEY. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestContext> {
  const config = testConfig(options.env);
  // A DATA_DIR the test did not name was made for this app alone, and goes with it.
  const ownDataDir = options.env?.DATA_DIR ? null : config.dataDir;
  const database = options.database ?? (await createTestDatabase());
  await bootstrapDefaultOrganization(database.handle.db, config.bootstrapApiKey);
  let logText = '';
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logText += chunk.toString();
      done();
    },
  });
  const build = async () => {
    const app = await buildApp({
      config,
      database: database.handle,
      logger: createLogger(config.logLevel, sink),
      timings: options.timings,
      webhookWorker: options.webhookWorker,
      cronTimings: options.cronTimings,
    });
    await app.ready();
    return app;
  };
  let appClosed = false;
  const ctx: TestContext = {
    app: await build(),
    database,
    config,
    adminKey: ADMIN_KEY,
    baseUrl: '',
    logs: () => logText,
    call(method, url, callOptions = {}) {
      const key = callOptions.key === undefined ? ADMIN_KEY : callOptions.key;
      const headers: Record<string, string> = { ...callOptions.headers };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      const payload = callOptions.body === undefined ? {} : { payload: callOptions.body as object };
      return ctx.app.inject({ method, url, headers, ...payload });
    },
    async restart() {
      ctx.app = await build();
      appClosed = false;
      if (options.listen) ctx.baseUrl = await listenOn(ctx.app);
    },
    async closeApp() {
      if (appClosed) return;
      appClosed = true;
      await ctx.app.close();
    },
    async close() {
      await ctx.closeApp();
      await database.destroy();
      if (ownDataDir) rmSync(ownDataDir, { recursive: true, force: true });
    },
  };
  if (options.listen) ctx.baseUrl = await listenOn(ctx.app);
  return ctx;
}

/** The app on a fresh database, answering `inject`; env overrides config. */
export const createTestContext = (env: Record<string, string> = {}) => startTestApp({ env });

/** Creates a key in the caller's organization and returns its secret. */
export async function createKey(
  ctx: TestContext,
  name: string,
  role: 'admin' | 'member',
  asKey?: string,
): Promise<string> {
  const response = await ctx.call('POST', '/v1/api-keys', { key: asKey ?? ctx.adminKey, body: { name, role } });
  if (response.statusCode !== 201) throw new Error(`creating key failed: ${response.body}`);
  return response.json().key;
}
