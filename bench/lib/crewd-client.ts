import http from 'node:http';
import path from 'node:path';
import { SseParser } from '../../src/client/sse.js';
import { type JsonTarget, jsonRequest } from './json-request.js';

/** The example and test crews the benches deploy. */
export const CREWS = path.resolve(import.meta.dirname, '../../examples/crews');

/** Wall-clock milliseconds with sub-ms precision, comparable with the crews' own stamps. */
export const now = () => performance.timeOrigin + performance.now();

/** Deploys `examples/crews/<file>` as a new deployment's production version; resolves with its id. */
export async function deployCrew(target: JsonTarget, file: string): Promise<string> {
  const deployment = await jsonRequest(target, 'POST', '/v1/deployments', { name: file });
  await jsonRequest(target, 'POST', `/v1/deployments/${deployment.id}/versions`, {
    command: [process.execPath, path.join(CREWS, file)],
    environment: 'production',
  });
  return deployment.id;
}

/**
 * Follows a run's event stream until it ends; `onData` sees each `data:` payload (as text) with
 * the time it arrived. The client's incremental parser, so a thousand of these in one process stay cheap.
 */
export function followRun(
  target: JsonTarget,
  runId: string,
  onData: (data: string, arrivedAt: number) => void,
  options: { agent?: http.Agent; onOpen?: () => void } = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port: target.port,
        path: `/v1/runs/${runId}/events`,
        agent: options.agent ?? target.agent,
        headers: { authorization: `Bearer ${target.key}`, accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`stream ${runId}: ${res.statusCode}`));
          return;
        }
        options.onOpen?.();
        let arrivedAt = 0;
        const parser = new SseParser((message) => {
          if (message.data !== undefined) onData(message.data, arrivedAt);
        });
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          arrivedAt = now();
          parser.push(chunk);
        });
        res.on('end', () => resolve());
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}
