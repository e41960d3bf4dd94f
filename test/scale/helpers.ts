import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { describe, expect, inject, it } from 'vitest';
import type { Database } from '../../src/db/types.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { usingPostgres } from '../helpers/database.js';
import { until as poll } from '../helpers/poll.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';
import { readStream as readRunStream, runProcesses } from '../runs/helpers.js';

export const CREWS = path.resolve(import.meta.dirname, '../../examples/crews');
export const crew = (file: string) => [process.execPath, path.join(CREWS, file)];

// biome-ignore lint/suspicious/noExplicitAny: answers of the API, checked by the tests' expectations.
type Json = any;

/** A crewd instance as a real child process; identity is host name + its own DATA_DIR. */
export interface Instance {
  name: string;
  server: ServerProcess;
  baseUrl: string;
  dataDir: string;
  call(method: string, url: string, body?: unknown): Promise<{ status: number; json: () => Promise<Json> }>;
  /** kill -9: no shutdown, no lease release. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
}

export async function startInstance(
  name: string,
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<Instance> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `crewd-${name}-`));
  const server = await startServer({
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    BOOTSTRAP_API_KEY: ADMIN_KEY,
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    INSTANCE_LEASE_SECONDS: '3',
    ...env,
  });
  let ended = false;
  void server.exited.then(() => {
    ended = true;
  });
  const instance: Instance = {
    name,
    server,
    baseUrl: server.baseUrl,
    dataDir,
    async call(method, url, body) {
      const response = await fetch(`${server.baseUrl}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, json: async () => JSON.parse(text) };
    },
    async kill() {
      if (!ended) server.child.kill('SIGKILL');
      await server.exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
    async stop() {
      if (!ended) server.child.kill('SIGTERM');
      await server.exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return instance;
}

/** The shared poll, with a longer default: instances are separate processes on a busy machine. */
export const until = <T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 30_000) =>
  poll(probe, timeoutMs);

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function deploy(instance: Instance, command: string[]): Promise<string> {
  const created = await instance.call('POST', '/v1/deployments', {
    name: `crew-${Math.random().toString(36).slice(2)}`,
  });
  if (created.status !== 201) throw new Error(`deployment: ${JSON.stringify(await created.json())}`);
  const deploymentId = (await created.json()).id as string;
  const versioned = await instance.call('POST', `/v1/deployments/${deploymentId}/versions`, {
    command,
    environment: 'production',
  });
  if (versioned.status !== 201) throw new Error(`version: ${JSON.stringify(await versioned.json())}`);
  return deploymentId;
}

export async function startRun(
  instance: Instance,
  deploymentId: string,
  input: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<{ run_id: string; status: string }> {
  const response = await instance.call('POST', '/v1/runs', { deployment_id: deploymentId, input, ...extra });
  if (response.status !== 202) throw new Error(`run: ${response.status} ${JSON.stringify(await response.json())}`);
  return response.json();
}

export async function getRun(instance: Instance, runId: string): Promise<Json> {
  const response = await instance.call('GET', `/v1/runs/${runId}`);
  return response.json();
}

export interface SseMessage {
  id?: string;
  data?: Record<string, unknown>;
  comment?: string;
}

/** Reads a run's event stream over a real socket until the server ends it or `stopWhen` says so. */
export async function readStream(
  url: string,
  stopWhen?: (message: SseMessage) => boolean,
): Promise<{ status: number; messages: SseMessage[] }> {
  const { status, messages } = await readRunStream(url, {
    stopWhen: stopWhen && ((message) => stopWhen(message as SseMessage)),
  });
  return { status, messages: messages as SseMessage[] };
}

/**
 * A host pid of a run's runner once it has written its first event: found by CREWD_RUN_ID, since
 * the pid a crew reports is its own PID namespace's when it runs in the sandbox.
 */
export const runnerPid = (db: Kysely<Database>, runId: string, timeoutMs?: number) =>
  until(async () => {
    const row = await db
      .selectFrom('run_events')
      .select('seq')
      .where('run_id', '=', runId)
      .where('type', '=', 'log')
      .executeTakeFirst();
    return row ? runProcesses(runId).at(-1) : undefined;
  }, timeoutMs);

/**
 * On the embedded database, one test says why a file's tests need PostgreSQL, so the summary
 * shows it rather than a bare skip. CI runs the suite on PostgreSQL too, where they run.
 */
export function explainPostgresOnly(title: string, why: string): void {
  describe.runIf(!usingPostgres())(`${title} (embedded database)`, () => {
    it(`runs only on PostgreSQL: ${why}`, () => {
      expect(inject('testDatabase').kind).toBe('pglite');
    });
  });
}
