import { describe, expect, it } from 'vitest';
import { SETTING_NAMES } from '../../src/config.js';
import { prettyLine } from '../../src/log-pretty.js';
import { startBanner } from '../../src/service/banner.js';
import { describeDatabaseUrl } from '../../src/service/database-check.js';
import { findSettingTypos } from '../../src/service/setting-typos.js';

describe('what the service says at start', () => {
  it('names the closest setting for one that looks like crewd’s and leaves other programs’ variables alone', () => {
    const env = { MAX_CONCURENT_RUNS: '3', RUNER_SANDBOX: 'on', HOME: '/root', PWD: '/', TERM: 'xterm', PORT: '1' };
    expect(findSettingTypos(env, SETTING_NAMES)).toEqual([
      { name: 'MAX_CONCURENT_RUNS', closest: 'MAX_CONCURRENT_RUNS' },
      { name: 'RUNER_SANDBOX', closest: 'RUNNER_SANDBOX' },
    ]);
  });

  it('prints the console and API reference in its banner', () => {
    const banner = startBanner({ host: '0.0.0.0', port: 8080 });
    expect(banner).toContain('http://localhost:8080/console/');
    expect(banner).toContain('http://localhost:8080/docs');
  });

  it('names a database by host, port and name, never its password', () => {
    expect(describeDatabaseUrl('postgres://user:hunter2@db.internal:6543/crewd')).toBe('db.internal:6543/crewd');
    expect(describeDatabaseUrl('postgres://localhost/x')).toBe('localhost:5432/x');
  });

  it('turns a JSON log line into one people read, with an error’s stack on lines of its own', () => {
    const json = JSON.stringify({
      level: 50,
      time: Date.UTC(2026, 0, 1, 12, 0, 1),
      pid: 1,
      hostname: 'h',
      msg: 'the fork server failed',
      versionId: 'ver_1',
      err: { message: 'boom', stack: 'Error: boom\n    at here' },
    });
    const line = prettyLine(json, false);
    expect(line).toMatch(
      /^\d\d:\d\d:\d\d ERROR the fork server failed versionId=ver_1\n {4}Error: boom\n {8}at here\n$/,
    );
    expect(line).not.toContain('hostname');
    expect(prettyLine('not json', false)).toBe('not json');
  });
});
