import { setTimeout as sleep } from 'node:timers/promises';
import { packProject } from '../../src/cli/pack.js';
import { type Json, type JsonTarget, jsonRequest } from './json-request.js';

/** Uploads the project folder as the production version of a new deployment; resolves with its id once built. */
export async function deployBundle(target: JsonTarget, name: string, dir: string): Promise<string> {
  const deployment = await jsonRequest(target, 'POST', '/v1/deployments', { name });
  const url = `http://127.0.0.1:${target.port}/v1/deployments/${deployment.id}/versions?environment=production`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/gzip' },
    body: new Uint8Array(await packProject(dir)),
  });
  const version = (await response.json()) as Json;
  if (response.status !== 201) throw new Error(`upload: ${JSON.stringify(version)}`);
  for (;;) {
    const current = await jsonRequest(target, 'GET', `/v1/deployments/${deployment.id}/versions/${version.id}`);
    if (current.status === 'ready') return deployment.id;
    if (current.status === 'failed') throw new Error(`build of ${name} failed: ${current.build_error}`);
    await sleep(50);
  }
}
