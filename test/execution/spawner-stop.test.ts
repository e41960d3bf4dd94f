import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createSpawner } from '../../src/execution/spawner.js';

const request = {
  command: ['true'],
  cwd: '/',
  env: { PATH: process.env.PATH ?? '' },
  stdin: '',
  confinement: { writable: [], readOnly: [] },
};

describe('the runner spawner once stopped', () => {
  it('refuses new runners instead of starting a helper that would keep crewd from exiting', async () => {
    const spawner = createSpawner(pino({ level: 'silent' }));
    spawner.start();
    const first = await spawner.launch(request);
    expect(first).toHaveProperty('pid');
    if (!('error' in first)) await first.exit;
    await spawner.stop();
    expect(await spawner.launch(request)).toEqual({ error: 'crewd is stopping' });
  });
});
