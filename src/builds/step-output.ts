import type { Readable } from 'node:stream';
import { LineSplitter } from '../execution/line-splitter.js';
import { RUN_LIMITS } from '../run-limits.js';

/**
 * Hands a build step's output to `take` line by line, with lines capped as a run's are (RUN_LIMITS):
 * a longer line is only counted past the cap, and comes as its start and its length, so that no
 * output of a step can exhaust crewd's memory. Resolves when the stream ends.
 */
export function readCappedLines(input: Readable, take: (line: string) => void): Promise<void> {
  const lines = new LineSplitter(RUN_LIMITS.maxLineBytes, RUN_LIMITS.truncatedHeadBytes, {
    line: take,
    longLine: ({ head, bytes }) =>
      take(`${head}… (line truncated: ${bytes} bytes exceed the limit of ${RUN_LIMITS.maxLineBytes} bytes per line)`),
  });
  input.on('data', (chunk: Buffer) => lines.push(chunk));
  return new Promise((resolve) => {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      lines.end();
      resolve();
    };
    input.once('end', end);
    input.once('close', end);
    input.once('error', end);
  });
}
