/** Deployments and threads by name where the console showed ids, the id on hover or in the detail. */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/app.js';
import type { RunContext } from '../runs/helpers.js';
import { startRun, waitForRun } from '../runs/helpers.js';
import { launchBrowser, noBrowser, signIn } from './browser.js';
import { deployNamed, post } from './crews.js';
import { ADMIN_KEY, crew, startService } from './service.js';

const NAME = 'newsletter-writer';

describe.skipIf(noBrowser)('console: names where ids were', { timeout: 60_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let page: Page;
  let deploymentId: string;
  let runId: string;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    deploymentId = await deployNamed(service, NAME, crew('trivial.mjs'));
    runId = (await startRun(service, deploymentId, {})).run_id;
    await waitForRun(service, runId);
    await post(service, '/v1/threads', { deployment_id: deploymentId, metadata: { name: 'Support chat' } });
    const other = await deployNamed(service, 'summarizer', crew('trivial.mjs'));
    await post(service, '/v1/threads', { deployment_id: other, metadata: { name: 'Billing question' } });
    await post(service, '/v1/crons', { deployment_id: deploymentId, schedule: '0 0 1 1 *' });
    await post(service, '/v1/webhooks', {
      deployment_id: deploymentId,
      name: 'receiver',
      url: 'http://127.0.0.1:9/hook',
      events: ['run.succeeded'],
    });
    await post(service, '/v1/incoming-webhooks', { deployment_id: deploymentId, name: 'from-ci' });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, service.baseUrl, ADMIN_KEY);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  /** The cell of `column` in the table's first row whose text has `rowText`. */
  async function cell(table: string, rowText: string, column: string) {
    const grid = page.getByRole('table', { name: table });
    await grid.locator('tbody tr', { hasText: rowText }).first().waitFor();
    const headers = await grid.locator('thead th').allTextContents();
    return grid.locator('tbody tr', { hasText: rowText }).first().locator('td').nth(headers.indexOf(column));
  }

  async function expectDeploymentNamed(table: string, rowText: string) {
    const deployment = await cell(table, rowText, 'Deployment');
    await expect.poll(() => deployment.textContent()).toBe(NAME);
    await expect(deployment.locator(`[title="${deploymentId}"]`).count()).resolves.toBe(1);
  }

  it('names the deployment in the runs list and on a run’s page, its id on hover and in the detail', async () => {
    await page.goto(`${service.baseUrl}/console/#/runs`);
    await expectDeploymentNamed('Runs', runId);
    await page.goto(`${service.baseUrl}/console/#/runs/${runId}`);
    const fact = page.locator('dd', { has: page.locator(`[title="${deploymentId}"]`) });
    await expect.poll(() => fact.textContent()).toBe(`${NAME} ${deploymentId}`);
  });

  it('lists the threads of every deployment, by name, without a deployment chosen first', async () => {
    await page.goto(`${service.baseUrl}/console/#/threads`);
    await expectDeploymentNamed('Threads', 'Support chat');
    const billing = await cell('Threads', 'Billing question', 'Deployment');
    await expect(billing.textContent()).resolves.toBe('summarizer');
    const thread = await cell('Threads', 'Support chat', 'Thread');
    await expect(thread.getByRole('link').getAttribute('title')).resolves.toMatch(/^thr_/);
  });

  it('names the deployment of crons, webhooks and incoming webhooks', async () => {
    await page.goto(`${service.baseUrl}/console/#/crons`);
    await expectDeploymentNamed('Crons', '0 0 1 1 *');
    await page.goto(`${service.baseUrl}/console/#/webhooks`);
    await expectDeploymentNamed('Webhooks', 'receiver');
    await page.getByRole('link', { name: 'receiver' }).click();
    const fact = page.locator('dd', { has: page.locator(`[title="${deploymentId}"]`) });
    await expect.poll(() => fact.textContent()).toContain(NAME);
    await page.goto(`${service.baseUrl}/console/#/incoming-webhooks`);
    await expectDeploymentNamed('Incoming webhooks', 'from-ci');
  });

  it('shows a member key, which cannot list deployments, their ids', async () => {
    const member = await createKey({ call: service.call } as never, 'viewer', 'member');
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const other = await context.newPage();
    await signIn(other, service.baseUrl, member);
    const row = other.getByRole('table', { name: 'Runs' }).locator('tbody tr', { hasText: runId });
    await expect.poll(() => row.locator('td').nth(2).textContent()).toBe(deploymentId);
    await context.close();
  });
});
