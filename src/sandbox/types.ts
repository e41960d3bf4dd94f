/** A process to start: argv without a shell, its working folder and its whole environment. */
export interface ProcessPlan {
  command: string[];
  cwd: string;
  env: Record<string, string>;
}

export interface Confinement {
  /** Folders the process may write (its working folder); /tmp is always a fresh writable tmpfs. */
  writable: string[];
  /** Extra folders it may read (a version's built files) even when they lie under DATA_DIR. */
  readOnly: string[];
  /** Overrides RUNNER_NETWORK for this process: build steps always get the host's network. */
  network?: RunnerNetwork;
}

export interface Sandbox {
  readonly kind: 'bubblewrap' | 'none';
  /**
   * The plan to spawn instead: for bubblewrap, bwrap's argv wrapping the command; for none, the plan itself.
   * Throws an ENOENT error, as a spawn would, when the bubblewrap sandbox cannot find the program.
   */
  wrap(plan: ProcessPlan, confinement: Confinement): ProcessPlan;
}

export type SandboxMode = 'auto' | 'on' | 'off';
export type RunnerNetwork = 'on' | 'off';
