import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'vitest';
import { EXAMPLES, OFFLINE_ENV, testPython, testVenvSettings } from '../python/helpers.js';
import { createRunContext, deploy, type RunContext } from '../runs/helpers.js';

const SDK_SCRIPTS = path.join(import.meta.dirname, 'sdk');

/** The app listening on a real port, with examples/langgraph-agent deployed as deployment `agent` (production). */
export async function startWithAgent(): Promise<{ ctx: RunContext; deploymentId: string; url: string }> {
  const ctx = await createRunContext(testVenvSettings());
  const python = testPython() as string;
  const { deploymentId } = await deploy(ctx, [python, '-m', 'crewd_runner', '--graph', 'src/agent/graph.py:graph'], {
    cwd: path.join(EXAMPLES, 'langgraph-agent'),
    env: OFFLINE_ENV,
    timeout_seconds: 120,
  });
  const renamed = await ctx.call('PATCH', `/v1/deployments/${deploymentId}`, { body: { name: 'agent' } });
  expect(renamed.statusCode, renamed.body).toBe(200);
  return { ctx, deploymentId, url: `${ctx.baseUrl}/langgraph` };
}

/**
 * Runs one of test/langgraph-api/sdk/*.py with the test environment's python (the real `langgraph-sdk` from
 * PyPI): it fails when the SDK raises or a value is not of the SDK's declared shape; its last line is its result.
 */
export async function runSdkScript(
  script: string,
  env: { url: string; key: string } & Record<string, string>,
): Promise<Record<string, unknown>> {
  const python = testPython() as string;
  const { url, key, ...rest } = env;
  const child = spawn(python, [path.join(SDK_SCRIPTS, script)], {
    env: { PATH: process.env.PATH ?? '', CREWD_LANGGRAPH_URL: url, CREWD_API_KEY: key, ...rest },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`${script} exited with ${code}:\n${stderr}\n${stdout}`);
  const last = stdout.trim().split('\n').at(-1) ?? '{}';
  return JSON.parse(last) as Record<string, unknown>;
}
