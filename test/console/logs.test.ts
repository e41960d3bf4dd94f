/** Multi-line log messages and errors keep their line breaks; a build log is one pane that follows its end. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { startRun, waitForRun } from '../runs/helpers.js';
import { expectAccessible, launchBrowser, noBrowser, screenshot, signIn } from './browser.js';
import { deployNamed, inline, post } from './crews.js';
import { ADMIN_KEY, startService } from './service.js';

const TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "crew.py", line 12, in kickoff',
  '    raise ValueError("no OPENAI_API_KEY")',
  'ValueError: no OPENAI_API_KEY',
].join('\n');

/** Logs a traceback as one multi-line message, then fails with a two-line error. */
const FAILING_CREW = `
process.stdin.resume();
process.stdin.on('end', () => {
  const out = (type, data) => process.stdout.write(JSON.stringify({ type, data }) + '\\n');
  out('log', { message: ${JSON.stringify(TRACEBACK)}, stream: 'stderr' });
  out('run.failed', { error: 'ValueError: no OPENAI_API_KEY\\nset it with crewd variables set' });
});
`;

const LINES = 300;

/** A Python project whose package build prints LINES lines and fails: a long build log. */
function longBuildBundle(folder: string): string {
  const project = path.join(folder, 'project');
  mkdirSync(project, { recursive: true });
  writeFileSync(
    path.join(project, 'crewd.json'),
    JSON.stringify({ runtime: 'python', command: ['python', '-c', 'pass'] }),
  );
  writeFileSync(
    path.join(project, 'setup.py'),
    `import sys\nfor i in range(${LINES}):\n    print('compiling module', i, file=sys.stderr)\nsys.exit(1)\n`,
  );
  const archive = path.join(folder, 'bundle.tar.gz');
  execFileSync('tar', ['-czf', archive, '-C', project, '.']);
  return archive;
}

const lines = (element: Locator) =>
  // biome-ignore lint/performance/useDomNodeTextContent: innerText has the line breaks the page shows, none where CSS folds them away
  element.evaluate((node) => (node as unknown as { innerText: string }).innerText.split('\n'));
type Window = { getComputedStyle(node: unknown): { fontFamily: string } };
const font = (element: Locator) =>
  element.evaluate((node) => (globalThis as unknown as Window).getComputedStyle(node).fontFamily);

describe.skipIf(noBrowser)('console: logs', { timeout: 90_000 }, () => {
  const folder = mkdtempSync(path.join(tmpdir(), 'crewd-console-logs-'));
  let service: RunContext;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, service.baseUrl, ADMIN_KEY);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('keeps a traceback’s and an error’s line breaks, in a monospace block', async () => {
    const deploymentId = await deployNamed(service, 'broken', inline(FAILING_CREW));
    const run = await startRun(service, deploymentId, {});
    await waitForRun(service, run.run_id);
    await page.goto(`${service.baseUrl}/console/#/runs/${run.run_id}`);
    const timeline = page.getByRole('list', { name: 'Timeline events' });
    const traceback = timeline.locator('li', { hasText: 'Traceback' }).locator('pre');
    await traceback.waitFor();
    expect(await lines(traceback)).toEqual(TRACEBACK.split('\n'));
    expect(await font(traceback)).toMatch(/monospace/);
    const failure = timeline.locator('li', { hasText: 'run.failed' }).locator('pre');
    expect(await lines(failure)).toEqual(['ValueError: no OPENAI_API_KEY', 'set it with crewd variables set']);
    const error = page.locator('main > .error-message pre');
    expect(await lines(error)).toEqual(['ValueError: no OPENAI_API_KEY', 'set it with crewd variables set']);
    await expectAccessible(page, 'run with a traceback');
  });

  it('shows a long build log as one monospace pane scrolled to its last line', async () => {
    const deploymentId = (await post(service, '/v1/deployments', { name: 'long-build' })).id;
    await page.goto(`${service.baseUrl}/console/#/deployments/${deploymentId}`);
    const form = page.getByRole('form', { name: 'Upload a bundle' });
    await form.getByLabel('Bundle (.tar.gz of the project folder)').setInputFiles(longBuildBundle(folder));
    await form.getByRole('button', { name: 'Upload bundle' }).click();
    const pane = page.getByRole('log', { name: /^Build log of v1: output$/ });
    await page.getByText(/^Build failed: installing the dependencies exited with code 1$/).waitFor({ timeout: 60_000 });
    const text = await lines(pane);
    expect(text.map((line) => line.trim())).toContain(`compiling module ${LINES - 1}`);
    expect(text.length).toBeGreaterThan(LINES);
    expect(await font(pane)).toMatch(/monospace/);
    const box = await pane.evaluate((node) => ({
      overflows: node.scrollHeight > node.clientHeight,
      atEnd: node.scrollTop + node.clientHeight >= node.scrollHeight - 2,
    }));
    expect(box).toEqual({ overflows: true, atEnd: true });
    expect(await page.evaluate('document.documentElement.scrollHeight')).toBeLessThan(3000);
    await expectAccessible(page, 'deployment with a build log');
    await pane.scrollIntoViewIfNeeded();
    await screenshot(page, 'build-log');
  });
});
