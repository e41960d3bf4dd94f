import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBubblewrapSandbox } from '../../src/sandbox/bubblewrap.js';
import { findNetworkTools, type NetworkSetup } from '../../src/sandbox/network.js';
import { findBwrap } from '../../src/sandbox/probe.js';
import type { RunnerNetwork } from '../../src/sandbox/types.js';
import { until } from '../runs/helpers.js';

/*
 * The isolated network's set-up itself (src/sandbox/network.ts), on processes spawned as crewd's
 * launcher spawns them: the stack starts beside bwrap, the process waits for it, and it goes with
 * the sandbox. The network's walls as a run sees them through crewd are in network.test.ts.
 */

const bwrapPath = findBwrap(process.env.PATH ?? '');
const found = findNetworkTools();
/** `nobody`'s uid and gid on Debian and Ubuntu. */
const NOBODY = 65534;
const canIsolate = bwrapPath !== null && 'tools' in found && process.env.RUNNER_SANDBOX !== 'off';

interface Started {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  errors(): string;
  /** Resolves with the exit code. */
  exit: Promise<number | null>;
}

/** The processes in a process group, each as its argv, as the host sees them. */
function groupMembers(pgid: number): string[][] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        // After the command's name in parentheses: state, ppid, pgrp.
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) return [];
        return [readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)];
      } catch {
        return [];
      }
    });
}

/** The host's IPv4 addresses other than loopback. */
const hostAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)
    .map((entry) => entry?.address as string);

/** Connects to each target and prints what came of it as JSON: { "host:port": "connected" | error code }. */
const CONNECT = `
const net = require('node:net');
const targets = JSON.parse(process.argv[1]);
Promise.all(targets.map((target) => new Promise((resolve) => {
  const [host, port] = target.split(':');
  const socket = net.connect({ host, port: Number(port) });
  socket.setTimeout(3000, () => { socket.destroy(); resolve([target, 'TIMEOUT']); });
  socket.once('connect', () => { socket.destroy(); resolve([target, 'connected']); });
  socket.once('error', (error) => resolve([target, error.code]));
}))).then((results) => console.log(JSON.stringify(Object.fromEntries(results))));
`;

/**
 * Listens on every address of its network and reaches itself at its stack's address, then says so
 * with the port; it counts its connections until its input ends.
 */
const LISTEN = `
const net = require('node:net');
let connections = 0;
const server = net.createServer((socket) => { connections += 1; socket.destroy(); });
server.listen(0, '0.0.0.0', () => {
  const port = server.address().port;
  net.connect({ host: '10.0.2.100', port }).once('connect', function () {
    this.destroy();
    console.log('listening ' + port);
  });
});
process.stdin.resume();
process.stdin.on('end', () => { console.log('connections ' + connections); process.exit(0); });
`;

