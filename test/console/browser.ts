import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Browser tests need Debian's Chromium (`apt-get install chromium`; .ci/run installs it). Without it they are
 * skipped locally, and fail in CI, where a missing browser must not pass silently.
 */
export const noBrowser = !existsSync(CHROMIUM) && !process.env.CI;

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
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
}

/** Opens the console and signs in with `key`; answers once the signed-in shell shows. */
export async function signIn(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** Runs axe-core (WCAG 2 A and AA rules) in the page; serious or critical violations fail the test. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  // Evaluated, not added as a <script>: the console's Content Security Policy refuses inline scripts.
  await page.evaluate(axeSource);
  const rules = JSON.stringify({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
  const violations = (await page.evaluate(`axe.run(${rules}).then((result) => result.violations)`)) as AxeViolation[];
  const serious = violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${name}: ${violation.id} (${violation.help}) at ${violation.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    );
  expect(serious).toEqual([]);
}

/** With UPDATE_SCREENSHOTS=1, saves a screenshot of the page into docs/console/ for docs/console.md. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  await page.screenshot({ path: new URL(`../../docs/console/${name}.png`, import.meta.url).pathname, fullPage: false });
}
