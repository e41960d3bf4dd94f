import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { PYTHON_RUNNER_DIR, PYTHON_RUNNER_PRESENT } from './environment-key.js';
import type { Project } from './project.js';
import { BuildFailure, runStep, type StepTools } from './run-step.js';

/** What the import check runs with besides the build's tools: what a run of the version gets. */
export interface CheckContext {
  /** The deployment's variables. */
  values: Record<string, string>;
  /** PATH of runners. */
  runnerPath: string;
}

/** The version's built files, and a run's environment for them (builtVersionEnv). */
export interface CheckedVersion {
  projectDir: string;
  environmentDir: string | null;
  env: Record<string, string>;
}

/** The check's own switches: nothing is sent off the machine while a build imports a crew. */
const TELEMETRY_OFF: Record<string, string> = {
  CREWAI_DISABLE_TELEMETRY: 'true',
  CREWAI_DISABLE_TRACKING: 'true',
  CREWAI_TRACING_ENABLED: 'false',
  OTEL_SDK_DISABLED: 'true',
  // LiteLLM (under CrewAI) otherwise downloads its model price list when imported.
  LITELLM_LOCAL_MODEL_COST_MAP: 'True',
};

const STEP = 'checking the entrypoint';
/** The report's line with what the check found of the entry point's input and output (crewd_runner/tool_schemas.py). */
const SCHEMAS_MARKER = 'crewd-tool-schemas: ';
/** The most lines of the check's report that `build_error` carries (the runner caps its traceback already). */
const MAX_ERROR_LINES = 80;

/** A home of the check's own, in the version's build folder: the files a crew writes when imported go there. */
function homeEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    TMPDIR: path.join(home, 'tmp'),
  };
}

/** `crew`, `flow` or `graph` and its target, or null for a project the runner does not run. */
function runnerEntry(project: Project): [string, string] | null {
  for (const kind of ['crew', 'flow', 'graph']) {
    const target = project.entrypoint[kind];
    if (typeof target === 'string') return [kind, target];
  }
  return null;
}

/**
 * The import check (docs/python-crews.md): the version's crew, flow or graph is imported by the crewd
 * runner as a run would import it (its PATH, variables, env and import path; in the sandbox, seeing the
 * built files read-only), with a home of its own, and must be what its kind says. A failure is a
 * BuildFailure whose message carries the runner's report: why, and the traceback. Answers what the check found of
 * the entry point's input and output schemas and description (docs/mcp.md), or null.
 */
export async function checkEntrypoint(
  project: Project,
  built: CheckedVersion,
  buildFolder: string,
  tools: Omit<StepTools, 'writable'>,
): Promise<Record<string, unknown> | null> {
  const entry = runnerEntry(project);
  if (!entry || !project.python) return null;
  if (!PYTHON_RUNNER_PRESENT) {
    tools.log(`the entrypoint is not checked: the crewd Python runner is not at ${PYTHON_RUNNER_DIR}`, 'stderr');
    return null;
  }
  const [kind, target] = entry;
  const home = path.join(buildFolder, 'check-home');
  const ownHome = homeEnv(home);
  await mkdir(ownHome.TMPDIR as string, { recursive: true });
  const env = { ...built.env, ...ownHome, ...TELEMETRY_OFF };
  const report: string[] = [];
  const command = ['python', '-m', 'crewd_runner', '--check', `--${kind}`, target];
  const commandLine = `$ ${command.join(' ')}`;
  let schemas: Record<string, unknown> | null = null;
  const log: StepTools['log'] = (message, stream) => {
    if (stream === 'stdout' && message.startsWith(SCHEMAS_MARKER)) {
      schemas = parseSchemas(message.slice(SCHEMAS_MARKER.length));
      return;
    }
    if (stream === 'stdout' && message !== commandLine) report.push(message);
    tools.log(message, stream);
  };
  const readOnly = [buildFolder, ...(built.environmentDir ? [built.environmentDir] : []), PYTHON_RUNNER_DIR];
  const started = performance.now();
  try {
    await runStep(STEP, command, built.projectDir, { ...tools, env, log, writable: [home], readOnly });
  } catch (error) {
    if (!(error instanceof BuildFailure) || report.length === 0) throw error;
    const lines = report.length > MAX_ERROR_LINES ? [...report.slice(0, MAX_ERROR_LINES), '…'] : report;
    throw new BuildFailure(STEP, `${STEP} failed: ${lines.join('\n')}`);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
  tools.log(`entrypoint checked in ${((performance.now() - started) / 1000).toFixed(2)} s`, 'stdout');
  return schemas;
}

/** The schemas line's JSON object, or null for anything else (a project cannot make the build fail with it). */
function parseSchemas(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