describe.runIf(canIsolate)('the isolated network, set up beside the sandbox (RUNNER_NETWORK=isolated)', () => {
  let dataDir: string;
  let work: string;
  let setup: NetworkSetup;
  beforeAll(() => {
    dataDir = mkdtempSync('/var/tmp/crewd-network-setup-');
    work = path.join(dataDir, 'runs', 'run_network_setup');
    mkdirSync(work, { recursive: true });
    setup = { tools: (found as Extract<typeof found, { tools: unknown }>).tools };
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  /** Starts `command` in a fresh isolated sandbox, in a process group of its own, with `stdin` after the line. */
  function start(
    command: string[],
    stdin: string | null,
    networkSetup: NetworkSetup = setup,
    network: RunnerNetwork = 'isolated',
    user: { uid?: number; gid?: number; folder?: string; dataDir?: string } = {},
  ): Started {
    const folder = user.folder ?? work;
    const sandbox = createBubblewrapSandbox({
      bwrapPath: bwrapPath as string,
      network,
      networkSetup,
      dataDir: user.dataDir ?? dataDir,
    });
    const plan = sandbox.wrap(
      { command, cwd: folder, env: { PATH: '/usr/bin:/bin' } },
      { writable: [folder], readOnly: [] },
    );
    const [program = '', ...args] = plan.command;
    const ids = { uid: user.uid, gid: user.gid };
    const child = spawn(program, args, { cwd: plan.cwd, env: plan.env, detached: true, stdio: 'pipe', ...ids });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exit = new Promise<number | null>((resolve) => child.once('close', resolve));
    child.stdin.on('error', () => {});
    child.stdin.write(`${plan.line}\n`);
    if (stdin !== null) child.stdin.end(stdin);
    return { child, output: () => stdout, errors: () => stderr, exit };
  }

  it("starts the process with its network up, and without the descriptor it waited on (a fresh sandbox's first moment)", async () => {
    const command = ['/bin/sh', '-c', 'cat /proc/net/route; echo fds; ls /proc/$$/fd'];
    const run = start(command, '');
    const hostNetwork = start(command, '', setup, 'on');
    expect(await run.exit, run.errors()).toBe(0);
    expect(await hostNetwork.exit, hostNetwork.errors()).toBe(0);
    const [routes = '', fds = ''] = run.output().split('fds\n');
    // The stack's interface, with the default route through it, is there before the process's first instruction.
    const defaults = routes
      .split('\n')
      .slice(1)
      .filter((line) => line.split('\t')[1] === '00000000');
    expect(defaults.map((line) => line.split('\t')[0])).toEqual(['tap0']);
    // The same descriptors as in a sandbox without the set-up (this test's runner may hand down one of its own).
    expect(fds).toBe(hostNetwork.output().split('fds\n')[1]);
  });

  it('keeps the routes it set: the process cannot remove them, nor reach the addresses they close', async () => {
    const blocked = ['169.254.169.254', ...hostAddresses()];
    const script = [
      'ip route del unreachable 169.254.0.0/16',
      'ip route flush table main',
      'ip link set tap0 down',
      'echo routes',
      'cat /proc/net/route',
    ].join('; ');
    const run = start(
      [
        '/bin/sh',
        '-c',
        `${script}; exec "$0" -e "$1" "$2"`,
        process.execPath,
        CONNECT,
        JSON.stringify(blocked.map((host) => `${host}:80`)),
      ],
      '',
    );
    expect(await run.exit, run.errors()).toBe(0);
    const lines = (run.output().split('routes\n')[1] ?? '').trim().split('\n');
    const outcomes = lines.pop() ?? '{}';
    const routes = lines.join('\n');
    expect(run.errors()).toMatch(/Operation not permitted/);
    // 169.254.0.0/16, as the kernel lists it: destination and mask in hex, little-endian.
    expect(routes).toMatch(/\t0000FEA9\t.*\t0000FFFF\t/);
    expect(routes.split('\n').some((line) => line.startsWith('tap0\t00000000\t'))).toBe(true);
    // Turned away in the sandbox by its own routes, not by the host or the stack.
    expect(Object.values(JSON.parse(outcomes))).toEqual(blocked.map(() => 'EHOSTUNREACH'));
  });

  // The image runs crewd as `node`: bwrap run by a user other than root makes its user namespaces otherwise.
  it.runIf(process.getuid?.() === 0)('sets the network up for crewd run by a user other than root', async () => {
    const base = mkdtempSync('/var/tmp/crewd-network-user-');
    try {
      chmodSync(base, 0o755);
      const folder = path.join(base, 'runs', 'run_network_user');
      mkdirSync(folder, { recursive: true });
      chownSync(folder, NOBODY, NOBODY);
      const user = { uid: NOBODY, gid: NOBODY, folder, dataDir: base };
      const run = start(['/bin/sh', '-c', 'cat /proc/net/route'], '', setup, 'isolated', user);
      expect(await run.exit, run.errors()).toBe(0);
      const routes = run.output().split('\n');
      expect(routes.some((line) => line.startsWith('tap0\t00000000\t'))).toBe(true);
      expect(routes.some((line) => /\t0000FEA9\t.*\t0000FFFF\t/.test(line))).toBe(true);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it("ends the stack with the sandbox: nothing of the run's group is left once it exited", async () => {
    const run = start(['/bin/sh', '-c', 'echo up; read -r _'], null);
    await until(() => run.output().includes('up'));
    const pgid = run.child.pid as number;
    // While the sandbox runs, its stack is in its group (crewd ends the group to cancel a run).
    expect(groupMembers(pgid).some(([program]) => program?.endsWith('slirp4netns'))).toBe(true);
    run.child.stdin.end('\n');
    expect(await run.exit, run.errors()).toBe(0);
    await until(() => groupMembers(pgid).length === 0);
  });

  it('fails the start, saying why, when the stack does not start, and the process never runs', async () => {
    const marker = path.join(work, 'ran');
    const broken = { ...setup, tools: { ...setup.tools, slirp4netns: '/bin/false' } };
    const run = start(['/bin/sh', '-c', `touch ${marker}`], '', broken);
    expect(await run.exit).toBe(125);
    expect(run.errors()).toContain("the run's isolated network could not be set up: slirp4netns did not start");
    expect(existsSync(marker)).toBe(false);
  });

  it('fails the start, saying why, when the routes cannot be set, and the process never runs', async () => {
    const marker = path.join(work, 'ran-unrouted');
    const broken = { ...setup, tools: { ...setup.tools, ip: '/bin/false' } };
    const run = start(['/bin/sh', '-c', `touch ${marker}`], '', broken);
    expect(await run.exit).toBe(125);
    expect(run.errors()).toContain("the run's isolated network could not be set up: ip could not set its routes");
    expect(existsSync(marker)).toBe(false);
  });

  it("reaches no server of another sandbox: not at the stack's addresses, its loopback or the host's", async () => {
    const server = start([process.execPath, '-e', LISTEN], null);
    await until(() => /listening \d+/.test(server.output()));
    const port = /listening (\d+)/.exec(server.output())?.[1];
    try {
      // Every sandbox's stack gives it the same addresses (10.0.2.100, gateway 10.0.2.2): each leads to its own.
      const hosts = ['10.0.2.100', '10.0.2.2', '10.0.2.3', '127.0.0.1', ...hostAddresses()];
      const targets = hosts.map((host) => `${host}:${port}`);
      const client = start([process.execPath, '-e', CONNECT, JSON.stringify(targets)], '');
      expect(await client.exit, client.errors()).toBe(0);
      const outcomes = JSON.parse(client.output()) as Record<string, string>;
      for (const target of targets) expect(outcomes[target], target).not.toBe('connected');
    } finally {
      server.child.stdin.end();
    }
    expect(await server.exit, server.errors()).toBe(0);
    // Its own connection only.
    expect(server.output()).toContain('connections 1');
  });
});
