import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LaunchedProcess, LaunchRequest, ProcessLauncher } from '../../src/execution/launcher.js';
import { createSparePool } from '../../src/execution/sandbox-spares.js';
import { sandboxedLauncher } from '../../src/execution/sandboxed-launcher.js';
import { createSpawner } from '../../src/execution/spawner.js';
import { createLogger } from '../../src/logger.js';
import { createBubblewrapSandbox } from '../../src/sandbox/bubblewrap.js';
import { SANDBOX_HOME_ENV } from '../../src/sandbox/home.js';
import { findBwrap } from '../../src/sandbox/probe.js';
import { until } from '../runs/helpers.js';

const bwrapPath = findBwrap(process.env.PATH ?? '');

/** Prints what the process was given: its cwd, argv, environment and standard input; then exits 3. */
const REPORT = `
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  process.stdout.write(JSON.stringify({ cwd: process.cwd(), argv: process.argv.slice(1), env: process.env, input }));
  process.exitCode = 3;
});
`;

/** Values a shell would mangle if they were not quoted right. */
const AWKWARD = `it's "quoted" $HOME \`date\` \\ ; | & > *\nsecond line`;

async function outputOf(launched: LaunchedProcess): Promise<{ report: Record<string, unknown>; code: number | null }> {
  let text = '';
  launched.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  const ended = new Promise((resolve) => launched.stdout.once('end', resolve));
  const status = await launched.exit;
  await ended;
  return { report: JSON.parse(text), code: status?.code ?? null };
}

const spareFolders = (runsDir: string) => readdirSync(runsDir).filter((name) => name.startsWith('.spare-'));

