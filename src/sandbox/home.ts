import path from 'node:path';

/** Where a sandboxed process's home is: a size-bounded tmpfs of its own, gone with its sandbox. */
export const SANDBOX_HOME = '/home/crewd';
/** Its /tmp, the same. */
export const SANDBOX_TMP = '/tmp';

/**
 * The variables that point a process's files into its own area (CONTRACTS §12 "Home"): set over
 * whatever the version's env says, so that no run writes where another run or organization reads.
 */
export function homeEnvironment(home: string, tmp: string): Record<string, string> {
  return {
    HOME: home,
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    TMPDIR: tmp,
  };
}

/** The home environment of every sandboxed process: the same for every run, so spares keep their shape. */
export const SANDBOX_HOME_ENV = homeEnvironment(SANDBOX_HOME, SANDBOX_TMP);
