import path from 'node:path';
import { z } from 'zod';
import type { Runtime } from '../db/schema/builds.js';
import { badRequest } from '../errors.js';
import type { BundleListing } from './unpack.js';

/** What the Python build installs into the version's environment, paths relative to the project. */
export interface PythonInstall {
  requirementFiles: string[];
  /** Local folders installed as packages (`pip install <folder>`). */
  localPackages: string[];
  /** Names from the package index. */
  names: string[];
}

/** A recognised project: how it is built and what crewd runs (CONTRACTS §8). */
export interface Project {
  runtime: Runtime | null;
  /** What the bundle declares, e.g. `{"graph": "agent.py:graph"}`. */
  entrypoint: Record<string, unknown>;
  /** argv, run in the project folder; `python` and `node` come from the version's PATH. */
  command: string[];
  env: Record<string, string>;
  timeoutSeconds: number | null;
  python: PythonInstall | null;
  /** Folders (relative) put on PYTHONPATH. */
  importPaths: string[];
  /** The Node dependencies of package.json are installed. */
  nodeInstall: boolean;
}

export const LOOKED_FOR = 'crewd.json, langgraph.json, pyproject.toml with [tool.crewai], or package.json';

const target = z.string().regex(/^[^:\s]+:[A-Za-z_][\w.]*$/, 'must be "<module or file>:<attribute>"');
const crewdJson = z
  .strictObject({
    runtime: z.enum(['python', 'node']).optional(),
    crew: target.optional(),
    flow: target.optional(),
    graph: target.optional(),
    command: z.array(z.string().min(1)).min(1).optional(),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'keys must be variable names'), z.string()).optional(),
    timeout_seconds: z.number().positive().max(604800).optional(),
  })
  .refine((value) => [value.crew, value.flow, value.graph, value.command].filter(Boolean).length === 1, {
    message: 'must have exactly one of crew, flow, graph, command',
  });

const langgraphJson = z.looseObject({
  graphs: z.record(z.string(), z.string()).refine((graphs) => Object.keys(graphs).length > 0, 'must name a graph'),
  dependencies: z.array(z.string()).optional(),
  crewd: z.looseObject({ graph: z.string().optional() }).optional(),
});

const packageJson = z.looseObject({
  main: z.string().optional(),
  scripts: z.record(z.string(), z.string()).optional(),
  dependencies: z.record(z.string(), z.string()).optional(),
});

function parseJson<T>(listing: BundleListing, file: string, schema: z.ZodType<T>): T {
  const text = listing.files.get(file);
  if (text === undefined) throw badRequest(`${file}: could not be read (a file of at most 1 MiB)`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest(`${file}: is not valid JSON`);
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue?.path.length ? `.${issue.path.join('.')}` : '';
    throw badRequest(`${file}${where}: ${issue?.message ?? 'is invalid'}`);
  }
  return result.data;
}

const runner = (kind: 'crew' | 'flow' | 'graph', value: string) => ['python', '-m', 'crewd_runner', `--${kind}`, value];

/** The project's own Python dependencies at its root: requirements.txt and an installable pyproject.toml. */
function rootPythonInstall(listing: BundleListing): PythonInstall {
  const pyproject = listing.files.get('pyproject.toml') ?? '';
  return {
    requirementFiles: listing.paths.has('requirements.txt') ? ['requirements.txt'] : [],
    localPackages: /^\s*\[(project|build-system)\]/m.test(pyproject) || listing.paths.has('setup.py') ? ['.'] : [],
    names: [],
  };
}

/** A command without `runtime`: the runtime its program or its dependency files name, else none. */
function inferRuntime(listing: BundleListing, program: string): Runtime | null {
  const name = program.split('/').at(-1) ?? '';
  if (/^python(3(\.\d+)?)?$/.test(name)) return 'python';
  if (name === 'node') return 'node';
  if (listing.paths.has('requirements.txt') || listing.paths.has('pyproject.toml')) return 'python';
  if (listing.paths.has('package.json')) return 'node';
  return null;
}

function fromCrewdJson(listing: BundleListing): Project {
  const spec = parseJson(listing, 'crewd.json', crewdJson);
  const base = { env: spec.env ?? {}, timeoutSeconds: spec.timeout_seconds ?? null, importPaths: [] };
  for (const kind of ['crew', 'flow', 'graph'] as const) {
    const value = spec[kind];
    if (!value) continue;
    if (spec.runtime === 'node') throw badRequest(`crewd.json: "${kind}" needs the python runtime`);
    return {
      ...base,
      runtime: 'python',
      entrypoint: { [kind]: value },
      command: runner(kind, value),
      python: rootPythonInstall(listing),
      nodeInstall: false,
    };
  }
  const command = spec.command ?? [];
  const runtime = spec.runtime ?? inferRuntime(listing, command[0] ?? '');
  return {
    ...base,
    runtime,
    entrypoint: { command },
    command,
    python: runtime === 'python' ? rootPythonInstall(listing) : null,
    nodeInstall: runtime === 'node' && listing.paths.has('package.json'),
  };
}

