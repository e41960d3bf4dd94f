import { WebSocket } from 'undici';

/*
 * The CPU of a Node.js process of the bench (its inspector's sampling profiler) while `during` runs, as ms of
 * its main thread by what the sampled code is: a folder of crewd's src/, a package of node_modules, Node.js's own
 * code, the garbage collector. Idle samples are left out.
 */

interface ProfileNode {
  id: number;
  callFrame: { url: string; functionName: string };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** What a sampled frame is, from its script's address. */
function partOf(frame: ProfileNode['callFrame']): string | null {
  const { url, functionName } = frame;
  if (functionName === '(idle)') return null;
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)') return 'native (I/O syscalls, libuv, V8 outside JS)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `package ${pkg[1]}`;
  const src = /\/src\/([^/]+)(\/)?/.exec(url);
  if (src) return `src/${src[2] ? src[1] : '(top files)'}`;
  if (url.startsWith('node:')) return `Node.js ${url.replace(/^node:(internal\/)?/, '')}`;
  if (url === '') return `V8 builtins and natives (${functionName || 'anonymous'})`;
  return 'other';
}

/** A frame's part, and for Node.js's and V8's own code the nearest caller of crewd or a package, which asked. */
function partWithCaller(id: number, byId: Map<number, ProfileNode>, parents: Map<number, number>): string | null {
  const node = byId.get(id);
  const part = node ? partOf(node.callFrame) : null;
  if (!part || part.startsWith('src/') || part.startsWith('package ') || part === 'garbage collector') return part;
  for (let up = parents.get(id); up !== undefined; up = parents.get(up)) {
    const caller = partOf((byId.get(up) as ProfileNode).callFrame);
    if (caller?.startsWith('src/') || caller?.startsWith('package ')) return `${part} from ${caller}`;
  }
  return part;
}

function aggregate(profile: Profile): Map<string, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const ms = new Map<string, number>();
  profile.samples.forEach((id, index) => {
    const part = partWithCaller(id, byId, parents);
    if (part) ms.set(part, (ms.get(part) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000);
  });
  return ms;
}

/** Profiles the process whose inspector listens on `inspectorPort` while `during` runs; ms by part. */
export async function profileDuring(inspectorPort: number, during: () => Promise<void>): Promise<Map<string, number>> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string;
  }>;
  const socket = new WebSocket(targets[0]?.webSocketDebuggerUrl as string);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let next = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  };
  const call = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      next += 1;
      waiting.set(next, resolve);
      socket.send(JSON.stringify({ id: next, method, params }));
    });
  try {
    await call('Profiler.enable');
    await call('Profiler.setSamplingInterval', { interval: 500 });
    await call('Profiler.start');
    await during();
    const { profile } = (await call('Profiler.stop')) as { profile: Profile };
    return aggregate(profile);
  } finally {
    socket.close();
  }
}
