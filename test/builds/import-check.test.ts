import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import { createRunContext, dataOf, type RunContext, readStream } from '../runs/helpers.js';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from './helpers.js';

/**
 * The build's import check: a Python version whose crew or graph cannot be imported, or is not what its
 * kind says, fails its build with the reason and the traceback, and never becomes a running version.
 * The bundles import crewai and langgraph from the Python test environment (PYTHONPATH in their
 * crewd.json env) rather than installing them.
 */

/** The Python test environment's site-packages. */
function testSitePackages(): string {
  const venv = path.dirname(path.dirname(testPython() as string));
  const version = readdirSync(path.join(venv, 'lib')).find((name) => name.startsWith('python'));
  return path.join(venv, 'lib', version as string, 'site-packages');
}

const GRAPH = `
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class State(TypedDict):
    text: str

builder = StateGraph(State)
builder.add_node("echo", lambda state: state)
builder.add_edge(START, "echo")
builder.add_edge("echo", END)
graph = builder.compile()
COUNT = 3
`;

const MARKER = `crewd-import-check-${randomUUID()}`;
const CREW = `
from pathlib import Path
from crewai import Crew

# What CrewAI and crews do when imported: write under the home folder.
Path.home().joinpath(${JSON.stringify(MARKER)}).write_text("imported")
AGENTS = 2

def crew():
    raise RuntimeError("the check imports the crew's module, it does not call its factory")
`;

let ctx: RunContext;
let deploymentId: string;

function bundle(entry: Record<string, string>, files: Record<string, string>): Buffer {
  const env = { PYTHONPATH: testSitePackages() };
  return project({ 'crewd.json': JSON.stringify({ ...entry, env }), ...files });
}

async function build(entry: Record<string, string>, files: Record<string, string>) {
  const response = await upload(ctx, deploymentId, bundle(entry, files), '?environment=production');
  expect(response.statusCode, response.body).toBe(201);
  return waitForBuild(ctx, deploymentId, response.json().id, 120_000);
}

async function buildLog(versionId: string): Promise<string[]> {
  const url = `${ctx.baseUrl}/v1/deployments/${deploymentId}/versions/${versionId}/build/events`;
  const stream = await readStream(url, { headers: { 'last-event-id': '0' } });
  return dataOf(stream.messages)
    .filter((event) => event.type === 'build.log')
    .map((event) => (event.data as { message: string }).message);
}

async function production(): Promise<string | null> {
  const deployment = (await ctx.call('GET', `/v1/deployments/${deploymentId}`)).json();
  return deployment.environments.production?.version_id ?? null;
}

/** Builds a version that must fail the check: its error and log say `reason`, production keeps `running`. */
async function refused(entry: Record<string, string>, files: Record<string, string>, reason: RegExp) {
  const running = await production();
  const version = await build(entry, files);
  expect(version.status, version.build_error).toBe('failed');
  expect(version.build_error).toMatch(/^checking the entrypoint failed: /);
  expect(version.build_error).toMatch(reason);
  const log = (await buildLog(version.id)).join('\n');
  expect(log).toMatch(reason);
  expect(await production()).toBe(running);
  return version.build_error as string;
}

explainWithoutPython('The build import check');

describe.runIf(testPython() !== null)('the build imports a Python version entrypoint', () => {
  beforeAll(async () => {
    // The sandbox shows runners the test environment's folder as docs/operations.md says to show such a folder.
    const venv = path.dirname(path.dirname(testPython() as string));
    ctx = await createRunContext({ DATA_DIR: tempDataDir(), RUNNER_EXTRA_PATHS: venv });
    deploymentId = await createDeployment(ctx, 'import-check');
  });
  afterAll(async () => ctx?.close());

  it('passes a crew whose module imports, in a home of its own, and the version runs in production', {
    timeout: 180_000,
  }, async () => {
    const version = await build({ crew: 'crews:crew' }, { 'crews.py': CREW });
    expect(version.status, version.build_error).toBe('ready');
    const log = await buildLog(version.id);
    expect(log).toContain('$ python -m crewd_runner --check --crew crews:crew');
    expect(log).toContain('the crew crews:crew imports: function');
    expect(log.some((line) => /^entrypoint checked in [\d.]+ s$/.test(line))).toBe(true);
    // The module wrote into the check's own home, not into the service user's.
    expect(existsSync(path.join(homedir(), MARKER))).toBe(false);
    expect(await production()).toBe(version.id);
  });

  it('refuses a graph with a syntax error, with the traceback', { timeout: 120_000 }, async () => {
    const error = await refused(
      { graph: 'graph.py:graph' },
      { 'graph.py': `${GRAPH}\ndef broken(:\n    pass\n` },
      /the graph graph\.py:graph cannot be imported: SyntaxError: /,
    );
    expect(error).toMatch(/File ".*graph\.py", line \d+\n\s+def broken\(:/);
  });

  it('refuses a graph whose module imports a missing module', { timeout: 120_000 }, async () => {
    const error = await refused(
      { graph: 'graph.py:graph' },
      { 'graph.py': `import not_installed_anywhere\n${GRAPH}` },
      /the graph graph\.py:graph cannot be imported: ModuleNotFoundError: No module named 'not_installed_anywhere'/,
    );
    expect(error).toMatch(/Traceback \(most recent call last\):\n {2}File ".*graph\.py", line 1, in <module>/);
  });

  it('refuses a graph attribute that is not there, and one that is not a graph', { timeout: 120_000 }, async () => {
    await refused({ graph: 'graph.py:grpah' }, { 'graph.py': GRAPH }, /graph\.py:grpah.*has no attribute 'grpah'/);
    await refused({ graph: 'graph.py:COUNT' }, { 'graph.py': GRAPH }, /\(int\) is not a LangGraph graph/);
  });

  it('refuses a crew whose module imports a missing module', { timeout: 120_000 }, async () => {
    await refused(
      { crew: 'crews:crew' },
      { 'crews.py': `import not_installed_anywhere\n${CREW}` },
      /the crew crews:crew cannot be imported: ModuleNotFoundError: No module named 'not_installed_anywhere'/,
    );
  });

  it('refuses a crew attribute that is not there, and one that is not a crew', { timeout: 120_000 }, async () => {
    await refused({ crew: 'crews:Crew_' }, { 'crews.py': CREW }, /crews:Crew_.*has no attribute 'Crew_'/);
    await refused({ crew: 'crews:AGENTS' }, { 'crews.py': CREW }, /\(int\) is neither a Crew, a @CrewBase class/);
  });
});
