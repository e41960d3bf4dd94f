import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { createRunContext, dataOf, type RunContext, readStream, startRun, waitForRun } from '../runs/helpers.js';
import { explainPostgresOnly } from '../scale/helpers.js';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from './helpers.js';

explainPostgresOnly('bundle versions across instances', 'two instances share one PostgreSQL database');

describe.runIf(usingPostgres())('bundle versions across instances', () => {
  let database: TestDatabase;
  let a: RunContext;
  let b: RunContext;

  beforeAll(async () => {
    database = await createTestDatabase();
    a = await createRunContext({ DATA_DIR: tempDataDir() }, undefined, database);
    b = await createRunContext({ DATA_DIR: tempDataDir() }, undefined, database);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.destroy();
  });

  it('a version uploaded to instance A runs on instance B, built there before its first run', async () => {
    const deploymentId = await createDeployment(a, 'everywhere');
    const crew = `
import json, sys
request = json.loads(sys.stdin.read())
print(json.dumps({"type": "run.completed", "data": {"output": {"echo": request["input"], "prefix": sys.prefix}}}))
`;
    const uploaded = await upload(
      a,
      deploymentId,
      project({ 'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }), 'crew.py': crew }),
      '?environment=production',
    );
    const version = await waitForBuild(a, deploymentId, uploaded.json().id);
    expect(version.status).toBe('ready');

    const run = await startRun(b, deploymentId, { from: 'b' });
    const ended = await waitForRun(b, run.run_id, undefined, 120_000);
    expect(ended.status, JSON.stringify(ended)).toBe('succeeded');
    expect(ended.output.echo).toEqual({ from: 'b' });
    expect(ended.output.prefix).toContain(b.config.dataDir);

    const stream = await readStream(`${b.baseUrl}/v1/runs/${run.run_id}/events`, { headers: { 'last-event-id': '0' } });
    const events = dataOf(stream.messages);
    const types = events.map((event) => event.type);
    expect(types.indexOf('log')).toBeLessThan(types.indexOf('run.started'));
    expect(events).toContainEqual({
      type: 'log',
      data: { message: `building version ${version.id} on this instance before its first run here`, stream: 'stdout' },
    });

    // Built once per instance: the next run on B starts without building.
    const again = await startRun(b, deploymentId);
    await waitForRun(b, again.run_id, undefined, 60_000);
    const second = await readStream(`${b.baseUrl}/v1/runs/${again.run_id}/events`, {
      headers: { 'last-event-id': '0' },
    });
    expect(dataOf(second.messages).filter((event) => event.type === 'log')).toEqual([]);
  });
});
