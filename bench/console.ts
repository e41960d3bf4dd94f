import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { chromium } from 'playwright-core';
import { bootstrapDefaultOrganization } from '../src/access/bootstrap.js';
import { buildApp } from '../src/app.js';
import { createCrewdClient, unwrap } from '../src/client/index.js';
import { loadConfig } from '../src/config.js';
import { connectPostgres, type DatabaseHandle } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { newId } from '../src/ids.js';
import { createLogger } from '../src/logger.js';
import { CREWS } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';

/**
 * `npm run bench -- console`: the gzipped JavaScript the console's sign-in page loads, and the time from
 * navigation to a runs list filled with 1,000 runs in headless Chromium, against the time of the API call that
 * fills it (read from the page's own resource timing). On PostgreSQL (BENCH_DATABASE_URL).
 */

const KEY = 'bench-admin-key-0123456789';
const RUNS = 1000;
const SAMPLES = 7;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

async function seedRuns(database: DatabaseHandle, baseUrl: string): Promise<void> {
  const client = createCrewdClient({ baseUrl, apiKey: KEY });
  const deployment = await unwrap(client.POST('/v1/deployments', { body: { name: 'bench' } }));
  const version = await unwrap(
    client.POST('/v1/deployments/{id}/versions', {
      params: { path: { id: deployment.id } },
      body: { command: [process.execPath, `${CREWS}/trivial.mjs`], env: {}, environment: 'production' },
    }),
  );
  const org = await database.db
    .selectFrom('organizations')
    .select('id')
    .where('name', '=', 'default')
    .executeTakeFirstOrThrow();
  const start = Date.now() - RUNS * 60_000;
  // Finished runs as an earlier day of work left them: the list reads them, nothing needs to run.
  const rows = Array.from({ length: RUNS }, (_, i) => ({
    id: newId('run'),
    org_id: org.id,
    deployment_id: deployment.id,
    version_id: version.id,
    environment: 'production' as const,
    thread_id: null,
    status: i % 10 === 0 ? ('failed' as const) : ('succeeded' as const),
    input: JSON.stringify({ topic: `topic ${i}` }),
    output: i % 10 === 0 ? null : JSON.stringify({ answer: `answer ${i}` }),
    error_message: i % 10 === 0 ? 'Runner exited with code 1' : null,
    instance_id: null,
    created_at: new Date(start + i * 60_000),
    started_at: new Date(start + i * 60_000 + 100),
    completed_at: new Date(start + i * 60_000 + 5000),
  }));
  await database.db
    .insertInto('runs')
    .values(rows as never)
    .execute();
}

export async function run(): Promise<void> {
  const scratch = await createScratchDatabase();
  const database = connectPostgres(scratch.url, 10);
  let app: FastifyInstance | null = null;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  try {
    await migrateToLatest(database.db);
    const config = loadConfig({ BOOTSTRAP_API_KEY: KEY, LOG_LEVEL: 'silent', DATA_DIR: './data-bench' });
    await bootstrapDefaultOrganization(database.db, config.bootstrapApiKey);
    app = await buildApp({ config, database, logger: createLogger('silent') });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    const baseUrl = `http://127.0.0.1:${address.port}`;
    await seedRuns(database, baseUrl);

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const signInPage = await context.newPage();
    const scripts: Promise<Buffer>[] = [];
    signInPage.on('response', (response) => {
      if (response.request().resourceType() === 'script') scripts.push(response.body());
    });
    await signInPage.goto(`${baseUrl}/console/`, { waitUntil: 'networkidle' });
    await signInPage.getByLabel('API key').waitFor();
    const gzipped = (await Promise.all(scripts)).reduce((sum, body) => sum + gzipSync(body).length, 0);
    printFigure('console sign-in page JavaScript (gzipped)', Math.round(gzipped / 102.4) / 10, 'KB', {
      op: '<=',
      target: 250,
    });
    await signInPage.close();

    const session = JSON.stringify(JSON.stringify({ key: KEY, role: 'admin' }));
    await context.addInitScript(`sessionStorage.setItem('crewd.console.session', ${session})`);
    const pageTimes: number[] = [];
    const apiTimes: number[] = [];
    for (let sample = 0; sample < SAMPLES; sample++) {
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${baseUrl}/console/#/runs?limit=${RUNS}`);
      await page
        .locator('table[aria-label="Runs"] tbody tr')
        .nth(RUNS - 1)
        .waitFor();
      pageTimes.push(performance.now() - started);
      const api = (await page.evaluate(
        `performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/runs?') && e.name.includes('limit=${RUNS}')).map((e) => e.duration)`,
      )) as number[];
      if (api.length === 0) throw new Error('the runs list call was not seen');
      apiTimes.push(api[0]!);
      await page.close();
    }
    const pageMs = median(pageTimes);
    const apiMs = median(apiTimes);
    printFigure(`console runs list of ${RUNS} runs, navigation to filled list (median)`, pageMs, 'ms');
    printFigure(`console runs list API call GET /v1/runs?limit=${RUNS} in the page (median)`, apiMs, 'ms');
    printFigure('console runs list time ÷ its API call', pageMs / apiMs, '×');
  } finally {
    await browser.close();
    await app?.close();
    await database.close();
    await scratch.drop();
  }
}
