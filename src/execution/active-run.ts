import { limitHit, outputLimitError, type RunLimits } from '../run-limits.js';
import type { OwnEnd, RunOutcome } from '../run-record/end-recorder.js';
import type { LaunchSpec, RunIdentity, TerminalRunStatus } from '../run-record/types.js';
import type { RunTrace } from '../telemetry/tracer-types.js';
import { UsageTally } from '../telemetry/usage.js';
import type { RunEventLog } from './event-log.js';
import { SERVER_ENDED } from './fork-server-launcher.js';
import type { ProcessExit, RunnerProcess } from './process-runner.js';
import type { RunnerMessage, RunnerResult } from './protocol.js';
import type { RunCalls } from './run-calls.js';

/** What the runner said of its end, first word wins: its result, its failure, or a result crewd refused. */
type RunnerReport =
  | ({ kind: 'result' } & RunnerResult)
  | { kind: 'failure'; error: string }
  | { kind: 'bad_result'; error: string };

/**
 * One run whose process runs on this instance: its event log, its process and timers, what the
 * runner reported, and from all of that, how the run ended.
 */
export class ActiveRun {
  readonly id: string;
  readonly orgId: string;
  readonly identity: RunIdentity;
  process: RunnerProcess | null = null;
  /** The run's end is being written (or was): later output and exits change nothing. */
  ending = false;
  /** The writing of the run's end, once begun: what a second attempt to end it (a cancel, say) waits for. */
  finished: Promise<OwnEnd> | null = null;
  /** The run's end is committed (the `ended` signal): streams read it from the store, though its process may still be going. */
  ended = false;
  /** The status its end was first asked with (a cancel before its process started: `canceled`). */
  endedAs: TerminalRunStatus | null = null;
  private report: RunnerReport | null = null;
  private timedOut = false;
  /** The runner gave its result but did not exit within the grace, so it was stopped. */
  private reapedAfterResult = false;
  /** The output limit the run went over (RUN_MAX_EVENTS, RUN_MAX_OUTPUT_MB): it was stopped. */
  private outputLimit: string | null = null;
  private bytes = 0;
  private readonly timers: NodeJS.Timeout[] = [];
  /** The run's LLM calls summed by model (`llm.call` events), counted even past the event limit. */
  readonly usage = new UsageTally();
  /** The run's trace when tracing is on: its events become spans at its end. */
  trace: RunTrace | null = null;
  /** The values of its version's env and deployment variables (once prepared): its trace masks them. */
  secrets: string[];

  constructor(
    readonly spec: LaunchSpec,
    readonly log: RunEventLog,
    private readonly killGraceMs: number,
    private readonly limits: RunLimits,
  ) {
    this.id = spec.run.id;
    this.orgId = spec.run.org_id;
    this.identity = { deploymentId: spec.run.deployment_id, threadId: spec.run.thread_id };
    this.secrets = Object.values(spec.version.env);
  }

  /** The run's calls (`store.call`), answered on its channel while it runs; null when nothing answers them. */
  calls: RunCalls | null = null;

  /** A line of the runner's output, parsed. */
  onMessage(message: RunnerMessage): void {
    if (this.ending) return;
    if (message.kind === 'call') {
      this.calls?.take(message.data);
      return;
    }
    if (message.kind === 'event') {
      if (message.llmCall) this.usage.add(message.llmCall);
      if (this.outputLimit) return;
      // The log counts the run's events; the run fails past RUN_MAX_EVENTS (the log itself drops none).
      if (this.log.runnerEvents >= this.limits.events) {
        this.overLimit('events');
        return;
      }
      this.bytes += this.log.appendFromRunner(message.type, message.data);
      if (this.bytes > this.limits.outputMb * 1024 * 1024) this.overLimit('bytes');
      return;
    }
    if (this.report) return;
    this.report = message;
    // run.interrupted is relayed as it is, before the final run.completed.
    if (message.kind === 'result' && message.event) this.log.appendFromRunner('run.interrupted', message.event);
    // A runner that reported its end gets the kill grace to exit; then it is stopped.
    this.after(this.killGraceMs, () => {
      this.reapedAfterResult = true;
    });
  }

  /** The run wrote more than its limits allow: it fails, and its process is stopped. */
  private overLimit(kind: 'events' | 'bytes'): void {
    this.outputLimit = outputLimitError(this.limits, kind);
    void this.process?.terminate();
  }

  /** Stops the run after the version's timeout (CONTRACTS §6). */
  armTimeout(seconds: number): void {
    this.after(seconds * 1000, () => {
      this.timedOut = true;
    });
  }

  clearTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
  }

  /** How the run ended, from its process's exit and what the runner said before it. */
  outcome(exit: ProcessExit): RunOutcome {
    const failed = (error: string): RunOutcome => ({ status: 'failed', output: null, error });
    if (exit.kind === 'spawn_failed') return failed(`Failed to start runner: ${exit.error}`);
    if (this.timedOut) return failed(`Run timed out after ${this.spec.version.timeout_seconds} seconds`);
    if (this.outputLimit) return failed(this.outputLimit);
    const report = this.report;
    if (report?.kind === 'result' && (exit.code === 0 || this.reapedAfterResult || exit.statusLost)) {
      const { output, values, checkpoint, interrupts } = report;
      return { status: 'succeeded', output, values, checkpoint, interrupts, error: null };
    }
    const stderr = this.process?.lastStderrLine() ?? null;
    const failure = report && report.kind !== 'result' ? report.error : null;
    const limit = exit.limited && exit.code !== 0 ? limitHit(this.limits, exit, failure ?? stderr) : null;
    if (limit) return failed(`${limit}: ${failure ?? stderr ?? `exit code ${exit.code ?? exit.signal}`}`);
    if (failure !== null) return failed(failure);
    const detail = stderr ? `: ${stderr}` : '';
    if (exit.code !== null && exit.code !== 0) return failed(`Runner exited with code ${exit.code}${detail}`);
    if (exit.signal) return failed(`Runner was stopped by signal ${exit.signal}${detail}`);
    if (exit.statusLost)
      return failed(
        `Runner lost: ${stderr === SERVER_ENDED ? stderr : 'its exit status went with the runner spawner'}`,
      );
    return failed('Runner exited without a result');
  }

  /** Marks the reason, then stops the process group, after `ms`. */
  private after(ms: number, mark: () => void): void {
    const timer = setTimeout(() => {
      mark();
      void this.process?.terminate();
    }, ms);
    timer.unref();
    this.timers.push(timer);
  }
}
