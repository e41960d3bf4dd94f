import { promises as dns } from 'node:dns';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findNetworkTools } from '../../src/sandbox/network.js';
import { findBwrap } from '../../src/sandbox/probe.js';
import { probeBundle } from '../builds/helpers.js';
import { until } from '../runs/helpers.js';
import { KEY, type SandboxServer, startSandboxServer } from './server.js';

const NETWORK_PROBE = path.resolve(import.meta.dirname, 'fixtures/network-probe.mjs');
/** Where the machine's PostgreSQL listens, as docs/operations.md sets it up. */
const POSTGRES_PORT = 5432;

interface Outcome {
  ok: boolean;
  value?: unknown;
  code?: string;
}

interface NetworkReport {
  interfaces: Record<string, string[]>;
  defaultRoute: boolean;
  connect: Record<string, Outcome>;
  http: Record<string, Outcome>;
  dns: Outcome | null;
}

const canIsolate =
  findBwrap(process.env.PATH ?? '') !== null && 'tools' in findNetworkTools() && process.env.RUNNER_SANDBOX !== 'off';

/** The host's own addresses other than loopback, as `host:port` targets (IPv6 in brackets). */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && !entry.internal && !entry.address.startsWith('fe80:'))
    .map((entry) => (entry?.family === 'IPv6' ? `[${entry.address}]` : (entry?.address as string)));
}

/** A TCP server on every address of the host (`::`, IPv4 too), counting the connections it gets. */
async function listeningEverywhere() {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '::', ipv6Only: false }, resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Whether this process connects to `host:port`: a target the run must not reach is checked to be there first. */
const hostReaches = (target: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(`tcp://${target}`);
    const socket = tcpConnect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port) }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

async function probeRun(
  server: SandboxServer,
  input: Record<string, unknown>,
  deployment?: string,
): Promise<NetworkReport> {
  const { run_id } = await server.startRun(
    deployment ?? (await server.deploy([process.execPath, NETWORK_PROBE])),
    input,
  );
  const run = await server.waitForRun(run_id);
  expect(run.status, JSON.stringify(run)).toBe('succeeded');
  return run.output as NetworkReport;
}

const portOf = (server: SandboxServer) => Number(new URL(server.server.baseUrl).port);

