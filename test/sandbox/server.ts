import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';
import { until } from '../runs/helpers.js';

export const PROBE = path.resolve(import.meta.dirname, 'fixtures/probe.mjs');
export const KEY = 'sandbox-test-bootstrap-key-0123456789';
const TERMINAL = ['succeeded', 'failed', 'canceled'];

/** A shell line that ends a run with `json` as its output. */
export const completed = (json: string) =>
  `printf '%s\\n' "{\\"type\\":\\"run.completed\\",\\"data\\":{\\"output\\":${json}}}"`;
/** A shell crew: writes its home, then answers what it read back, its HOME and what its home holds. */
export const HOME_CREW = [
  '/bin/sh',
  '-c',
  `echo mine > "$HOME/own.txt" && ${completed('{\\"home\\":\\"$HOME\\",\\"read\\":\\"$(cat "$HOME/own.txt")\\",\\"files\\":\\"$(ls -A "$HOME")\\"}')}`,
];

export type Json = Record<string, unknown>;

/**
 * A real crewd process (src/server.ts) on its own DATA_DIR, on PGlite or, with TEST_DATABASE_URL,
 * on PostgreSQL: its environment then holds the database URL a crew must not reach.
 */
export interface SandboxServer {
  server: ServerProcess;
  dataDir: string;
  call(method: string, url: string, body?: unknown): Promise<Json>;
  /** Deploys `command` as a running version; returns the deployment id. */
  deploy(command: string[], version?: Json): Promise<string>;
  startRun(deploymentId: string, input?: Json): Promise<{ run_id: string; status: string }>;
  waitForRun(runId: string): Promise<Json>;
  stop(): Promise<void>;
}

export async function startSandboxServer(env: Record<string, string>): Promise<SandboxServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-sandbox-'));
  let database: TestDatabase | undefined;
  const backend: Record<string, string> = {};
  if (process.env.TEST_DATABASE_URL) {
    database = await createTestDatabase();
    backend.DATABASE_URL = database.url as string;
  }
  const server = await startServer({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, ...backend, ...env });

  async function call(method: string, url: string, body?: unknown): Promise<Json> {
    const response = await fetch(`${server.baseUrl}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as Json;
    if (response.status >= 400) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  }

  return {
    server,
    dataDir,
    call,
    async deploy(command, version = {}) {
      const deployment = await call('POST', '/v1/deployments', { name: `sandbox-${Math.random()}` });
      await call('POST', `/v1/deployments/${deployment.id}/versions`, {
        command,
        environment: 'production',
        ...version,
      });
      return deployment.id as string;
    },
    startRun: async (deploymentId, input = {}) =>
      (await call('POST', '/v1/runs', { deployment_id: deploymentId, input })) as { run_id: string; status: string },
    waitForRun: (runId) =>
      until(async () => {
        const run = await call('GET', `/v1/runs/${runId}`);
        return TERMINAL.includes(run.status as string) ? run : null;
      }, 30_000),
    async stop() {
      server.child.kill('SIGTERM');
      await server.exited;
      await database?.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
