import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { launchBrowser, noBrowser, signIn } from './browser.js';
import { ADMIN_KEY, startService } from './service.js';

const PAGES = ['runs', 'deployments', 'threads', 'tables', 'webhooks', 'incoming-webhooks', 'crons', 'api-keys'];

/** Content Security Policy violations a page reports, as events and as console lines. */
async function watchViolations(page: Page): Promise<string[]> {
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
  });
  await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      window.reportViolation(event.violatedDirective + ' blocked ' + event.blockedURI));`,
  });
  return violations;
}

describe('security headers', () => {
  let service: RunContext;
  let browser: Browser | undefined;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), noBrowser ? undefined : launchBrowser()]);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it.each([
    ['/console/', null],
    ['/docs/', null],
    ['/docs/json', null],
    ['/healthz', null],
    ['/v1/runs', ADMIN_KEY],
    ['/v1/runs', 'not-a-key'],
  ])('are sent with %s', async (url, key) => {
    const response = await service.call('GET', url, { key });
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['x-frame-options']).toBe('DENY');
    expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(response.headers['content-security-policy']).toContain("script-src 'self'");
  });

  describe.skipIf(noBrowser)('in the browser', { timeout: 60_000 }, () => {
    it('the console runs under its policy without a violation, on every page', async () => {
      const page = await (browser as Browser).newPage();
      const violations = await watchViolations(page);
      await signIn(page, service.baseUrl, ADMIN_KEY);
      for (const name of PAGES) {
        await page.goto(`${service.baseUrl}/console/#/${name}`);
        await page.getByRole('button', { name: 'Sign out' }).waitFor();
        await page.waitForLoadState('networkidle');
      }
      expect(violations).toEqual([]);
    });

    it('the API reference at /docs renders under its policy without a violation', async () => {
      const page = await (browser as Browser).newPage();
      const violations = await watchViolations(page);
      await page.goto(`${service.baseUrl}/docs/`);
      await page.locator('.swagger-ui .info .title').waitFor();
      await page.locator('.opblock').first().waitFor();
      await page.waitForLoadState('networkidle');
      expect(violations).toEqual([]);
    });
  });
});
