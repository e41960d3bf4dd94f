/** A process to start: argv without a shell, its working folder and its whole environment. */
export interface ProcessPlan {
  command: string[];
  cwd: string;
  env: Record<string, string>;
}

/**
 * What to spawn for a process: on the host, with an environment of its own (the sandbox's is
 * empty), and `line` to write first on its standard input, before the process's own input.
 */
export interface WrappedPlan extends ProcessPlan {
  /** The process's environment, folder and command for the sandbox's shell (spare-shell.ts); null: the plan is the process. */
  line: string | null;
}

/** A file of the host put into the process's home (a build's package-tool settings), read-only in the sandbox. */
export interface HomeFile {
  source: string;
  /** Its path relative to the home. */
  target: string;
}

export interface Confinement {
  /** Folders the process may write (its working folder); its /tmp and home are always fresh and writable. */
  writable: string[];
  /** Extra folders it may read (a version's built files) even when they lie under DATA_DIR. */
  readOnly: string[];
  /** Files of the host its home gets (copied into a home outside the sandbox). */
  homeFiles?: HomeFile[];
  /** Overrides RUNNER_NETWORK for this process. */
  network?: RunnerNetwork;
  /**
   * The process is not root in its sandbox even when crewd runs as root (user 1000 of a user namespace of its own
   * there): a Python environment server, whose version servers map their user into user namespaces of their own,
   * which may not map root.
   */
  notRoot?: boolean;
}

/**
 * A sandbox made ahead of the process that will run in it, which becomes that process when it
 * reads its line on standard input (execution/sandbox-spares.ts): the sandbox's cost is then
 * off the run's path. Whatever takes a spare gets the sandbox `wrap` would have made.
 */
export interface SpareShape {
  /** Requests with the same key can take each other's spares. */
  key: string;
  /** The spare's own plan; `folder` (on the host, empty) is the sandbox's `DATA_DIR/runs`. */
  spare(folder: string): ProcessPlan;
  /** The line that makes a spare of this shape the requested process. */
  line: string;
  /** The scratch folder the process works in (under `DATA_DIR/runs`), or null when it works elsewhere. */
  scratch: string | null;
  /** What `wrap` gives for the request, when no spare waits (from the same arguments). */
  fresh(): WrappedPlan;
  /**
   * What the folders bound into the sandbox are now (which files on disk): a spare made before one
   * of them was replaced, as a rebuilt version's files are, sees the old one and is not taken.
   */
  stamp(): string;
}

export interface Sandbox {
  readonly kind: 'bubblewrap' | 'none';
  /**
   * The spare a request could start in instead of through `wrap`, or null when it cannot (it
   * writes other folders, as a build does). Throws as `wrap` does.
   */
  spareShape?(plan: ProcessPlan, confinement: Confinement): SpareShape | null;
  /**
   * The plan to spawn instead: for bubblewrap, bwrap's argv, with an empty environment, starting the
   * sandbox's shell, which gets the process's plan as `line`; for none, the plan itself.
   * Throws an ENOENT error, as a spawn would, when the bubblewrap sandbox cannot find the program.
   */
  wrap(plan: ProcessPlan, confinement: Confinement): WrappedPlan;
}

export type SandboxMode = 'auto' | 'on' | 'off';
export type RunnerNetwork = 'isolated' | 'on' | 'off';
