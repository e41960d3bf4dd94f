import { readFileSync } from 'node:fs';
import pg from 'pg';
import { parentOf, treePids } from './process-tree.js';

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** A process's CPU in ms: its own (user + system), and that of the ended children it waited for. */
function cpuMs(pid: number): { own: number; children: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 to 17 of stat (utime, stime, cutime, cstime) are 12 to 15 after the command.
    const ms = (first: number) => ((Number(fields[first]) + Number(fields[first + 1])) * 1000) / TICKS_PER_SECOND;
    return { own: ms(11), children: ms(13) };
  } catch {
    return null; // ended meanwhile
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

const PYTHON = 'fork servers and forked runs (Python)';

/** Which part of the service a process of crewd's tree is. */
export const SERVICE = 'crewd service (Node.js)';

export function partOf(pid: number, root: number): string {
  if (pid === root) return SERVICE;
  const command = commandOf(pid);
  if (command.includes('crewd_runner')) return PYTHON;
  if (/\bbwrap\b/.test(command)) return 'sandboxes (bwrap)';
  if (/^(ba|da)?sh /.test(command)) return 'spare sandboxes (a shell waiting for its run)';
  if (command.includes('node')) return 'helpers (Node.js)';
  return 'other processes';
}

/** `partOf`, with the fork servers told apart from their children (forked ahead, or running a run). */
export function processPartOf(pid: number, root: number): string {
  const part = partOf(pid, root);
  if (part !== PYTHON) return part;
  return commandOf(parentOf(pid) ?? 0).includes('crewd_runner')
    ? 'forked children (ahead of a run, or running one)'
    : 'fork servers';
}

/** CPU ms of `root`'s whole tree: each process's own and its ended children's. */
export function treeCpuMs(root: number): number {
  return treePids(root).reduce((sum, pid) => {
    const cpu = cpuMs(pid);
    return sum + (cpu ? cpu.own + cpu.children : 0);
  }, 0);
}

/** CPU ms by part: crewd's process tree and the PostgreSQL backends serving `databaseUrl`'s database. */
export type CpuByPart = Map<string, number>;

/** The pids of the backends connected to `databaseUrl`'s database (the bench's scratch one: crewd's only). */
async function backendPids(databaseUrl: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows = await client.query<{ pid: number }>(
      'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    );
    return rows.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

export async function cpuByPart(root: number, databaseUrl: string): Promise<CpuByPart> {
  const parts: CpuByPart = new Map();
  const add = (part: string, ms: number | undefined) => parts.set(part, (parts.get(part) ?? 0) + (ms ?? 0));
  for (const pid of treePids(root)) {
    const cpu = cpuMs(pid);
    const part = partOf(pid, root);
    if (part !== PYTHON) {
      add(part, cpu ? cpu.own + cpu.children : 0);
    } else if (commandOf(pid).includes('crewd_runner.worker')) {
      add('workers (RUN_ISOLATION=deployment: accept, the runs in threads)', cpu ? cpu.own + cpu.children : 0);
    } else if (commandOf(parentOf(pid) ?? 0).includes('crewd_runner')) {
      add('forked children still there (spares warming up, runs going on)', cpu ? cpu.own + cpu.children : 0);
    } else {
      add('fork servers themselves (accept, fork, reap)', cpu?.own);
      add('forked children that ended (the runs: fork, run, exit)', cpu?.children);
    }
  }
  for (const pid of await backendPids(databaseUrl)) add('PostgreSQL backends', cpuMs(pid)?.own);
  return parts;
}

/** What each part spent between two readings, per run; parts whose processes ended in between may read low. */
export function perRun(before: CpuByPart, after: CpuByPart, runs: number): Map<string, number> {
  const spent = new Map<string, number>();
  for (const [part, ms] of after) spent.set(part, Math.max(0, ms - (before.get(part) ?? 0)) / runs);
  return spent;
}
