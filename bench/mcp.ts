import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { deployCrew, followRun, now } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';
import { type JsonTarget, jsonRequest } from './lib/json-request.js';
import { startCrewd } from './lib/node-process.js';

/*
 * `npm run bench -- mcp`: a tools/call of a one-step command crew (examples/crews/trivial.mjs) through the official
 * MCP client, against the same run through POST /v1/runs and its event stream to `complete`, on one crewd process
 * on PostgreSQL. MCP_BENCH_CALLS (default 60) of each, alternated, after a warm-up; figure: the medians' ratio
 * (goal at most 1.1).
 */

const KEY = 'bench-mcp-admin-key-0123456789';
const CALLS = Number(process.env.MCP_BENCH_CALLS ?? 60);
const WARM_UP = 5;

async function restRun(target: JsonTarget, deploymentId: string, i: number): Promise<number> {
  const started = now();
  const created = await jsonRequest(target, 'POST', '/v1/runs', { deployment_id: deploymentId, input: { i } });
  let complete = false;
  await followRun(target, created.run_id, (data) => {
    if (data.startsWith('{"type":"complete"')) complete = true;
  });
  if (!complete) throw new Error(`run ${created.run_id} ended without complete`);
  return now() - started;
}

async function mcpCall(client: Client, i: number): Promise<number> {
  const started = now();
  const result = await client.callTool({ name: 'trivial.mjs', arguments: { i } });
  if (result.isError) throw new Error(`tools/call failed: ${JSON.stringify(result.content)}`);
  return now() - started;
}

export async function run(): Promise<void> {
  const database = await createScratchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-bench-mcp-'));
  const server = await startCrewd(database.url, dataDir, KEY, { MAX_CONCURRENT_RUNS: '4' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const target: JsonTarget = { port: server.port, key: KEY, agent };
  const client = new Client({ name: 'crewd-bench', version: '1.0.0' });
  try {
    const deploymentId = await deployCrew(target, 'trivial.mjs');
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', server.base), {
      requestInit: { headers: { authorization: `Bearer ${KEY}` } },
    });
    await client.connect(transport);
    for (let i = 0; i < WARM_UP; i++) {
      await restRun(target, deploymentId, i);
      await mcpCall(client, i);
    }
    const rest: number[] = [];
    const mcp: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      rest.push(await restRun(target, deploymentId, i));
      mcp.push(await mcpCall(client, i));
    }
    printFigure('POST /v1/runs and its stream, median', median(rest), 'ms');
    printFigure('MCP tools/call, median', median(mcp), 'ms');
    printFigure('MCP tools/call ÷ POST /v1/runs and its stream (medians)', median(mcp) / median(rest), '×', {
      op: '<=',
      target: 1.1,
    });
  } finally {
    await client.close().catch(() => {});
    agent.destroy();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await database.drop();
  }
}
