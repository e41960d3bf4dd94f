import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { startRun, waitForRun } from '../runs/helpers.js';
import { expectAccessible, launchBrowser, noBrowser, signIn } from './browser.js';
import { deployNamed, INTERRUPTING_CREW, inline } from './crews.js';
import { ADMIN_KEY, crew, deploy, startService } from './service.js';

/** Elements wider than the window, outside any box that scrolls sideways: what makes the page scroll. */
const OVERFLOW = `(() => {
  const width = document.documentElement.clientWidth;
  const scrolls = (element) => {
    for (let box = element.parentElement; box; box = box.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) return true;
    }
    return false;
  };
  const wide = [...document.body.querySelectorAll('*')].filter(
    (element) => element.getBoundingClientRect().right > width + 1 && !scrolls(element),
  );
  return {
    width,
    scrollWidth: document.documentElement.scrollWidth,
    culprits: wide.slice(0, 5).map((element) => element.tagName.toLowerCase() + (element.className ? '.' + element.className : '')),
  };
})()`;

/**
 * Words broken across two lines: every whitespace-separated word of letters (with its punctuation) whose text
 * spans more than one line box. Ids, URLs and numbers, which may have to break on a narrow screen, are not words.
 */
const BROKEN_WORDS = `(() => {
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement || node.parentElement.closest('script, style, option, textarea')) continue;
    for (const match of node.textContent.matchAll(/\\S+/g)) {
      if (!/^[(“"]?[A-Za-z’']+[.,;:!?)”"…]*$/.test(match[0])) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
      if (tops.size > 1) broken.push(match[0]);
    }
  }
  return broken;
})()`;

describe.skipIf(noBrowser)('console on a phone', { timeout: 60_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let page: Page;
  const pages: { hash: string; heading: string | RegExp }[] = [];

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    const { deploymentId } = await deploy(service, crew('trivial.mjs'));
    const run = await startRun(service, deploymentId, { hello: 'a phone' });
    await waitForRun(service, run.run_id);
    const post = async (url: string, body: unknown) => {
      const response = await service.call('POST', url, { body });
      if (response.statusCode >= 300) throw new Error(`${url}: ${response.body}`);
      return response.json();
    };
    // A run stopped at an interrupt: "waiting for input", the longest status.
    const asking = await deployNamed(service, 'approver', inline(INTERRUPTING_CREW));
    const waiting = await post('/v1/threads', { deployment_id: asking, metadata: { name: 'Quarterly report' } });
    await waitForRun(service, (await post(`/v1/threads/${waiting.thread_id}/runs`, {})).run_id);
    const thread = await post('/v1/threads', { deployment_id: deploymentId });
    const table = await post('/v1/tables', {
      name: 'contacts',
      columns: [
        { name: 'email', type: 'email' },
        { name: 'note', type: 'text' },
      ],
    });
    await post(`/v1/tables/${table.id}/rows`, {
      email: 'someone.with.a.long.address@example.com',
      note: 'a note long enough to need some room',
    });
    const webhook = await post('/v1/webhooks', {
      deployment_id: deploymentId,
      name: 'receiver',
      url: 'http://127.0.0.1:9/a/rather/long/path/for/a/webhook/receiver',
      events: ['run.succeeded'],
    });
    await post('/v1/incoming-webhooks', { deployment_id: deploymentId, name: 'from-ci' });
    await post('/v1/crons', { deployment_id: deploymentId, schedule: '0 0 1 1 *' });
    pages.push(
      { hash: 'runs', heading: 'Runs' },
      { hash: `runs/${run.run_id}`, heading: `Run ${run.run_id}` },
      { hash: 'deployments', heading: 'Deployments' },
      { hash: `deployments/${deploymentId}`, heading: 'crew' },
      { hash: 'threads', heading: 'Threads' },
      { hash: `threads/${thread.thread_id}`, heading: /^Thread thr_/ },
      { hash: `threads/${waiting.thread_id}`, heading: 'Thread Quarterly report' },
      { hash: 'tables', heading: 'Tables' },
      { hash: `tables/${table.id}`, heading: 'contacts' },
      { hash: 'crons', heading: 'Crons' },
      { hash: 'webhooks', heading: 'Webhooks' },
      { hash: `webhooks/${webhook.id}`, heading: 'receiver' },
      { hash: 'incoming-webhooks', heading: 'Incoming webhooks' },
      { hash: 'api-keys', heading: 'API keys' },
      { hash: 'organizations', heading: 'Organizations' },
    );
    page = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it('shows the sign-in page and every page of an admin without scrolling sideways', async () => {
    await page.goto(`${service.baseUrl}/console/`);
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(OVERFLOW)).toMatchObject({ culprits: [] });
    await signIn(page, service.baseUrl, ADMIN_KEY);
    for (const { hash, heading } of pages) {
      await page.goto(`${service.baseUrl}/console/#/${hash}`);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      // Lists and records have loaded once a row or a fact shows.
      await page.locator('main tbody tr, main dl, main li').first().waitFor();
      const overflow = (await page.evaluate(OVERFLOW)) as { width: number; scrollWidth: number; culprits: string[] };
      expect({ page: hash, ...overflow }).toEqual({ page: hash, width: 390, scrollWidth: 390, culprits: [] });
    }
  });

  it('breaks no word in the middle on any page', async () => {
    for (const { hash, heading } of pages) {
      await page.goto(`${service.baseUrl}/console/#/${hash}`);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      await page.locator('main tbody tr, main dl, main li').first().waitFor();
      expect({ page: hash, broken: await page.evaluate(BROKEN_WORDS) }).toEqual({ page: hash, broken: [] });
    }
  });

  it('has no serious or critical accessibility violation on any page, on a phone or a laptop', async () => {
    const laptop = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(laptop, service.baseUrl, ADMIN_KEY);
    for (const each of [page, laptop]) {
      for (const { hash, heading } of pages) {
        await each.goto(`${service.baseUrl}/console/#/${hash}`);
        await each.getByRole('heading', { level: 1, name: heading }).waitFor();
        await each.locator('main tbody tr, main dl, main li').first().waitFor();
        await expectAccessible(each, `${hash} at ${each.viewportSize()?.width} px`);
      }
    }
    await laptop.close();
  }, 180_000);
});
