import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageSettings } from '../../src/builds/package-settings.js';
import { createBubblewrapSandbox } from '../../src/sandbox/bubblewrap.js';
import { SANDBOX_HOME_ENV } from '../../src/sandbox/home.js';
import { findBwrap } from '../../src/sandbox/probe.js';

const bwrap = findBwrap(process.env.PATH ?? '');

/**
 * A service user's home with pip settings that name a wheel folder and a file:// index outside the sandbox's view,
 * and a secret beside them: a build step gets the settings and what they name, never the rest of that home.
 */
describe.skipIf(bwrap === null)("a build step and the service user's package-index settings", () => {
  let home: string;
  let local: string;
  let dataDir: string;
  beforeAll(() => {
    home = mkdtempSync('/var/tmp/crewd-service-home-');
    local = mkdtempSync('/var/tmp/crewd-local-index-');
    dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-settings-data-'));
    mkdirSync(path.join(local, 'wheels'));
    mkdirSync(path.join(local, 'simple'));
    writeFileSync(path.join(local, 'wheels', 'tool-1.0-py3-none-any.whl'), '');
    mkdirSync(path.join(home, '.config/pip'), { recursive: true });
    const conf = `[global]\nfind-links = ${local}/wheels\nextra-index-url = file://${local}/simple\n`;
    writeFileSync(path.join(home, '.config/pip/pip.conf'), conf);
    writeFileSync(path.join(home, '.npmrc'), 'fund=false\n');
    writeFileSync(path.join(home, 'secret.txt'), 'service-user-secret');
  });
  afterAll(() => {
    for (const folder of [home, local, dataDir]) rmSync(folder, { recursive: true, force: true });
  });

  it('finds the settings files and the local folders they name', () => {
    const settings = packageSettings({ HOME: home, PIP_DEFAULT_TIMEOUT: '60' });
    expect(settings.homeFiles).toEqual([
      { source: path.join(home, '.config/pip/pip.conf'), target: '.config/pip/pip.conf' },
      { source: path.join(home, '.npmrc'), target: '.npmrc' },
    ]);
    expect(settings.readOnly).toEqual(expect.arrayContaining([`${local}/wheels`, `${local}/simple`]));
    expect(settings.readOnly.some((file) => file === home || file.startsWith(`${home}/`))).toBe(false);
  });

  it('gets them in the sandbox, in a home of its own, and nothing else of that home', () => {
    const settings = packageSettings({ HOME: home });
    const sandbox = createBubblewrapSandbox({ bwrapPath: bwrap as string, network: 'on', dataDir });
    const script = [
      'cat "$HOME/.config/pip/pip.conf" "$HOME/.npmrc"',
      `ls ${local}/wheels`,
      `cat ${home}/secret.txt 2>/dev/null || echo no-secret`,
      'ls -A "$HOME"',
    ].join('; ');
    const plan = sandbox.wrap(
      { command: ['/bin/sh', '-c', script], cwd: '/', env: { PATH: '/usr/bin:/bin', ...SANDBOX_HOME_ENV } },
      { writable: [], readOnly: settings.readOnly, homeFiles: settings.homeFiles },
    );
    const [file, ...args] = plan.command;
    const input = `${plan.line}\n`;
    const result = spawnSync(file as string, args, { cwd: plan.cwd, env: plan.env, input, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.stdout.split('\n')).toEqual([
      '[global]',
      `find-links = ${local}/wheels`,
      `extra-index-url = file://${local}/simple`,
      'fund=false',
      'tool-1.0-py3-none-any.whl',
      'no-secret',
      '.config',
      '.npmrc',
      '',
    ]);
  });
});
