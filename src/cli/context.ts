import type { Api } from './api.js';
import type { Io } from './output.js';

/** What every command gets: the service (connected on first use), where to write, and its exit code. */
export interface CliContext {
  api(): Api;
  io: Io;
  setExitCode(code: number): void;
}
