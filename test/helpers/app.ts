import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { bootstrapDefaultOrganization } from '../../src/access/bootstrap.js';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export const ADMIN_KEY = 'test-admin-key-0123456789';

export interface TestContext {
  app: FastifyInstance;
  database: TestDatabase;
  config: Config;
  /** The bootstrap admin key of organization `default`. */
  adminKey: string;
  /** `app.inject` with a bearer key (default: the admin key) and a JSON body. */
  call(method: InjectOptions['method'], url: string, options?: CallOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Builds the app on a fresh database, bootstrapped with ADMIN_KEY; env overrides config. */
export async function createTestContext(env: Record<string, string> = {}): Promise<TestContext> {
  const config = loadConfig({
    BOOTSTRAP_API_KEY: ADMIN_KEY,
    LOG_LEVEL: 'silent',
    DATA_DIR: './data-test',
    RUNNER_SANDBOX: process.env.RUNNER_SANDBOX,
    ...env,
  });
  const database = await createTestDatabase();
  await bootstrapDefaultOrganization(database.handle.db, config.bootstrapApiKey);
  const app = await buildApp({ config, database: database.handle, logger: createLogger(config.logLevel) });
  await app.ready();

  return {
    app,
    database,
    config,
    adminKey: ADMIN_KEY,
    call(method, url, options = {}) {
      const key = options.key === undefined ? ADMIN_KEY : options.key;
      const headers: Record<string, string> = { ...options.headers };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      return app.inject({
        method,
        url,
        headers,
        ...(options.body === undefined ? {} : { payload: options.body as object }),
      });
    },
    async close() {
      await app.close();
      await database.destroy();
    },
  };
}

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
