import { describe, expect, it } from 'vitest';
import { humanLine, runEnd } from '../../src/cli/output.js';
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

  it('tells a run that failed for want of a key how crewd gives a crew one: a deployment variable', () => {
    const failed = (error: string): StreamEvent => ({ seq: 9, data: { type: 'complete', status: 'failed', error } });
    expect(runEnd(failed('ValueError: OPENAI_API_KEY is required'), 'mycrew')).toEqual({
      line:
        'run failed: ValueError: OPENAI_API_KEY is required\n  (give the crew OPENAI_API_KEY as a deployment variable: ' +
        'crewd variables set mycrew OPENAI_API_KEY=…; runs read it from the next one on)',
      exitCode: 1,
    });
    const langchain =
      'OpenAIError: The api_key client option must be set either by passing api_key to the client or by setting the ' +
      'OPENAI_API_KEY environment variable';
    expect(runEnd(failed(langchain)).line).toContain('crewd variables set <deployment> OPENAI_API_KEY=…');
    expect(runEnd(failed('ValueError: cannot handle this')).line).toBe('run failed: ValueError: cannot handle this');
    expect(runEnd(failed('KeyError: SOME_KEY')).line).toBe('run failed: KeyError: SOME_KEY');
  });
});
