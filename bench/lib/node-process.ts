import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'undici';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface Proc {
  child: ChildProcess;
  port: number;
  base: string;
  /** Where its inspector listens (bench/lib/node-profile.ts profiles it there). */
  inspectorPort: number;
  rssKb(): number;
  collectGarbage(): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A node process with an inspector (for a full GC before RSS is read), ready once `ready` answers. */
export async function startProcess(args: string[], env: Record<string, string>, ready: string): Promise<Proc> {
  const port = await freePort();
  const inspectorPort = await freePort();
  const child = spawn(process.execPath, [`--inspect=127.0.0.1:${inspectorPort}`, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    if (!/Debugger listening|Debugger ending|For help, see|Debugger attached|Waiting for the debugger/.test(text))
      process.stderr.write(text);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}${ready}`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 600) throw new Error(`${args.join(' ')} did not start`);
    await sleep(50);
  }
  return {
    child,
    port,
    base,
    inspectorPort,
    rssKb() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    },
    async collectGarbage() {
      const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as Array<{
        webSocketDebuggerUrl: string;
      }>;
      const socket = new WebSocket(targets[0]?.webSocketDebuggerUrl as string);
      await new Promise((resolve, reject) => {
        socket.onopen = resolve;
        socket.onerror = reject;
      });
      await new Promise<void>((resolve) => {
        socket.onmessage = () => resolve();
        socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
      });
      socket.close();
      await sleep(300);
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** crewd (src/server.ts) as a process of its own on `databaseUrl` and `dataDir`, ready once /readyz answers. */
export function startCrewd(
  databaseUrl: string,
  dataDir: string,
  key: string,
  settings: Record<string, string> = {},
): Promise<Proc> {
  return startProcess(
    ['--import', 'tsx', 'src/server.ts'],
    { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, BOOTSTRAP_API_KEY: key, LOG_LEVEL: 'warn', ...settings },
    '/readyz',
  );
}
