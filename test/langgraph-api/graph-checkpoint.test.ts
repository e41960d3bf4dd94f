import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkpointSource, liveNext, nextNodes } from '../../src/langgraph-api/graph-checkpoint.js';
import { unpack } from '../../src/langgraph-api/msgpack.js';
import { explainWithoutPython, RUNNER, testPython } from '../python/helpers.js';

explainWithoutPython('LangGraph checkpoints read by the LangGraph API');

interface Dumped {
  paused: unknown;
  paused_next: string[];
  ended: unknown;
  ended_next: string[];
  kinds: { type: string; data: string };
}

describe.runIf(testPython() !== null)('LangGraph checkpoints read by the LangGraph API', () => {
  let dumped: Dumped;

  beforeAll(async () => {
    // The real runner's dump of the real token graph, stopped at its interrupt and then ended.
    const script = path.join(import.meta.dirname, 'sdk/checkpoints.py');
    const { stdout } = await promisify(execFile)(testPython() as string, [script], {
      env: { PATH: process.env.PATH ?? '', PYTHONPATH: RUNNER, PROJECTS: path.join(RUNNER, 'tests/projects') },
      maxBuffer: 16 * 1024 * 1024,
    });
    dumped = JSON.parse(stdout) as Dumped;
  }, 60_000);

  it("names the nodes LangGraph's own get_state names next", () => {
    expect(dumped.paused_next).toEqual(['review']);
    expect(nextNodes(dumped.paused)).toEqual(dumped.paused_next);
    expect(dumped.ended_next).toEqual([]);
    expect(nextNodes(dumped.ended)).toEqual([]);
  });

  it("reads LangGraph's own source and step of a checkpoint, and the runner's recorded live next", () => {
    expect(checkpointSource(dumped.paused)).toEqual({ source: 'loop', step: expect.any(Number) });
    expect(checkpointSource(null)).toBeNull();
    expect(liveNext({ format: 'crewd.langgraph.v1', checkpoints: [], next: ['review'] })).toEqual(['review']);
    expect(liveNext(dumped.paused)).toBeNull();
  });

  it('answers null for what is not a checkpoint the runner wrote, or not readable', () => {
    expect(nextNodes(null)).toBeNull();
    expect(nextNodes({ format: 'other', checkpoints: [] })).toBeNull();
    const broken = {
      format: 'crewd.langgraph.v1',
      checkpoints: [{ ns: '', checkpoint: { type: 'msgpack', data: 'wQ==' } }],
    };
    expect(nextNodes(broken)).toBeNull();
  });

  it('reads each MessagePack kind JsonPlusSerializer writes, extensions as their code only', () => {
    expect(dumped.kinds.type).toBe('msgpack');
    const value = unpack(Buffer.from(dumped.kinds.data, 'base64')) as Record<string, unknown>;
    expect(value).toMatchObject({
      small: 1,
      negative: -5,
      large: 2 ** 40,
      float: 1.5,
      text: 'x'.repeat(40),
      list: [1, 'two'],
      none: null,
      yes: true,
    });
    expect(value.message).toEqual({ ext: expect.any(Number) });
    expect(value.when).toEqual({ ext: expect.any(Number) });
    expect(() => unpack(Uint8Array.of(0xc1))).toThrow('msgpack: byte 0xc1 starts no value');
    expect(() => unpack(Uint8Array.of(0xa3, 0x61))).toThrow('msgpack: the data ends inside a value');
  });
});
