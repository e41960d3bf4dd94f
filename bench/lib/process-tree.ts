import { readdirSync, readFileSync } from 'node:fs';

/** A process's parent from /proc/<pid>/stat (the field after the command, which may hold spaces and parentheses). */
export function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null; // ended meanwhile
  }
}

/** `root` and every process below it, from the parents /proc lists now. */
export function treePids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const parent = parentOf(Number(name));
    if (parent === null) continue;
    children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    found.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

export interface TreeMemory {
  processes: number;
  /** Resident pages summed over the processes: pages they share count once per process. */
  rssMb: number;
  /** Proportional set size summed: a page shared by n processes counts 1/n in each, so once in all. */
  pssMb: number;
  /** PSS by the part `classify` names, when given. */
  pssMbByPart: Map<string, number>;
}

/** The memory of `root`'s process tree now, read from each process's smaps_rollup. */
export function treeMemory(root: number, classify?: (pid: number) => string): TreeMemory {
  const pssMbByPart = new Map<string, number>();
  let rssKb = 0;
  let pssKb = 0;
  let processes = 0;
  for (const pid of treePids(root)) {
    let rollup: string;
    try {
      rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    } catch {
      continue; // ended meanwhile, or a kernel thread
    }
    processes += 1;
    rssKb += Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    const pss = Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    pssKb += pss;
    if (classify) {
      const part = classify(pid);
      pssMbByPart.set(part, (pssMbByPart.get(part) ?? 0) + pss / 1024);
    }
  }
  return { processes, rssMb: rssKb / 1024, pssMb: pssKb / 1024, pssMbByPart };
}
