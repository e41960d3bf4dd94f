/** Limits on what one runner may write; docs/runner-protocol.md states them for crew authors. */
export const RUN_LIMITS = {
  /** One line of standard output or standard error; a longer line becomes a `log` event saying so. */
  maxLineBytes: 1024 * 1024,
  /** Events a runner may write; later ones are dropped and one `log` event says so. */
  maxEventsPerRun: 10_000,
  /** The serialised `output` of a result; a larger one fails the run. */
  maxOutputBytes: 1024 * 1024,
  /** How much of an over-long line the notice keeps. */
  truncatedHeadBytes: 1024,
} as const;
