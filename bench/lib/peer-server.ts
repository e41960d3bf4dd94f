import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonTarget } from './json-request.js';
import { freePort } from './node-process.js';

/*
 * The official LangGraph server, `langgraph dev` from `langgraph-cli[inmem]`, as the peer the throughput bench
 * measures crewd against. It is installed once into a venv of the bench's own (never the test environment),
 * with the langgraph the test environment has, so that both servers run the same library.
 */

const VENV = process.env.LANGGRAPH_DEV_VENV ?? path.join(homedir(), '.cache/crewd/langgraph-dev-venv');
const LANGGRAPH = path.join(VENV, 'bin/langgraph');

export interface Peer {
  pid: number;
  target: JsonTarget;
  stop(): Promise<void>;
}

/** Installs `langgraph-cli[inmem]` into the bench's venv unless there; null with the reason when it cannot. */
function installPeer(langgraphVersion: string): string | null {
  if (existsSync(LANGGRAPH)) return null;
  process.stdout.write(`installing langgraph-cli[inmem] into ${VENV} (once)\n`);
  const steps: string[][] = [
    ['python3', '-m', 'venv', VENV],
    [path.join(VENV, 'bin/python'), '-m', 'pip', 'install', '-q', 'langgraph-cli[inmem]', langgraphVersion],
  ];
  for (const [program, ...args] of steps) {
    const done = spawnSync(program as string, args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (done.status !== 0) {
      const why = done.error?.message ?? done.stderr.trim().split('\n').slice(-1)[0];
      return `${program} ${args.join(' ')} failed: ${why}`;
    }
  }
  return existsSync(LANGGRAPH) ? null : `no ${LANGGRAPH} after installing`;
}

/** The langgraph version of the test environment, pinned in the peer's venv too. */
function langgraphPin(venv: string): string {
  const asked = spawnSync(
    path.join(venv, 'bin/python'),
    ['-c', 'import importlib.metadata as m; print(m.version("langgraph"))'],
    {
      encoding: 'utf8',
    },
  );
  return asked.status === 0 ? `langgraph==${asked.stdout.trim()}` : 'langgraph';
}

async function answers(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/ok`)).ok;
  } catch {
    return false;
  }
}

function stopGroup(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  try {
    process.kill(-(child.pid as number), 'SIGTERM');
  } catch {
    // already gone
  }
  return Promise.race([exited, sleep(10_000)]).then(() => {
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // gone
    }
  });
}

/**
 * `langgraph dev` serving graph `name` from `source` (a file of `project`) in `dir`; null, with a line saying
 * why, when it cannot be installed or does not start.
 */
export async function startPeer(
  dir: string,
  project: string,
  source: string,
  name: string,
  testVenv: string,
): Promise<Peer | null> {
  const failed = installPeer(langgraphPin(testVenv));
  if (failed) {
    process.stdout.write(`peer skipped: ${failed}\n`);
    return null;
  }
  mkdirSync(dir, { recursive: true });
  const file = source.split(':')[0] as string;
  copyFileSync(path.join(project, file), path.join(dir, file));
  writeFileSync(
    path.join(dir, 'langgraph.json'),
    JSON.stringify({ dependencies: ['.'], graphs: { [name]: `./${source}` } }),
  );
  const port = await freePort();
  const env = {
    PATH: `${path.join(VENV, 'bin')}:${process.env.PATH ?? ''}`,
    HOME: dir,
    LANGGRAPH_CLI_NO_ANALYTICS: '1',
    LANGSMITH_TRACING: 'false',
  };
  const child = spawn(
    LANGGRAPH,
    ['dev', '--host', '127.0.0.1', '--port', String(port), '--no-browser', '--no-reload'],
    {
      cwd: dir,
      env,
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  for (let i = 0; !(await answers(port)); i++) {
    if (ended || i > 1200) {
      await stopGroup(child, exited);
      process.stdout.write(`peer skipped: langgraph dev did not start:\n${log}\n`);
      return null;
    }
    await sleep(100);
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  return {
    pid: child.pid as number,
    target: { port, key: 'none', agent },
    async stop() {
      agent.destroy();
      await stopGroup(child, exited);
    },
  };
}
