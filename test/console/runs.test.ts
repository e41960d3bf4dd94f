import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/app.js';
import type { RunContext } from '../runs/helpers.js';
import { startRun, waitForRun } from '../runs/helpers.js';
import { expectAccessible, launchBrowser, noBrowser, screenshot, signIn } from './browser.js';
import { ADMIN_KEY, crew, deploy, startService } from './service.js';

describe.skipIf(noBrowser)('console: sign-in, runs, threads, roles', { timeout: 60_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let page: Page;
  let slow: string;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    slow = (await deploy(service, crew('slow.mjs'))).deploymentId;
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it('refuses an unknown key with the API’s message, then signs in with a good one', async () => {
    await page.goto(`${service.baseUrl}/console/`);
    await expectAccessible(page, 'sign-in');
    await screenshot(page, 'sign-in');
    await page.getByLabel('API key').fill('not-a-real-key-000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Invalid API key');
    await signIn(page, service.baseUrl, ADMIN_KEY);
    expect(await page.evaluate('document.cookie')).toBe('');
  });

  it('starts a run from the runs page and shows its events before it ends', async () => {
    await page.goto(`${service.baseUrl}/console/#/runs`);
    await page.getByText('Start a run', { exact: true }).click();
    const form = page.getByRole('form', { name: 'Start a run' });
    await form.getByLabel('Deployment').selectOption(slow);
    await form.getByLabel('Input (JSON)').fill('{"ticks": 40, "interval_ms": 100}');
    await form.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/#\/runs\/run_/);
    const runId = decodeURIComponent(page.url().split('/').pop()!);
    const timeline = page.getByRole('list', { name: 'Timeline events' });
    await timeline.getByText('tick 2', { exact: true }).waitFor();
    const meanwhile = await service.call('GET', `/v1/runs/${runId}`);
    expect(meanwhile.json().status).toBe('running');
    await timeline.getByText('complete', { exact: true }).waitFor({ timeout: 20_000 });
    await expect(timeline.getByText('tick 40', { exact: true }).count()).resolves.toBe(1);
    await page.getByText('succeeded').first().waitFor();
    await expectAccessible(page, 'run');
    await screenshot(page, 'run');
  });

  it('cancels a running run', async () => {
    const run = await startRun(service, slow, {});
    await page.goto(`${service.baseUrl}/console/#/runs/${run.run_id}`);
    await page.getByRole('list', { name: 'Timeline events' }).getByText('tick 1', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByText('Stream ended.').waitFor();
    expect((await waitForRun(service, run.run_id)).status).toBe('canceled');
    await page.locator('.status-canceled').first().waitFor();
  });

  it('lists runs with filters', async () => {
    await page.goto(`${service.baseUrl}/console/#/runs`);
    const filters = page.getByRole('form', { name: 'Filter runs' });
    await filters.getByLabel('Status').selectOption('canceled');
    const table = page.getByRole('table', { name: 'Runs' });
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    await filters.getByLabel('Status').selectOption('');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    await expectAccessible(page, 'runs');
    await screenshot(page, 'runs');
  });

  it('creates a thread, runs in it and shows its values and history', async () => {
    const { deploymentId } = await deploy(service, crew('thread-counter.mjs'));
    await page.goto(`${service.baseUrl}/console/#/threads`);
    await page.getByRole('form', { name: 'Filter threads' }).getByLabel('Deployment').selectOption(deploymentId);
    await page.getByRole('button', { name: 'Create thread' }).click();
    await page.waitForURL(/#\/threads\/thr_/);
    await page.getByRole('button', { name: 'Start run in thread' }).click();
    await page.waitForURL(/#\/runs\/run_/);
    await page.getByText('Stream ended.').waitFor({ timeout: 20_000 });
    await page.getByRole('link', { name: /^thr_/ }).first().click();
    await page.getByRole('list', { name: 'Checkpoints' }).locator('li').first().waitFor();
    await expectAccessible(page, 'thread');
    await screenshot(page, 'thread');
  });

  it('shows an admin every page, each without serious accessibility violations', async () => {
    for (const name of [
      'Deployments',
      'Threads',
      'Tables',
      'Crons',
      'Webhooks',
      'Incoming webhooks',
      'API keys',
      'Organizations',
    ]) {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { level: 1, name }).waitFor();
      await expectAccessible(page, name);
    }
    await page.goto(`${service.baseUrl}/console/#/deployments/${slow}`);
    await page.getByRole('table', { name: 'Versions' }).locator('tbody tr').first().waitFor();
    await expectAccessible(page, 'deployment');
    await screenshot(page, 'deployment');
  });

  it('gives a member key no management page', async () => {
    const member = await createKey({ call: service.call } as never, 'viewer', 'member');
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await context.newPage();
    await signIn(phone, service.baseUrl, member);
    const nav = phone.getByRole('navigation', { name: 'Console' });
    const links = await nav.getByRole('link').allTextContents();
    expect(links).toEqual(['Runs', 'Threads', 'Tables', 'Crons', 'Usage']);
    await phone.goto(`${service.baseUrl}/console/#/api-keys`);
    await phone.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    await expect(phone.getByRole('heading', { level: 1, name: 'API keys' }).count()).resolves.toBe(0);
    await expectAccessible(phone, 'member runs (phone)');
    await screenshot(phone, 'runs-phone');
    await context.close();
  });
});
