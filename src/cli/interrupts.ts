import { unwrap } from '../client/index.js';
import type { Api } from './api.js';
import type { Io } from './output.js';

interface Interrupt {
  id?: string;
  value?: unknown;
}

/** The interrupts a run's output carries (CONTRACTS §9: `output.interrupts`), or none. */
export function interruptsOf(output: unknown): Interrupt[] {
  const interrupts = (output as { interrupts?: unknown } | null)?.interrupts;
  return Array.isArray(interrupts) ? (interrupts as Interrupt[]) : [];
}

/** What a thread waits for, and the command that resumes it, on stderr. */
export function printInterrupts(io: Io, deployment: string, threadId: string, interrupts: Interrupt[]) {
  io.err(`Thread ${threadId} is interrupted; it waits for:`);
  for (const interrupt of interrupts) io.err(`  ${interrupt.id ?? '-'}  ${JSON.stringify(interrupt.value ?? null)}`);
  io.err(
    `Resume it: crewd run ${shellWord(deployment)} --thread ${threadId} --command '{"resume": <your answer as JSON>}'`,
  );
}

/** After `runs tail`: the run's thread and deployment, read from the run, when its output has interrupts. */
export async function printRunInterrupts(api: Api, io: Io, runId: string, output: unknown) {
  const interrupts = interruptsOf(output);
  if (interrupts.length === 0) return;
  const run = await unwrap(api.client.GET('/v1/runs/{id}', { params: { path: { id: runId } } }));
  if (run.thread_id) printInterrupts(io, run.deployment_id, run.thread_id, interrupts);
}

/** A word as a POSIX shell reads it back unchanged. */
function shellWord(word: string): string {
  return /^[\w.@%+=:,/-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
