import { describe, expect, it } from 'vitest';
import { humanLine } from '../../src/cli/output.js';
import type { StreamEvent } from '../../src/client/index.js';

const event = (seq: number, data: { type: string; data: Record<string, unknown> }): StreamEvent => ({
  seq,
  data,
});

describe('events as lines a person reads', () => {
  it('prints an interrupt’s question, not its checkpoint', () => {
    const checkpoint = 'A'.repeat(4096);
    const interrupted = event(7, {
      type: 'run.interrupted',
      data: { interrupts: [{ id: 'ask-1', value: { question: 'Send this answer?' } }], checkpoint },
    });
    expect(humanLine(interrupted)).toBe('[7] run.interrupted  Send this answer?');
    const completed = event(8, { type: 'run.completed', data: { output: { interrupts: [] }, checkpoint } });
    expect(humanLine(completed)).not.toContain('AAAA');
  });

  it('keeps the lines of a multi-line log message', () => {
    const line = humanLine(event(3, { type: 'log', data: { message: 'Traceback:\n  File "x"', stream: 'stdout' } }));
    expect(line).toBe('[3] log  Traceback:\n      File "x"');
  });
});
