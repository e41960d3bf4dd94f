import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createSpawner } from '../src/execution/spawner.js';
import { createBubblewrapSandbox } from '../src/sandbox/bubblewrap.js';
import { findNetworkTools } from '../src/sandbox/network.js';
import { findBwrap } from '../src/sandbox/probe.js';
import type { RunnerNetwork } from '../src/sandbox/types.js';
import { median, printFigure } from './lib/figures.js';

/*
 * CPU per sandbox of each RUNNER_NETWORK (issue 28): sandboxes of /bin/true started as crewd starts them, through a
 * spawner helper of their own, 2 at a time. Each variant's helper, and so everything it starts, is in a cpuacct
 * cgroup of its own: slirp4netns outlives the shell that started it, and only a cgroup counts it. Batches of the
 * variants alternate, so the load of other work weighs on each alike; each figure is the median of its batches.
 * Needs root (cgroups v1's cpuacct). SANDBOX_BENCH_BATCH and SANDBOX_BENCH_ROUNDS change the size.
 *
 * `reused` is a prototype, not a crewd setting (docs/ARCHITECTURE.md, "What the isolated network costs a
 * sandbox"): one network namespace made ahead with its slirp4netns and routes, each sandbox started in it with
 * nsenter and `on`'s arguments. It is what the network would cost per sandbox if namespaces were reused.
 */

const BATCH = Number(process.env.SANDBOX_BENCH_BATCH ?? 20);
const ROUNDS = Number(process.env.SANDBOX_BENCH_ROUNDS ?? 6);
const CPUACCT = '/sys/fs/cgroup/cpuacct';

interface Variant {
  name: string;
  one(): Promise<void>;
  /** CPU of its cgroup so far, ms. */
  usage(): number;
  stop(): Promise<void>;
  samples: number[];
}

/** The processes this one started and has not reaped, as pids. */
const children = () =>
  new Set(
    readdirSync('/proc/self/task').flatMap((task) =>
      readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim().split(' ').filter(Boolean),
    ),
  );

/** The prototype's namespace: a holder process in it, its stack, its route; nsenter enters it by the holder's pid. */
async function reusedNamespace(slirp4netns: string, cleanups: Array<() => void>): Promise<string[]> {
  const holder = spawn('unshare', ['--net', 'sleep', 'infinity'], { stdio: 'ignore', detached: true });
  holder.unref();
  cleanups.push(() => holder.kill());
  const pid = String(holder.pid);
  // Until unshare made the namespace, the pid's is the host's: a route added there would be the host's.
  const own = readlinkSync('/proc/self/ns/net');
  for (let waited = 0; readlinkSync(`/proc/${pid}/ns/net`) === own; waited += 50) {
    if (waited > 5000) throw new Error('unshare --net made no namespace in 5 s');
    await sleep(50);
  }
  const flags = ['--configure', '--mtu=65520', '--disable-host-loopback', '--disable-dns'];
  const stack = spawn(slirp4netns, [...flags, '--enable-sandbox', '--enable-seccomp', pid, 'tap0'], {
    stdio: 'ignore',
    detached: true,
  });
  stack.unref();
  cleanups.push(() => stack.kill());
  await sleep(500);
  const enter = ['nsenter', `--net=/proc/${pid}/ns/net`];
  execFileSync(enter[0] as string, [...enter.slice(1), 'ip', 'route', 'add', 'unreachable', '169.254.0.0/16']);
  return [...enter, '--'];
}

async function makeVariant(name: string, dataDir: string, work: string, cleanups: Array<() => void>): Promise<Variant> {
  const found = findNetworkTools();
  if ('missing' in found) throw new Error(found.missing);
  const network: RunnerNetwork = name === 'isolated' || name === 'off' ? name : 'on';
  const prefix = name === 'reused' ? await reusedNamespace(found.tools.slirp4netns, cleanups) : [];
  const bwrapPath = findBwrap(process.env.PATH ?? '') as string;
  const sandbox = createBubblewrapSandbox({ bwrapPath, network, networkSetup: { tools: found.tools }, dataDir });
  const before = children();
  const spawner = createSpawner(pino({ level: 'silent' }));
  spawner.start();
  await sleep(300);
  const cgroup = path.join(CPUACCT, `crewd-bench-${process.pid}-${name}`);
  mkdirSync(cgroup);
  for (const pid of children()) if (!before.has(pid)) writeFileSync(path.join(cgroup, 'cgroup.procs'), pid);
  const plain = { command: ['/bin/true'], cwd: work, env: { PATH: '/usr/bin:/bin' } };
  return {
    name,
    samples: [],
    usage: () => Number(readFileSync(path.join(cgroup, 'cpuacct.usage'), 'utf8')) / 1e6,
    async one() {
      const plan = sandbox.wrap(plain, { writable: [work], readOnly: [] });
      const command = [...prefix, ...plan.command];
      const confinement = { writable: [], readOnly: [] };
      const launched = await spawner.launch({
        command,
        cwd: plan.cwd,
        env: plan.env,
        stdin: `${plan.line}\n`,
        confinement,
      });
      if ('error' in launched) throw new Error(launched.error);
      let errors = '';
      launched.stderr.on('data', (chunk: Buffer) => {
        errors += chunk.toString();
      });
      launched.stdout.resume();
      const status = await launched.exit;
      if (status?.code !== 0) throw new Error(`${name}: exit ${JSON.stringify(status)}: ${errors}`);
    },
    async stop() {
      await spawner.stop();
      const left = readFileSync(path.join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
      for (const pid of left) writeFileSync(path.join(CPUACCT, 'cgroup.procs'), pid);
      rmdirSync(cgroup);
    },
  };
}

async function batch(variant: Variant, count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next++ < count) await variant.one();
  };
  await Promise.all([worker(), worker()]);
}

export async function run(): Promise<void> {
  if (process.getuid?.() !== 0 || !existsSync(path.join(CPUACCT, 'cpuacct.usage'))) {
    throw new Error(`this bench needs root and cgroups v1's cpuacct at ${CPUACCT}`);
  }
  const dataDir = mkdtempSync('/var/tmp/crewd-bench-sandbox-');
  const work = path.join(dataDir, 'runs', 'bench');
  mkdirSync(work, { recursive: true });
  const cleanups: Array<() => void> = [];
  const variants: Variant[] = [];
  try {
    for (const name of ['on', 'isolated', 'reused']) variants.push(await makeVariant(name, dataDir, work, cleanups));
    for (const variant of variants) await batch(variant, 5);
    const loads: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const variant of variants) {
        const before = variant.usage();
        await batch(variant, BATCH);
        // The stack ends a moment after its sandbox.
        await sleep(300);
        variant.samples.push((variant.usage() - before) / BATCH);
      }
      loads.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0] as string);
    }
    for (const variant of variants) {
      process.stdout.write(`${variant.name}: ${variant.samples.map((ms) => ms.toFixed(1)).join(' ')} ms a batch\n`);
    }
    process.stdout.write(`load average after each round: ${loads.join(' ')}\n`);
    const [on, isolated, reused] = variants.map((variant) => median(variant.samples)) as [number, number, number];
    printFigure('CPU per sandbox, RUNNER_NETWORK=on', on, 'ms');
    printFigure('CPU per sandbox, RUNNER_NETWORK=isolated', isolated, 'ms');
    printFigure("the isolated network's CPU per sandbox", isolated - on, 'ms');
    printFigure('the same in one namespace reused (prototype)', reused - on, 'ms');
  } finally {
    for (const variant of variants) await variant.stop();
    for (const cleanup of cleanups) cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
