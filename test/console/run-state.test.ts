/** A run's duration, runs stopped at an interrupt as "waiting for input", a deployment's runs and Run button. */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { startRun, waitForRun } from '../runs/helpers.js';
import { expectAccessible, launchBrowser, noBrowser, screenshot, signIn } from './browser.js';
import { deployNamed, INTERRUPTING_CREW, inline, post } from './crews.js';
import { ADMIN_KEY, crew, startService } from './service.js';

const DURATION = /^\d+(\.\d)? s$|^\d+ min \d+ s$/;

describe.skipIf(noBrowser)('console: run state', { timeout: 60_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let page: Page;
  let asking: string;
  let threadId: string;
  let interruptedRun: string;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    asking = await deployNamed(service, 'approver', inline(INTERRUPTING_CREW));
    threadId = (await post(service, '/v1/threads', { deployment_id: asking })).thread_id;
    interruptedRun = (await post(service, `/v1/threads/${threadId}/runs`, { input: {} })).run_id;
    await waitForRun(service, interruptedRun);
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, service.baseUrl, ADMIN_KEY);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  const rowOf = (table: string, text: string) =>
    page.getByRole('table', { name: table }).locator('tbody tr', { hasText: text }).first();

  it('marks a run stopped at an interrupt and its thread "waiting for input" in every list', async () => {
    await page.goto(`${service.baseUrl}/console/#/runs`);
    await expect.poll(() => rowOf('Runs', interruptedRun).locator('.status').textContent()).toBe('waiting for input');
    await page.goto(`${service.baseUrl}/console/#/runs/${interruptedRun}`);
    await expect.poll(() => page.locator('dd .status').textContent()).toBe('waiting for input');
    await page.goto(`${service.baseUrl}/console/#/deployments/${asking}`);
    const ofDeployment = rowOf('Runs of this deployment', interruptedRun);
    await expect.poll(() => ofDeployment.locator('.status').textContent()).toBe('waiting for input');
    await page.goto(`${service.baseUrl}/console/#/threads`);
    await expect.poll(() => rowOf('Threads', threadId).locator('.status').textContent()).toBe('waiting for input');
    await screenshot(page, 'threads');
  });

  it('resumes with a form of only the answer, which the run gets as command.resume', async () => {
    await page.goto(`${service.baseUrl}/console/#/threads/${threadId}`);
    const form = page.getByRole('form', { name: 'Resume the thread' });
    await form.waitFor();
    await expect(form.getByRole('textbox').count()).resolves.toBe(1);
    await expect(form.getByLabel('Input (JSON)').count()).resolves.toBe(0);
    await screenshot(page, 'resume');
    await form.getByLabel('Answer (JSON or text)').fill('yes, send it');
    await form.getByRole('button', { name: 'Resume thread' }).click();
    await page.waitForURL(/#\/runs\/run_/);
    const runId = decodeURIComponent(page.url().split('/').pop()!);
    expect((await waitForRun(service, runId)).output).toEqual({ answer: 'yes, send it', input: {} });
  });

  it('shows a run’s duration in the list and on its page, counting while it runs', async () => {
    const slow = await deployNamed(service, 'ticker', crew('slow.mjs'));
    const run = await startRun(service, slow, { ticks: 30, interval_ms: 100 });
    await page.goto(`${service.baseUrl}/console/#/runs/${run.run_id}`);
    const duration = page.locator('dt', { hasText: 'Duration' }).locator('xpath=following-sibling::dd');
    await expect.poll(() => duration.textContent()).toMatch(DURATION);
    const first = await duration.textContent();
    await expect.poll(() => duration.textContent()).not.toBe(first);
    await page.getByText('Stream ended.').waitFor({ timeout: 20_000 });
    await page.locator('dd .status-succeeded').waitFor();
    const ended = await duration.textContent();
    expect(ended).toMatch(DURATION);
    await page.goto(`${service.baseUrl}/console/#/runs`);
    const row = rowOf('Runs', run.run_id);
    const headers = await page.getByRole('table', { name: 'Runs' }).locator('thead th').allTextContents();
    await expect.poll(() => row.locator('td').nth(headers.indexOf('Duration')).textContent()).toBe(ended);
  });

  it('lists a deployment’s runs on its page and starts one with the Run button', async () => {
    const echo = await deployNamed(service, 'echo', crew('trivial.mjs'));
    const earlier = await startRun(service, echo, { n: 1 });
    await waitForRun(service, earlier.run_id);
    await page.goto(`${service.baseUrl}/console/#/deployments/${echo}`);
    await rowOf('Runs of this deployment', earlier.run_id).waitFor();
    await expect(
      page
        .getByRole('table', { name: 'Runs of this deployment' })
        .locator('tbody tr', { hasText: interruptedRun })
        .count(),
    ).resolves.toBe(0);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const form = page.getByRole('form', { name: 'Run this deployment' });
    await form.getByLabel('Input (JSON)').fill('{"topic": "tides"}');
    await expectAccessible(page, 'deployment with its runs');
    await form.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/#\/runs\/run_/);
    const runId = decodeURIComponent(page.url().split('/').pop()!);
    const started = await waitForRun(service, runId);
    expect({ deployment: started.deployment_id, input: started.input }).toEqual({
      deployment: echo,
      input: { topic: 'tides' },
    });
  });
});