describe.runIf(canIsolate)('the default network, isolated (a real crewd, RUNNER_NETWORK unset)', () => {
  let server: SandboxServer;
  let listener: Awaited<ReturnType<typeof listeningEverywhere>>;
  beforeAll(async () => {
    listener = await listeningEverywhere();
    // HOST=0.0.0.0, crewd's default: its port is on every address of the host.
    server = await startSandboxServer({ HOST: '0.0.0.0' });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await listener?.close();
  });

  it('says at start which network runners get', () => {
    expect(server.server.output()).toMatch(/"network":"isolated".*runners run in a bubblewrap sandbox/);
  });

  it("reaches none of the host's addresses: not PostgreSQL, not crewd, not a server on every address", async () => {
    const hosts = ['127.0.0.1', '[::1]', ...hostAddresses()];
    const ipv4 = hosts.filter((host) => !host.startsWith('['));
    // crewd listens on IPv4 (0.0.0.0); PostgreSQL where the machine has it, 127.0.0.1 here.
    const reached = [
      ...hosts.map((host) => `${host}:${listener.port}`),
      ...ipv4.map((host) => `${host}:${portOf(server)}`),
    ];
    for (const target of reached) expect(await hostReaches(target), target).toBe(true);
    // slirp4netns's gateway and DNS addresses lead to the host's loopback unless turned off (they are).
    const aliases = ['10.0.2.2', '10.0.2.3'].flatMap((host) =>
      [listener.port, portOf(server)].map((port) => `${host}:${port}`),
    );
    const targets = [...reached, ...ipv4.map((host) => `${host}:${POSTGRES_PORT}`), ...aliases];
    const report = await probeRun(server, { connect: targets });
    for (const target of targets) expect(report.connect[target], target).toMatchObject({ ok: false });
    // Only this process's own connections above got to the server.
    expect(listener.connections()).toBe(hosts.length);
  });

  it('gives a run that takes a spare sandbox the same network, made with the spare', async () => {
    const deployment = await server.deploy([process.execPath, NETWORK_PROBE]);
    const target = `127.0.0.1:${listener.port}`;
    await probeRun(server, {}, deployment);
    // Once a run of its shape ended, a spare of that shape waits for the next one.
    const runs = path.join(server.dataDir, 'runs');
    await until(() => readdirSync(runs).some((name) => name.startsWith('.spare-')));
    const report = await probeRun(server, { connect: [target] }, deployment);
    expect(Object.keys(report.interfaces).filter((name) => name !== 'lo')).toHaveLength(1);
    expect(report.defaultRoute).toBe(true);
    expect(report.connect[target]).toMatchObject({ ok: false });
  });

  it('is not a loopback client of /metrics', async () => {
    const urls = ['127.0.0.1', ...hostAddresses()].map((host) => `http://${host}:${portOf(server)}/metrics`);
    const report = await probeRun(server, { http: urls });
    for (const url of urls) expect(report.http[url], url).toMatchObject({ ok: false });
  });

  it('has an interface and a default route of its own, and its DNS queries reach the resolver the host uses', async () => {
    const host = await dns.resolve4('crewd-network-test.invalid').then(
      () => 'answered',
      (error: NodeJS.ErrnoException) => error.code,
    );
    const report = await probeRun(server, { dns: 'crewd-network-test.invalid' });
    expect(Object.keys(report.interfaces).filter((name) => name !== 'lo')).toHaveLength(1);
    expect(report.defaultRoute).toBe(true);
    // No internet here to prove it with: the run gets the answer the host gets (ENOTFOUND: a resolver answered).
    expect(report.dns?.code ?? 'answered').toBe(host);
  });

  it('puts build steps in the same network', async () => {
    const deployment = await server.call('POST', '/v1/deployments', { name: 'network-build' });
    const bundle = probeBundle({ port: listener.port });
    const response = await fetch(`${server.server.baseUrl}/v1/deployments/${deployment.id}/versions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/gzip' },
      body: bundle,
    });
    const { id } = (await response.json()) as { id: string };
    const version = await until(async () => {
      const found = await server.call('GET', `/v1/deployments/${deployment.id}/versions/${id}`);
      return found.status !== 'building' ? found : null;
    }, 120_000);
    expect(version.status, String(version.build_error)).toBe('ready');
    const probe = JSON.parse(readFileSync(path.join(server.dataDir, 'versions', id, 'project', 'probe.json'), 'utf8'));
    expect(probe.connect).toEqual({ ok: false, error: 'ConnectionRefusedError' });
  }, 150_000);
});

describe.runIf(canIsolate)('RUNNER_NETWORK=on and off', () => {
  let listener: Awaited<ReturnType<typeof listeningEverywhere>>;
  beforeAll(async () => {
    listener = await listeningEverywhere();
  });
  afterAll(async () => listener?.close());

  it("on: the host's network, its loopback included", async () => {
    const server = await startSandboxServer({ RUNNER_NETWORK: 'on' });
    try {
      expect(server.server.output()).toMatch(/"network":"on".*runners run in a bubblewrap sandbox/);
      const target = `127.0.0.1:${listener.port}`;
      const report = await probeRun(server, { connect: [target] });
      expect(report.connect[target]).toEqual({ ok: true, value: true });
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('off: loopback only, its own: crewd is not on it', async () => {
    const server = await startSandboxServer({ RUNNER_NETWORK: 'off' });
    try {
      const targets = hostAddresses().map((host) => `${host}:${listener.port}`);
      const crewd = `127.0.0.1:${portOf(server)}`;
      const report = await probeRun(server, { connect: [...targets, crewd] });
      expect(Object.keys(report.interfaces)).toEqual(['lo']);
      expect(report.defaultRoute).toBe(false);
      for (const target of targets) expect(report.connect[target], target).toMatchObject({ ok: false });
      expect(report.connect[crewd]).toEqual({ ok: false, code: 'ECONNREFUSED' });
    } finally {
      await server.stop();
    }
  }, 60_000);
});
