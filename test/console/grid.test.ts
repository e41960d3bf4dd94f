import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../runs/helpers.js';
import { launchBrowser, noBrowser, signIn } from './browser.js';
import { ADMIN_KEY, startService } from './service.js';

const ROWS = 100_000;
const BATCH = 1000;
const PAGE = 100;

/** Inserts `n` = 0 … ROWS-1 through the bulk row API, a few batches in flight at once. */
async function fill(service: RunContext, tableId: string): Promise<void> {
  const batches = Array.from({ length: ROWS / BATCH }, (_, batch) => batch);
  const worker = async () => {
    for (let batch = batches.shift(); batch !== undefined; batch = batches.shift()) {
      const rows = Array.from({ length: BATCH }, (_, i) => ({ n: batch * BATCH + i }));
      const response = await service.call('POST', `/v1/tables/${tableId}/rows`, { body: rows });
      if (response.statusCode !== 201) throw new Error(`batch ${batch}: ${response.body}`);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

describe.skipIf(noBrowser)('console: the table grid', { timeout: 90_000 }, () => {
  let service: RunContext;
  let browser: Browser;
  let page: Page;
  let tableId: string;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    const table = await service.call('POST', '/v1/tables', {
      body: { name: 'big', columns: [{ name: 'n', type: 'number' }] },
    });
    tableId = table.json().id as string;
    await fill(service, tableId);
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, service.baseUrl, ADMIN_KEY);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it('pages through 100,000 rows a page at a time, to the end and to the middle', async () => {
    const asked: number[] = [];
    const answered: number[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith(`/v1/tables/${tableId}/query`)) asked.push(JSON.parse(request.postData()!).limit);
    });
    page.on('response', async (response) => {
      if (!response.url().endsWith(`/v1/tables/${tableId}/query`)) return;
      answered.push(((await response.json()) as { rows: unknown[] }).rows.length);
    });
    await page.goto(`${service.baseUrl}/console/#/tables/${tableId}`);
    await page.getByText(`${ROWS} rows`).waitFor();
    await page.getByRole('columnheader', { name: 'n' }).getByRole('button').click();
    const grid = page.getByRole('table', { name: 'Rows' });

    const scrollTo = (row: number | 'end') =>
      page.locator('.grid-scroll').evaluate((element, to) => {
        const height = element.querySelector('tbody tr')!.getBoundingClientRect().height;
        element.scrollTop = to === 'end' ? element.scrollHeight : to * height;
      }, row);

    // The rendered rows as [first n, last n] when they are a run of consecutive rows that fills the view, and no more.
    const shown = async () => {
      const values = (await grid.locator('tbody td:nth-child(2)').allTextContents()).map(Number).sort((a, b) => a - b);
      const consecutive = values.every((value, i) => i === 0 || value === values[i - 1]! + 1);
      return consecutive && values.length >= 10 && values.length < 40 ? [values[0], values.at(-1)] : values;
    };

    await expect.poll(shown).toEqual([0, expect.any(Number)]);

    await scrollTo('end');
    const last = grid.getByRole('row').filter({ has: page.getByRole('cell', { name: String(ROWS - 1), exact: true }) });
    await last.waitFor();
    await expect(last.getAttribute('aria-rowindex')).resolves.toBe(String(ROWS + 1));
    const box = (await page.locator('.grid-scroll').boundingBox())!;
    const row = (await last.boundingBox())!;
    expect(row.y).toBeGreaterThanOrEqual(box.y);
    expect(row.y + row.height).toBeLessThanOrEqual(box.y + box.height);

    await expect.poll(shown).toEqual([expect.any(Number), ROWS - 1]);

    await scrollTo(ROWS / 2);
    await grid.getByRole('cell', { name: String(ROWS / 2), exact: true }).waitFor();
    await expect.poll(shown).toEqual([ROWS / 2, expect.any(Number)]);

    await expect.poll(() => answered.length).toBe(asked.length);
    expect(asked.every((limit) => limit === PAGE)).toBe(true);
    expect(answered.every((rows) => rows <= PAGE)).toBe(true);
    // The first page unsorted and sorted, then a page or two at each of the end and the middle.
    expect(asked.length).toBeLessThanOrEqual(8);
  });
});
