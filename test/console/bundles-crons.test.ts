/** Console pages of bundles with their build log and variables (CONTRACTS §8), interrupts (§9) and crons (§11). */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { until, waitForRun } from '../runs/helpers.js';
import { expectAccessible, launchBrowser, noBrowser, signIn } from './browser.js';
import { INTERRUPTING_CREW, inline } from './crews.js';
import { ADMIN_KEY, crew, deploy, startService } from './service.js';

const folder = mkdtempSync(path.join(tmpdir(), 'crewd-console-'));

describe.skipIf(noBrowser)('console: bundles, variables, interrupts, crons', { timeout: 90_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService({ CRON_MIN_INTERVAL_SECONDS: '1' }), launchBrowser()]);
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, service.baseUrl, ADMIN_KEY);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('uploads a bundle and follows its build log live', async () => {
    const project = path.join(folder, 'bundle');
    mkdirSync(project);
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'hello-crew', version: '1.0.0', main: 'crew.mjs' }),
    );
    execFileSync('cp', [crew('trivial.mjs')[1]!, path.join(project, 'crew.mjs')]);
    const archive = path.join(folder, 'bundle.tar.gz');
    execFileSync('tar', ['-czf', archive, '-C', project, '.']);
    const { deploymentId } = await deploy(service, crew('trivial.mjs'));

    await page.goto(`${service.baseUrl}/console/#/deployments/${deploymentId}`);
    const form = page.getByRole('form', { name: 'Upload a bundle' });
    await form.getByLabel('Bundle (.tar.gz of the project folder)').setInputFiles(archive);
    await form.getByLabel('Run in environment once built').selectOption('staging');
    await form.getByRole('button', { name: 'Upload bundle' }).click();
    await page
      .getByRole('region', { name: /^Build log of v\d+$/ })
      .getByText('Build ready.')
      .waitFor({ timeout: 60_000 });
    await expect(page.getByRole('log', { name: /^Build log of v\d+: output$/ }).count()).resolves.toBe(1);
    await page.getByRole('table', { name: 'Versions' }).locator('.status-ready').first().waitFor();
    await expectAccessible(page, 'deployment with a bundle');
  });

  it('sets deployment variables by name and never shows their values', async () => {
    const { deploymentId } = await deploy(service, crew('trivial.mjs'));
    await page.goto(`${service.baseUrl}/console/#/deployments/${deploymentId}`);
    const form = page.getByRole('form', { name: 'Set a variable' });
    await form.getByLabel('Variable name').fill('OPENAI_API_KEY');
    await form.getByLabel('Value').fill('sk-console-test-value');
    await form.getByRole('button', { name: 'Set variable' }).click();
    const section = page.getByRole('region', { name: 'Variables' });
    await section.getByText('OPENAI_API_KEY', { exact: true }).waitFor();
    expect(await page.content()).not.toContain('sk-console-test-value');
    await section.getByRole('button', { name: 'Remove OPENAI_API_KEY' }).click();
    await expect.poll(() => section.getByText('OPENAI_API_KEY', { exact: true }).count()).toBe(0);
  });

  it('shows an interrupted thread’s interrupt and resumes it', async () => {
    const { deploymentId } = await deploy(service, inline(INTERRUPTING_CREW));
    const thread = (await service.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const first = await service.call('POST', `/v1/threads/${thread.thread_id}/runs`, { body: { input: {} } });
    await waitForRun(service, first.json().run_id);

    await page.goto(`${service.baseUrl}/console/#/threads/${thread.thread_id}`);
    const region = page.getByRole('region', { name: 'Interrupts' });
    await region.getByText('Send the report?').waitFor();
    const form = page.getByRole('form', { name: 'Resume the thread' });
    await form.getByLabel('Answer (JSON or text)').fill('"yes"');
    await form.getByRole('button', { name: 'Resume thread' }).click();
    await page.waitForURL(/#\/runs\/run_/);
    await page.getByText('Stream ended.').waitFor({ timeout: 20_000 });
    const runId = decodeURIComponent(page.url().split('/').pop()!);
    expect((await waitForRun(service, runId)).output).toEqual({ answer: 'yes', input: {} });
    await page.goto(`${service.baseUrl}/console/#/threads/${thread.thread_id}`);
    await page.locator('.status-idle').first().waitFor();
    await expect(page.getByRole('region', { name: 'Interrupts' }).count()).resolves.toBe(0);
  });

  it('creates a cron that starts runs, disables and deletes it', async () => {
    const { deploymentId } = await deploy(service, crew('trivial.mjs'));
    await page.goto(`${service.baseUrl}/console/#/crons`);
    const form = page.getByRole('form', { name: 'Create a cron' });
    await form.getByLabel('Deployment').selectOption(deploymentId);
    await form.getByLabel('Schedule').fill('* * * * * *');
    await form.getByRole('button', { name: 'Create cron' }).click();
    const table = page.getByRole('table', { name: 'Crons' });
    await table.locator('tbody tr').first().waitFor();
    await until(async () => {
      const runs = await service.call('GET', `/v1/runs?deployment_id=${deploymentId}`);
      return runs.json().total > 0;
    }, 20_000);
    await page.reload();
    await table.getByRole('link', { name: /^run_/ }).first().waitFor({ timeout: 20_000 });
    await table.getByRole('checkbox', { name: /^Enabled: / }).uncheck();
    await expect.poll(async () => (await service.call('GET', '/v1/crons')).json().crons[0].enabled).toBe(false);
    await expectAccessible(page, 'crons');
    await table.getByRole('button', { name: /^Delete cron / }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(0);
  });
});
