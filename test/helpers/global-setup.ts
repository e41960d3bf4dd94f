import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { connectPglite } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { adminUrl, withDatabase } from './postgres-url.js';

declare module 'vitest' {
  export interface ProvidedContext {
    testDatabase: { kind: 'pglite'; dumpPath: string } | { kind: 'postgres'; url: string; template: string };
  }
}

/**
 * Migrates one database for the whole run; each test file then copies it, which is far
 * faster than migrating per file: PGlite loads a dump, PostgreSQL clones a template database.
 */
export default async function setup(project: TestProject) {
  if (process.env.TEST_DATABASE === 'container') return setupContainer(project);
  const url = process.env.TEST_DATABASE_URL;
  if (url) return setupPostgres(project, url);
  return setupPglite(project);
}

/**
 * `TEST_DATABASE=container`: a throwaway PostgreSQL in Docker through testcontainers, for a
 * machine with a Docker engine and no PostgreSQL of its own.
 */
async function setupContainer(project: TestProject) {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('postgres:17-alpine')
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start()
    .catch((error: unknown) => {
      throw new Error(`TEST_DATABASE=container needs a running Docker engine: ${String(error)}`);
    });
  const url = `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/postgres`;
  const teardown = await setupPostgres(project, url);
  return async () => {
    await teardown();
    await container.stop();
  };
}

async function setupPostgres(project: TestProject, url: string) {
  const template = `crewd_tpl_${process.pid}_${Date.now()}`;
  const client = new pg.Client({ connectionString: adminUrl(url) });
  await client.connect();
  await client.query(`create database ${template}`);
  const { connectPostgres } = await import('../../src/db/connect.js');
  const handle = connectPostgres(withDatabase(url, template), 2);
  await migrateToLatest(handle.db);
  await handle.close();
  project.provide('testDatabase', { kind: 'postgres', url, template });
  return async () => {
    await client.query(`drop database if exists ${template} with (force)`);
    await client.end();
  };
}

async function setupPglite(project: TestProject) {
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-test-'));
  // On disk, as crewd's own data folder: a new one starts from the installation's empty cluster, not initdb.
  const handle = await connectPglite({ dataDir: path.join(dir, 'db') });
  await migrateToLatest(handle.db);
  const dump = await dumpPglite(handle);
  const dumpPath = path.join(dir, 'migrated.tar');
  writeFileSync(dumpPath, Buffer.from(await dump.arrayBuffer()));
  await handle.close();
  rmSync(path.join(dir, 'db'), { recursive: true, force: true });
  project.provide('testDatabase', { kind: 'pglite', dumpPath });
  return () => rmSync(dir, { recursive: true, force: true });
}

async function dumpPglite(handle: Awaited<ReturnType<typeof connectPglite>>): Promise<Blob> {
  if (!handle.pglite) throw new Error('expected an embedded database');
  // Uncompressed (40 MB, 4 MB gzipped): each test file's load then skips the gunzip, about a quarter of its CPU.
  return handle.pglite.dumpDataDir('none');
}
