import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDeployment, project, upload, waitForBuild } from '../builds/helpers.js';
import type { RunContext } from '../runs/helpers.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const RUNNER = path.join(ROOT, 'runners/python');
export const EXAMPLES = path.join(ROOT, 'examples');

/**
 * The Python test environment with real crewai and langgraph, built once per machine by
 * runners/python/scripts/test-env.sh (.ci/run builds it before the suites): its python, or null.
 */
export function testPython(): string | null {
  const candidates = [
    process.env.CREWD_PYTHON_TEST_VENV,
    path.join(homedir(), '.cache/crewd/python-venv-test'),
    path.join(RUNNER, '.venv-test'),
  ];
  for (const venv of candidates) {
    if (venv && existsSync(path.join(venv, 'bin/python'))) return path.join(venv, 'bin/python');
  }
  return null;
}

/** The test environment's folder. */
const testVenv = (): string => path.dirname(path.dirname(testPython() as string));

/**
 * The setting a service needs to run the test environment's python as a command version's program: the environment
 * lives outside the sandbox's view (under the home folder), so its folder is listed, as docs/operations.md says.
 */
export function testVenvSettings(): Record<string, string> {
  return { RUNNER_EXTRA_PATHS: testVenv() };
}

/** What a crew needs to run offline, as docs/python-crews.md tells users: nothing sent off the machine. */
export const OFFLINE_VARIABLES: Record<string, string> = {
  CREWAI_DISABLE_TELEMETRY: 'true',
  CREWAI_DISABLE_TRACKING: 'true',
  CREWAI_TRACING_ENABLED: 'false',
  OTEL_SDK_DISABLED: 'true',
  LITELLM_LOCAL_MODEL_COST_MAP: 'True',
};

/** What a crew of the examples needs in its version env: the runner on the path, nothing sent off the machine. */
export const OFFLINE_ENV: Record<string, string> = { PYTHONPATH: RUNNER, ...OFFLINE_VARIABLES };

/**
 * The env of a bundle version (crewd.json) that imports crewai and langgraph from the test environment instead of
 * installing them from PyPI: a bundle without dependencies builds in seconds. The build puts the runner on the path.
 */
export function testVenvBundleEnv(): Record<string, string> {
  const venv = testVenv();
  const version = readdirSync(path.join(venv, 'lib')).find((name) => name.startsWith('python'));
  const { PYTHONPATH: _runner, ...offline } = OFFLINE_ENV;
  return { ...offline, PYTHONPATH: path.join(venv, 'lib', version as string, 'site-packages') };
}

/**
 * The sockets of the Python fork servers of the crewd on `dataDir`, as they lie on disk: a version's own fork server's
 * (`DATA_DIR/f/<own>/<n>/s`), or its version server's in its environment's folder (`DATA_DIR/f/<own>/e<n>/s/<m>/s`).
 */
export function forkServerSockets(dataDir: string): string[] {
  const root = path.join(dataDir, 'f');
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((own) =>
    readdirSync(path.join(root, own)).flatMap((server) => {
      if (!server.startsWith('e')) return [path.join(root, own, server, 's')].filter((socket) => existsSync(socket));
      const sockets = path.join(root, own, server, 's');
      if (!existsSync(sockets)) return [];
      return readdirSync(sockets)
        .map((version) => path.join(sockets, version, 's'))
        .filter((socket) => existsSync(socket));
    }),
  );
}

/** The environment servers' sockets of the crewd on `dataDir` (`DATA_DIR/f/<own>/e<n>/s/e`). */
export function environmentServerSockets(dataDir: string): string[] {
  const root = path.join(dataDir, 'f');
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((own) =>
    readdirSync(path.join(root, own))
      .filter((server) => server.startsWith('e'))
      .map((server) => path.join(root, own, server, 's', 'e'))
      .filter((socket) => existsSync(socket)),
  );
}

/**
 * Host pids of the Python servers of the crewd on `dataDir` and their children (they keep the server's command
 * line): fork servers, and environment servers with the version servers forked from them.
 */
export function forkServerPythons(dataDir: string, modules = ['crewd_runner.forkserver', 'crewd_runner.envserver']) {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const python = !path.basename(args[0] ?? '').startsWith('bwrap');
      if (python && modules.some((module) => args.includes(module)) && args.join(' ').includes(dataDir)) {
        if (!/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${entry}/stat`, 'utf8'))) pids.push(Number(entry));
      }
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Without the environment the file says why; in CI (which builds it) that fails. */
export function explainWithoutPython(title: string): void {
  describe.runIf(testPython() === null)(`${title} (no Python test environment)`, () => {
    it('needs runners/python/scripts/test-env.sh run first', () => {
      expect(process.env.CI, 'CI builds the Python test environment before the suites').not.toBe('true');
    });
  });
}

/**
 * A deployment whose production version is a bundle of the LangGraph graph `graphSource` (graph.py:graph), built
 * against the test environment: its id, once the version is ready.
 */
export async function deployGraphBundle(ctx: RunContext, name: string, graphSource: string): Promise<string> {
  const deploymentId = await createDeployment(ctx, name);
  const crewdJson = { graph: 'graph.py:graph', env: testVenvBundleEnv(), timeout_seconds: 120 };
  const bundle = project({ 'crewd.json': JSON.stringify(crewdJson), 'graph.py': graphSource });
  const response = await upload(ctx, deploymentId, bundle, '?environment=production');
  expect(response.statusCode, response.body).toBe(201);
  const version = await waitForBuild(ctx, deploymentId, response.json().id);
  expect(version.status, version.build_error).toBe('ready');
  return deploymentId;
}
