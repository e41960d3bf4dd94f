import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, noBrowser } from '../console/browser.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import type { RunContext } from '../runs/helpers.js';
import { startWithTokenGraph } from './runs-helpers.js';

explainWithoutPython('useStream against the LangGraph API');

/** The page (use-stream/page.jsx) bundled for the browser, React and the SDK's `useStream` included. */
async function bundlePage(): Promise<string> {
  const result = await build({
    entryPoints: [path.join(import.meta.dirname, 'use-stream/page.jsx')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  return result.outputFiles[0]?.text ?? '';
}

/**
 * Serves the page, and crewd's LangGraph API under the page's own origin (as an app's own server or proxy
 * would), so that the browser talks to crewd the way a deployed LangGraph app does.
 */
async function servePage(script: string, crewd: URL): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    if (request.url?.startsWith('/langgraph/')) {
      const upstream = http.request(
        { host: crewd.hostname, port: crewd.port, path: request.url, method: request.method, headers: request.headers },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      upstream.on('error', () => response.destroy());
      response.on('close', () => upstream.destroy());
      request.pipe(upstream);
      return;
    }
    if (request.url === '/page.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      return;
    }
    response
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<!doctype html><html lang="en"><title>chat</title><div id="root"></div><script src="/page.js"></script>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/?key=${ADMIN_KEY}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const aiMessage = (page: Page) => page.locator('li[data-type="ai"]');
/** The answers' text as shown now (without waiting for one to appear, as textContent would). */
const answers = async (page: Page) => (await aiMessage(page).allTextContents()).join('\n');
/** Long enough for a run's process to start on a loaded machine. */
const SLOW = { timeout: 90_000 };

describe.runIf(testPython() !== null && !noBrowser)('useStream against the LangGraph API', () => {
  let ctx: RunContext;
  let browser: Browser;
  let site: { url: string; close: () => Promise<void> };

  beforeAll(async () => {
    const started = await startWithTokenGraph();
    ctx = started.ctx;
    site = await servePage(await bundlePage(), new URL(ctx.baseUrl));
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
    await ctx?.close();
  });

  async function open(): Promise<Page> {
    const page = await browser.newPage();
    page.on('pageerror', (error) => {
      throw error;
    });
    await page.goto(site.url);
    return page;
  }

  it('shows the answer token by token while the model streams it', { timeout: 300_000 }, async () => {
    const page = await open();
    await page.getByRole('button', { name: 'Ask', exact: true }).click();
    await expect.poll(() => answers(page), SLOW).toContain('w3');
    // 20 tokens 100 ms apart: the fourth is on screen long before the last.
    expect(await answers(page)).not.toContain('w19');
    const whole = Array.from({ length: 20 }, (_, index) => `w${index}`).join(' ');
    await expect.poll(() => answers(page), SLOW).toBe(whole);
    await expect.poll(() => page.getByLabel('Status').textContent()).toBe('idle');
    expect(await page.getByLabel('Error').textContent()).toBe('');
    await page.close();
  });

  it('shows an interrupt and answers it with command: {resume}', { timeout: 300_000 }, async () => {
    const page = await open();
    await page.getByRole('button', { name: 'Ask with review' }).click();
    const review = page.getByRole('region', { name: 'Review' });
    await expect.poll(() => review.textContent(), SLOW).toContain('Send this answer?');
    await review.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.getByLabel('Approved').textContent(), SLOW).toBe('yes');
    expect(await page.getByLabel('Error').textContent()).toBe('');
    await page.close();
  });

  it('rejoins the running stream after a reload', { timeout: 300_000 }, async () => {
    const page = await open();
    await page.getByRole('button', { name: 'Ask long' }).click();
    await expect.poll(() => answers(page), SLOW).toContain('w2');
    expect(new URL(page.url()).searchParams.get('thread')).toBeTruthy();
    await page.reload();
    const whole = Array.from({ length: 30 }, (_, index) => `w${index}`).join(' ');
    await expect.poll(() => answers(page), SLOW).toBe(whole);
    expect(await aiMessage(page).count()).toBe(1);
    expect(await page.getByLabel('Error').textContent()).toBe('');
    await page.close();
  });
});
