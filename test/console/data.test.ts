import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { startRun, until, waitForRun } from '../runs/helpers.js';
import { expectAccessible, launchBrowser, noBrowser, screenshot, signIn } from './browser.js';
import { ADMIN_KEY, crew, deploy, startService } from './service.js';

/** A real receiver of outgoing webhooks; it records each request's delivery id. */
async function startReceiver(): Promise<{ server: Server; url: string; deliveries: string[] }> {
  const deliveries: string[] = [];
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      deliveries.push(String(request.headers['x-service-delivery']));
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries };
}

describe.skipIf(noBrowser)('console: tables, webhooks, secrets', { timeout: 60_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.baseUrl });
    page = await context.newPage();
    await signIn(page, service.baseUrl, ADMIN_KEY);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it('creates a table, adds and edits rows, and filters them', async () => {
    await page.goto(`${service.baseUrl}/console/#/tables`);
    const create = page.getByRole('form', { name: 'Create a table' });
    await create.getByLabel('Table name').fill('leads');
    await create.getByLabel('Column 1 name').fill('email');
    await create.getByLabel('Column 1 type').selectOption('email');
    await create.getByRole('button', { name: 'Add column' }).click();
    await create.getByLabel('Column 2 name').fill('score');
    await create.getByLabel('Column 2 type').selectOption('number');
    await create.getByRole('button', { name: 'Create table' }).click();
    await page.getByRole('heading', { level: 1, name: 'leads' }).waitFor();

    await page.goto(`${service.baseUrl}/console/#/tables`);
    await create.getByLabel('Table name').fill('leads');
    await create.getByRole('button', { name: 'Create table' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Table "leads" already exists');
    await page.getByRole('link', { name: 'leads' }).click();

    const add = page.getByRole('form', { name: 'Add a row' });
    for (const [email, score] of [
      ['ada@example.com', '90'],
      ['bob@example.com', '20'],
      ['cy@example.com', '60'],
    ] as const) {
      await add.getByLabel('email').fill(email);
      await add.getByLabel('score').fill(score);
      await add.getByRole('button', { name: 'Add row' }).click();
      await page.getByRole('cell', { name: email }).waitFor();
    }
    await page.getByText('3 rows').waitFor();

    const bob = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'bob@example.com' }) });
    await bob.getByRole('button', { name: /^Edit row / }).click();
    const edit = page.getByRole('form', { name: /^Edit row / });
    await edit.getByLabel('score').fill('75');
    await edit.getByRole('button', { name: 'Save row' }).click();
    await bob.getByRole('cell', { name: '75', exact: true }).waitFor();

    const filter = page.getByRole('region', { name: 'Filter rows' });
    await filter.getByRole('button', { name: 'Filter: add condition' }).click();
    await filter.getByLabel('Filter 1 column').selectOption('score');
    await filter.getByLabel('Filter 1 operator').selectOption('gte');
    await filter.getByLabel('Filter 1 value').fill('70');
    await filter.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByText('2 rows').waitFor();
    const shown = await page.getByRole('table', { name: 'Rows' }).locator('tbody td:nth-child(2)').allTextContents();
    expect(shown.sort()).toEqual(['ada@example.com', 'bob@example.com']);
    await expectAccessible(page, 'table');
    await screenshot(page, 'table');
  });

  it('creates a webhook, shows its secret once, lists a delivery and redelivers it', async () => {
    const receiver = await startReceiver();
    try {
      const { deploymentId } = await deploy(service, crew('trivial.mjs'));
      await page.goto(`${service.baseUrl}/console/#/webhooks`);
      const form = page.getByRole('form', { name: 'Create a webhook' });
      await form.getByLabel('Deployment').selectOption(deploymentId);
      await form.getByLabel('Name').fill('receiver');
      await form.getByLabel('URL').fill(receiver.url);
      await form.getByRole('button', { name: 'Create webhook' }).click();
      const secretBox = page.getByLabel('Signing secret of receiver', { exact: true });
      const secret = await secretBox.inputValue();
      expect(secret.length).toBeGreaterThan(20);
      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
      await page.getByRole('button', { name: 'Done' }).click();
      await secretBox.waitFor({ state: 'detached' });
      await page.getByRole('link', { name: 'receiver' }).click();
      await page.getByRole('heading', { level: 1, name: 'receiver' }).waitFor();
      expect(await page.content()).not.toContain(secret);

      const run = await startRun(service, deploymentId, { hello: 'world' });
      await waitForRun(service, run.run_id);
      await until(() => receiver.deliveries.length === 1, 15_000);
      const deliveries = page.getByRole('table', { name: 'Deliveries' });
      await deliveries.locator('.status-succeeded').waitFor({ timeout: 10_000 });
      await deliveries.getByRole('button', { name: /^Redeliver / }).click();
      await until(() => receiver.deliveries.length === 2, 15_000);
      expect(receiver.deliveries[1]).toBe(receiver.deliveries[0]);
      await deliveries.getByRole('button', { name: /^Attempts of / }).click();
      await page
        .getByRole('list', { name: 'Attempts' })
        .getByText(/^Attempt 1/)
        .waitFor();

      const webhookId = decodeURIComponent(page.url().split('/').pop()!);
      await page.getByLabel('Enabled').uncheck();
      await expect
        .poll(async () => (await service.call('GET', `/v1/webhooks/${webhookId}`)).json().enabled)
        .toBe(false);
      page.once('dialog', (dialog) => void dialog.accept());
      await page.getByRole('button', { name: 'Regenerate secret' }).click();
      const fresh = await page.getByLabel('New signing secret', { exact: true }).inputValue();
      expect(fresh).not.toBe(secret);
      await page.getByRole('button', { name: 'Done' }).click();
      await page.getByLabel('New signing secret', { exact: true }).waitFor({ state: 'detached' });
      expect(await page.content()).not.toContain(fresh);
      await expectAccessible(page, 'webhook');
      await screenshot(page, 'webhook');
    } finally {
      receiver.server.close();
    }
  });

  it('shows an incoming webhook’s URL and a new API key once', async () => {
    const { deploymentId } = await deploy(service, crew('trivial.mjs'));
    await page.goto(`${service.baseUrl}/console/#/incoming-webhooks`);
    const form = page.getByRole('form', { name: 'Create an incoming webhook' });
    await form.getByLabel('Deployment').selectOption(deploymentId);
    await form.getByLabel('Name').fill('from-ci');
    await form.getByRole('button', { name: 'Create incoming webhook' }).click();
    const url = await page.getByLabel('Webhook URL', { exact: true }).inputValue();
    expect(url).toMatch(/\/webhooks\/runs\/\S+$/);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByLabel('Webhook URL', { exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'from-ci', exact: true }).waitFor();
    expect(await page.content()).not.toContain(url);

    await page.goto(`${service.baseUrl}/console/#/api-keys`);
    const keyForm = page.getByRole('form', { name: 'Create an API key' });
    await keyForm.getByLabel('Key name').fill('deployer');
    await keyForm.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByLabel('Key deployer', { exact: true }).inputValue();
    const check = await fetch(`${service.baseUrl}/v1/runs`, { headers: { authorization: `Bearer ${key}` } });
    expect(check.status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByLabel('Key deployer', { exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'deployer', exact: true }).waitFor();
    expect(await page.content()).not.toContain(key);
    await screenshot(page, 'api-keys');
  });
});