function fromLanggraphJson(listing: BundleListing): Project {
  const spec = parseJson(listing, 'langgraph.json', langgraphJson);
  const names = Object.keys(spec.graphs);
  const chosen = spec.crewd?.graph ?? names[0];
  const graph = chosen === undefined ? undefined : spec.graphs[chosen];
  if (graph === undefined) throw badRequest(`langgraph.json: crewd.graph names no graph of "graphs": ${chosen}`);
  const value = graph.replace(/^\.\//, '');
  const install: PythonInstall = { requirementFiles: [], localPackages: [], names: [] };
  const importPaths: string[] = [];
  for (const dependency of spec.dependencies ?? []) {
    if (!(dependency === '.' || dependency.startsWith('./') || dependency.startsWith('../'))) {
      install.names.push(dependency);
      continue;
    }
    const folder = path.posix.normalize(dependency).replace(/\/+$/, '');
    if (folder === '..' || folder.startsWith('../')) {
      throw badRequest(`langgraph.json: dependencies: ${JSON.stringify(dependency)} lies outside the bundle`);
    }
    const inFolder = (file: string) => listing.paths.has(folder === '.' ? file : `${folder}/${file}`);
    if (inFolder('pyproject.toml') || inFolder('setup.py')) install.localPackages.push(folder);
    else {
      if (inFolder('requirements.txt'))
        install.requirementFiles.push(folder === '.' ? 'requirements.txt' : `${folder}/requirements.txt`);
      importPaths.push(folder);
    }
  }
  return {
    runtime: 'python',
    entrypoint: { graph: value },
    command: runner('graph', value),
    env: {},
    timeoutSeconds: null,
    python: install,
    importPaths,
    nodeInstall: false,
  };
}

/** A `crewai create crew|flow` project: the @CrewBase class in src/<package>/crew.py, or the flow in main.py. */
function fromCrewAi(listing: BundleListing): Project | null {
  const pyproject = listing.files.get('pyproject.toml') ?? '';
  if (!/^\s*\[tool\.crewai\]/m.test(pyproject)) return null;
  const declared = /\[tool\.crewai\][^[]*?type\s*=\s*"(crew|flow)"/s.exec(pyproject)?.[1];
  const candidates = [...listing.files.keys()].filter((file) => file.startsWith('src/')).sort();
  const crew = candidates
    .filter((file) => file.endsWith('/crew.py'))
    .map((file) => ({ file, name: /@CrewBase\s*\n\s*class\s+(\w+)/.exec(listing.files.get(file) ?? '')?.[1] }))
    .find((found) => found.name);
  const flow = candidates
    .filter((file) => file.endsWith('/main.py'))
    .map((file) => ({ file, name: /^class\s+(\w+)\s*\(\s*Flow\b/m.exec(listing.files.get(file) ?? '')?.[1] }))
    .find((found) => found.name);
  const pick = declared === 'flow' ? (flow ?? crew) : (crew ?? flow);
  if (!pick?.name) {
    throw badRequest(
      'pyproject.toml: [tool.crewai] project without a @CrewBase class in src/<package>/crew.py or a Flow in src/<package>/main.py',
    );
  }
  const kind = pick === flow ? 'flow' : 'crew';
  const module = pick.file.slice('src/'.length, -'.py'.length).replaceAll('/', '.');
  const value = `${module}:${pick.name}`;
  return {
    runtime: 'python',
    entrypoint: { [kind]: value },
    command: runner(kind, value),
    env: {},
    timeoutSeconds: null,
    python: rootPythonInstall(listing),
    importPaths: ['src'],
    nodeInstall: false,
  };
}

function fromPackageJson(listing: BundleListing): Project {
  const spec = parseJson(listing, 'package.json', packageJson);
  const script = spec.scripts?.crewd;
  const main = (spec.main ?? 'index.js').replace(/^\.\//, '');
  return {
    runtime: 'node',
    entrypoint: script ? { script } : { main },
    command: script ? ['/bin/sh', '-c', script] : ['node', main],
    env: {},
    timeoutSeconds: null,
    python: null,
    importPaths: [],
    nodeInstall: Object.keys(spec.dependencies ?? {}).length > 0,
  };
}

/** Recognises the project at the bundle's root, in the order of CONTRACTS §8; 400 when nothing matches. */
export function detectProject(listing: BundleListing): Project {
  if (listing.paths.has('crewd.json')) return fromCrewdJson(listing);
  if (listing.paths.has('langgraph.json')) return fromLanggraphJson(listing);
  const crewAi = listing.paths.has('pyproject.toml') ? fromCrewAi(listing) : null;
  if (crewAi) return crewAi;
  if (listing.paths.has('package.json')) return fromPackageJson(listing);
  throw badRequest(`The bundle has no project file at its root: looked for ${LOOKED_FOR}`);
}