describe.skipIf(bwrapPath === null)('spare sandboxes (made ahead, taken by the next run of the same shape)', () => {
  let dataDir: string;
  let runsDir: string;
  let launcher: ProcessLauncher;
  let runCount = 0;

  beforeEach(() => {
    // Under /var/tmp: a run's own /tmp is a fresh one, and DATA_DIR is hidden from it either way.
    dataDir = mkdtempSync('/var/tmp/crewd-spares-');
    runsDir = path.join(dataDir, 'runs');
    mkdirSync(runsDir);
    const sandbox = createBubblewrapSandbox({ bwrapPath: bwrapPath as string, network: 'on', dataDir });
    launcher = sandboxedLauncher(createSpawner(createLogger('silent')), sandbox, {
      runsDir,
      logger: createLogger('silent'),
    });
    launcher.start();
  });
  afterEach(async () => {
    await launcher.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A run as the executor asks for one: its fresh scratch folder under DATA_DIR/runs, writable. */
  function runRequest(): LaunchRequest & { cwd: string } {
    const cwd = path.join(runsDir, `run_test${++runCount}`);
    mkdirSync(cwd);
    return {
      command: [process.execPath, '-e', REPORT, 'plain', AWKWARD, ''],
      cwd,
      env: { PATH: '/usr/bin:/bin', CREWD_RUN_ID: `run_test${runCount}`, AWKWARD },
      stdin: `{"input": ${JSON.stringify(AWKWARD)}}`,
      confinement: { writable: [cwd], readOnly: [] },
    };
  }

  async function launch(request: LaunchRequest): Promise<LaunchedProcess> {
    const launched = await launcher.launch(request);
    if ('error' in launched) throw new Error(launched.error);
    return launched;
  }

  /**
   * Launches runs made by `makeRequest` until one takes a spare (its folder is then a symlink into
   * the spare's): a spare's folder appears a moment before the spare waits. Others are ended.
   */
  async function launchInSpare(makeRequest: () => LaunchRequest & { cwd: string }) {
    for (let attempt = 0; attempt < 20; attempt++) {
      await until(() => spareFolders(runsDir).length === 1);
      const request = makeRequest();
      const launched = await launch(request);
      if (lstatSync(request.cwd).isSymbolicLink()) return { request, launched };
      await launched.endGroup(1000);
      await launched.exit;
    }
    throw new Error('no run took a spare');
  }

  it('gives the run in a spare exactly what a fresh sandbox gives it: folder, argv, environment, input, exit status', async () => {
    const first = runRequest();
    const fresh = await outputOf(await launch(first));
    expect(lstatSync(first.cwd).isDirectory()).toBe(true);
    // The first run's end makes a spare for the next one.
    const { request: second, launched } = await launchInSpare(runRequest);
    const spared = await outputOf(launched);

    for (const [{ report, code }, request] of [
      [fresh, first],
      [spared, second],
    ] as const) {
      expect(code).toBe(3);
      expect(report.cwd).toBe(request.cwd);
      expect(report.argv).toEqual(['plain', AWKWARD, '']);
      // Its home and /tmp of its own, and PWD as bwrap's --chdir sets it.
      expect(report.env).toEqual({ ...request.env, ...SANDBOX_HOME_ENV, PWD: request.cwd });
      expect(report.input).toBe(request.stdin);
    }
  });

  it('keeps the run’s files where the host expects them while it runs, and removes the spare’s folder after', async () => {
    await outputOf(await launch(runRequest()));
    const writeThenWait = `require('node:fs').writeFileSync('made-here.txt', 'written by the run'); setTimeout(() => {}, 60000)`;
    const { request, launched } = await launchInSpare(() => {
      const request = runRequest();
      return { ...request, command: [process.execPath, '-e', writeThenWait] };
    });
    // The symlink leads into the spare's folder, next to it: .spare-…/<run>.
    const spare = readlinkSync(request.cwd).split(path.sep)[0] as string;
    expect(spare).toMatch(/^\.spare-/);
    const file = path.join(request.cwd, 'made-here.txt');
    await until(() => existsSync(file));
    expect(readFileSync(file, 'utf8')).toBe('written by the run');
    await launched.endGroup(1000);
    await launched.exit;
    await until(() => !existsSync(path.join(runsDir, spare)));
  });

  it('shows a run in a spare neither other runs’ folders nor the database folder', async () => {
    await outputOf(await launch(runRequest()));
    mkdirSync(path.join(dataDir, 'db'));
    const listing = `process.stdout.write(JSON.stringify({runs: require('node:fs').readdirSync('..'), data: require('node:fs').readdirSync('../..')}))`;
    const { request, launched } = await launchInSpare(() => {
      const request = runRequest();
      return { ...request, command: [process.execPath, '-e', listing] };
    });
    let text = '';
    launched.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    await launched.exit;
    await until(() => text.endsWith('}'));
    expect(JSON.parse(text)).toEqual({ runs: [path.basename(request.cwd)], data: ['runs'] });
  });

  it('makes no spare for a process that writes other folders (a build step)', async () => {
    const folder = path.join(dataDir, 'build');
    mkdirSync(folder);
    const build = { ...runRequest(), cwd: folder, confinement: { writable: [folder], readOnly: [] } };
    // A spare's folder is made at once, as a run takes one or as its process ends: had the build made one, it is here.
    await outputOf(await launch(build));
    expect(spareFolders(runsDir)).toEqual([]);

    // A run of a scratch folder does make one: the check above looks where spares appear.
    await outputOf(await launch(runRequest()));
    expect(spareFolders(runsDir)).toHaveLength(1);
  });

  it('ends its waiting spares when stopped, while the launcher that started them still runs', async () => {
    // The spawner ends whatever it started when it stops, so the pool's own stop is watched before that.
    const spawner = createSpawner(createLogger('silent'));
    const started: LaunchedProcess[] = [];
    const watched: ProcessLauncher = {
      ...spawner,
      async launch(request) {
        const launched = await spawner.launch(request);
        if (!('error' in launched)) started.push(launched);
        return launched;
      },
    };
    spawner.start();
    const pool = createSparePool(watched, { runsDir, logger: createLogger('silent') });
    const sandbox = createBubblewrapSandbox({ bwrapPath: bwrapPath as string, network: 'on', dataDir });
    try {
      const { command, cwd, env, confinement } = runRequest();
      const shape = sandbox.spareShape?.({ command, cwd, env: { ...env, ...SANDBOX_HOME_ENV } }, confinement);
      if (!shape) throw new Error('a run in its scratch folder has a spare shape');
      pool.madeRoomFor(shape);
      const spare = await until(() => started[0]);
      let ended = false;
      void spare.exit.then(() => {
        ended = true;
      });
      await pool.stop();
      expect(ended).toBe(true);
      await until(() => spareFolders(runsDir).length === 0);
    } finally {
      await spawner.stop();
    }
  });

  it('removes the folders of spares a killed crewd left behind, at start, and no live one’s', async () => {
    const gone = spawnSync('true').pid;
    const stale = path.join(runsDir, `.spare-${gone}-left-by-a-killed-crewd`);
    mkdirSync(path.join(stale, 'run_old'), { recursive: true });
    const live = path.join(runsDir, `.spare-${process.pid}-of-a-live-crewd`);
    mkdirSync(live);
    const next = sandboxedLauncher(
      createSpawner(createLogger('silent')),
      createBubblewrapSandbox({ bwrapPath: bwrapPath as string, network: 'on', dataDir }),
      {
        runsDir,
        logger: createLogger('silent'),
      },
    );
    next.start();
    try {
      await until(() => !existsSync(stale));
      expect(existsSync(live)).toBe(true);
    } finally {
      await next.stop();
    }
  });
});
