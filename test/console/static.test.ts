import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';

describe('console files', () => {
  let ctx: TestContext;

  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx?.close());

  it('redirects / to the console and serves its page without a key, never cached', async () => {
    const root = await ctx.call('GET', '/', { key: null });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/console/');
    for (const url of ['/console/', '/console']) {
      const page = await ctx.call('GET', url, { key: null });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['cache-control']).toBe('no-cache');
      expect(page.body).toContain('<div id="root">');
      // Its icon is in the page: a browser would otherwise ask /favicon.ico, which is not found.
      expect(page.body).toMatch(/<link rel="icon" href="data:image\/svg\+xml,/);
    }
  });

  it('serves the hashed assets the page names as immutable, and 404 for others', async () => {
    const page = await ctx.call('GET', '/console/', { key: null });
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.body)?.[1];
    expect(script).toBeDefined();
    const asset = await ctx.call('GET', script!, { key: null });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await ctx.call('GET', '/console/assets/missing.js', { key: null })).statusCode).toBe(404);
  });
});
