import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { until } from '../helpers/poll.js';
import { createRunContext, crew, type RunContext } from '../runs/helpers.js';
import { CLI_TEST_TIMEOUT, runCrewd } from './helpers.js';

let ctx: RunContext;
let crewd: (args: string[]) => ReturnType<typeof runCrewd>;

beforeAll(async () => {
  ctx = await createRunContext({ CRON_MIN_INTERVAL_SECONDS: '1' });
  const home = mkdtempSync(path.join(tmpdir(), 'crewd-cli-home-'));
  crewd = (args) => runCrewd(home, args, { CREWD_URL: ctx.baseUrl, CREWD_API_KEY: ADMIN_KEY });
});
afterAll(async () => ctx?.close());

describe('crewd crons (CONTRACTS §11)', { timeout: CLI_TEST_TIMEOUT }, () => {
  it('creates a cron whose runs start on schedule, lists it, deletes it', async () => {
    const id = (await ctx.call('POST', '/v1/deployments', { body: { name: 'cli-nightly' } })).json().id;
    await ctx.call('POST', `/v1/deployments/${id}/versions`, {
      body: { command: crew('trivial.mjs'), environment: 'production' },
    });

    const created = await crewd([
      'crons',
      'create',
      'cli-nightly',
      '--schedule',
      '* * * * * *',
      '--timezone',
      'Europe/Paris',
      '--input',
      '{"report":"daily"}',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const cron = JSON.parse(created.stdout);
    expect(cron).toMatchObject({
      deployment_id: id,
      schedule: '* * * * * *',
      timezone: 'Europe/Paris',
      input: { report: 'daily' },
      enabled: true,
    });
    expect(created.stderr).toMatch(new RegExp(`^Cron ${cron.id}: next run at \\d{4}-`, 'm'));

    const started = await until(async () => {
      const listed = await crewd(['runs', 'list', '--cron', cron.id]);
      return listed.stdout.trim() ? listed.stdout : null;
    }, 60_000);
    expect(started).toMatch(/^run_\S+\t(running|succeeded)\t/m);

    const listed = await crewd(['crons', 'list', '--deployment', 'cli-nightly']);
    expect(listed.stdout).toMatch(
      new RegExp(`^${cron.id}\t\\* \\* \\* \\* \\* \\*\tEurope/Paris\t${id}\tenabled\t`, 'm'),
    );

    const deleted = await crewd(['crons', 'delete', cron.id]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stderr).toContain(`Deleted cron ${cron.id}`);
    expect((await crewd(['crons', 'list'])).stdout).not.toContain(cron.id);

    const again = await crewd(['crons', 'delete', cron.id]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^crewd: Cron not found$/m);
  });

  it('names what is wrong in a schedule or time zone (exit 2)', async () => {
    const id = (await ctx.call('POST', '/v1/deployments', { body: { name: 'cli-badly' } })).json().id;
    const schedule = await crewd(['crons', 'create', id, '--schedule', 'every day']);
    expect(schedule.code).toBe(2);
    expect(schedule.stderr).toMatch(/^crewd: .*schedule/m);
    const zone = await crewd(['crons', 'create', id, '--schedule', '0 9 * * *', '--timezone', 'Mars/Olympus']);
    expect(zone.code).toBe(2);
    expect(zone.stderr).toMatch(/^crewd: .*timezone.*IANA time zone/m);
    const missing = await crewd(['crons', 'create', id]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/required option '--schedule <cron>' not specified/);
  });
});
