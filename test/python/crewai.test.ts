import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRunContext,
  dataOf,
  deploy,
  type RunContext,
  readStream,
  startRun,
  waitForRun,
} from '../runs/helpers.js';
import { EXAMPLES, explainWithoutPython, OFFLINE_ENV, testPython, testVenvSettings } from './helpers.js';

explainWithoutPython('a CrewAI crew through the service');

type Event = { type: string; data: Record<string, unknown> };

/** examples/crewai-research, unchanged, run by the crewd Python runner with real crewai and its deterministic LLM. */
describe.runIf(testPython() !== null)('a CrewAI crew through the service', () => {
  let ctx: RunContext;

  beforeAll(async () => {
    ctx = await createRunContext(testVenvSettings());
  });
  afterAll(async () => ctx?.close());

  const crewCommand = (target: string) => [testPython() as string, '-m', 'crewd_runner', '--crew', target];

  async function eventsOf(runId: string): Promise<Event[]> {
    const stream = await readStream(`${ctx.baseUrl}/v1/runs/${runId}/events?last_event_id=0`);
    return dataOf(stream.messages) as unknown as Event[];
  }

  it('runs the crew with its tasks, agents and tools as events, and its result shaped as §9 says', {
    timeout: 180_000,
  }, async () => {
    const { deploymentId } = await deploy(ctx, crewCommand('research.crew:Research'), {
      cwd: path.join(EXAMPLES, 'crewai-research'),
      env: OFFLINE_ENV,
      timeout_seconds: 150,
    });
    const run = await waitForRun(
      ctx,
      (await startRun(ctx, deploymentId, { topic: 'solar batteries' })).run_id,
      undefined,
      150_000,
    );
    expect(run.status, run.error_message).toBe('succeeded');
    expect(run.output).toMatchObject({ raw: expect.any(String) });
    expect(run.output.tasks).toHaveLength(2);
    const events = await eventsOf(run.id);
    const types = new Set(events.map((event) => event.type));
    for (const type of ['run.started', 'task.started', 'task.completed', 'agent.action']) expect(types).toContain(type);
    const started = events.find((event) => event.type === 'task.started');
    expect(started?.data).toMatchObject({
      task: expect.any(String),
      agent: expect.stringContaining('solar batteries'),
    });
  });

  it('fails a crew that raises with the exception, its traceback in the log', { timeout: 120_000 }, async () => {
    const project = path.join(import.meta.dirname, 'fixtures');
    const { deploymentId } = await deploy(ctx, crewCommand('broken:make'), { cwd: project, env: OFFLINE_ENV });
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id, undefined, 100_000);
    expect(run.status).toBe('failed');
    expect(run.error_message).toBe('ValueError: no crew today');
    const logs = (await eventsOf(run.id)).filter((event) => event.type === 'log');
    expect(logs.some((event) => String(event.data.message).includes('Traceback'))).toBe(true);
  });
});
