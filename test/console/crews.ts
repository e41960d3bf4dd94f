import type { RunContext } from '../runs/helpers.js';

/** A crew that stops at an interrupt, and on resume answers with what it got (input and resume value). */
export const INTERRUPTING_CREW = `
let text = '';
process.stdin.on('data', (chunk) => { text += chunk; });
process.stdin.on('end', () => {
  const { command, input } = JSON.parse(text);
  const out = (type, data) => process.stdout.write(JSON.stringify({ type, data }) + '\\n');
  if (!command) out('run.interrupted', { interrupts: [{ id: 'approve', value: { question: 'Send the report?' } }] });
  else out('run.completed', { output: { answer: command.resume, input } });
});
`;

/** A crew given as its source: `node -e`, so it needs no file the runner's sandbox would have to show it. */
export const inline = (source: string) => [process.execPath, '-e', source];

/** Calls the API as the admin key and fails on an error answer. */
export async function post(service: RunContext, url: string, body: unknown, key?: string) {
  const response = await service.call('POST', url, { body, key });
  if (response.statusCode >= 300) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  return response.json();
}

/** A deployment named `name` running `command` in production. */
export async function deployNamed(service: RunContext, name: string, command: string[]): Promise<string> {
  const deployment = await post(service, '/v1/deployments', { name });
  await post(service, `/v1/deployments/${deployment.id}/versions`, { command, environment: 'production' });
  return deployment.id;
}
