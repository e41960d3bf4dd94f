import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { startRun, waitForRun } from '../runs/helpers.js';
import { expectAccessible, launchBrowser, noBrowser, screenshot, signIn } from './browser.js';
import { ADMIN_KEY, crew, deploy, startService } from './service.js';

describe.skipIf(noBrowser)('console: usage and cost', { timeout: 60_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let page: Page;
  let runId: string;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    const { deploymentId } = await deploy(service, crew('scripted.mjs'));
    const usage = { input_tokens: 1000, cached_input_tokens: 200, output_tokens: 500 };
    const events = [
      { type: 'llm.call', data: { model: 'gpt-4o-mini', usage } },
      { type: 'llm.call', data: { model: 'house-model', usage } },
    ];
    runId = (await startRun(service, deploymentId, { events })).run_id;
    await waitForRun(service, runId);
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, service.baseUrl, ADMIN_KEY);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it('shows a run’s tokens and cost by model, saying which model has no price', async () => {
    await page.goto(`${service.baseUrl}/console/#/runs/${runId}`);
    const table = page.getByRole('table', { name: 'Usage by model' });
    await table.getByRole('cell', { name: 'gpt-4o-mini' }).waitFor();
    // (800 × 0.15 + 200 × 0.075 + 500 × 0.6) / 1e6 USD
    await expect(table.getByRole('row').filter({ hasText: 'gpt-4o-mini' }).textContent()).resolves.toContain(
      '$0.000435',
    );
    await expect(table.getByRole('row').filter({ hasText: 'house-model' }).textContent()).resolves.toContain(
      'no price',
    );
    await expect(page.getByText('which have no price', { exact: false }).count()).resolves.toBe(1);
    await expectAccessible(page, 'run usage');
  });

  it('charts the organization’s usage per day and per model', async () => {
    await page.goto(`${service.baseUrl}/console/#/usage`);
    await page
      .getByRole('img', { name: /^Cost by / })
      .locator('canvas')
      .waitFor();
    const table = page.getByRole('table', { name: 'Usage' });
    await expect(table.getByRole('row').count()).resolves.toBe(2);
    await page.getByLabel('Per').selectOption('model');
    await table.getByRole('cell', { name: 'house-model' }).waitFor();
    await expect(table.getByRole('row').count()).resolves.toBe(3);
    await expect(page.getByRole('img', { name: 'Tokens by gpt-4o-mini, house-model' }).count()).resolves.toBe(1);
    await expectAccessible(page, 'usage');
    await screenshot(page, 'usage');
  });
});
