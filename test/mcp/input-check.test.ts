import { describe, expect, it } from 'vitest';
import { argumentsProblem } from '../../src/mcp/input-check.js';

/** What crewd checks of a tool call's arguments against the tool's input schema, which a bundle's author wrote. */
describe("a tool call's arguments against its input schema", () => {
  it('checks types and required fields', () => {
    const schema = { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] };
    expect(argumentsProblem('ask', schema, { question: 'why?' })).toBeNull();
    expect(argumentsProblem('ask', schema, { question: 42 })).toMatch(/^Input validation error: .*question/);
    expect(argumentsProblem('ask', schema, {})).toMatch(/question/);
  });

  it("never runs the schema's regular expressions: a backtracking pattern would hold the service's event loop", () => {
    // A pattern such as ^(a+)+$ against 'aaaa…b' takes exponential time in Node's engine; the runner checks patterns.
    const schema = {
      type: 'object',
      properties: { code: { type: 'string', pattern: '^x$' } },
      patternProperties: { '^(a+)+$': { type: 'number' } },
    };
    expect(argumentsProblem('code', schema, { code: 'y', aaaa: 'not a number' })).toBeNull();
    expect(argumentsProblem('code', schema, { code: 5 })).toMatch(/code/);
  });

  it('keeps a property named like a keyword, and data that holds such a name, as they are', () => {
    const schema = {
      type: 'object',
      properties: { pattern: { type: 'string' }, mode: { enum: [{ pattern: 'kept' }] } },
      required: ['pattern'],
    };
    expect(argumentsProblem('named', schema, { pattern: 'p', mode: { pattern: 'kept' } })).toBeNull();
    expect(argumentsProblem('named', schema, { pattern: 5 })).toMatch(/pattern/);
    expect(argumentsProblem('named', schema, { pattern: 'p', mode: { pattern: 'other' } })).toMatch(/mode/);
  });
});
