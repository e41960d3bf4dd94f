"""A per-version worker (RUN_ISOLATION=deployment): imports the crew once, then runs several runs at a time, each in
a thread of its own, in this one process.

`python -m crewd_runner.worker --graph|--crew|--flow TARGET --socket PATH [--concurrency N] [--idle-exit SECONDS]
[--header-seconds S]`, started in the project folder, with a secret of 32 bytes in hex as the first line of its
standard input. It speaks the fork server's wire (forkserver.py, docs/runner-protocol.md): one connection per run
carries the request header (secret, env, cwd, stdin), the run's protocol lines, then a NUL byte and
`{"exit_code": N}`, `{"signal": N}` or `{"error": "…"}`; crewd's `{"signal": N}` lines stop the run.

What differs from a fork server's child per run:

- A run is a thread. It gets its own environment (the request's `env` with a home of its own: run_home), its own
  `sys.stdout`, `sys.stderr` and logging records as its `log` events, and its own protocol lines, through the
  worker's routing (workerscope, which says what cannot be routed). Its working folder is the worker's: the
  version's built files, as each run's would be (`cwd` is not changed per run).
- At most `--concurrency` runs at a time; more connections wait until one ends. A CrewAI crew or flow runs one at a
  time whatever the setting: CrewAI's event bus and storage paths are the process's, not a run's.
- Cancel: SIGTERM, SIGINT or SIGHUP raises RunCanceled in the run's thread, and the run ends as a fork server's child
  killed by that signal would (`{"signal": N}`). A thread cannot be killed: when crewd sends SIGKILL for a run still
  running (it did not stop within the grace time), the worker fails each of its other runs with a `run.failed` event
  saying why, and exits; crewd starts another worker for the next run.
- A crash of the worker ends only its own runs (crewd reads a connection closed without last words).
- Limits of the sandbox (RLIMIT_DATA, RLIMIT_CPU, processes) apply to the worker as a whole, so to its runs together;
  it stops taking runs once it has used half of its CPU limit, and crewd starts another.

It stops taking runs on SIGTERM, when its socket file is removed, or after `--idle-exit` seconds without a run, and
exits once its runs ended. Its loop is workerloop.WorkerLoop; a run in it, workerrun.WorkerRun.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from types import FrameType

from . import run_home, workerexec, workerscope
from .forkserver import listen, preload
from .forkwire import read_secret
from .workerloop import WorkerLoop


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m crewd_runner.worker", description=(__doc__ or "").split("\n")[0])
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--crew", metavar="MODULE:ATTR")
    kind.add_argument("--flow", metavar="MODULE:ATTR")
    kind.add_argument("--graph", metavar="FILE.py:ATTR")
    parser.add_argument("--socket", required=True, help="path of the Unix socket to listen on")
    parser.add_argument("--concurrency", type=int, default=8, help="runs at a time (a CrewAI crew or flow: 1)")
    parser.add_argument("--idle-exit", type=float, default=600.0, help="exit after this many seconds without a run")
    parser.add_argument(
        "--header-seconds", type=float, default=5.0, help="refuse a connection whose request takes longer to come"
    )
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    secret = read_secret(sys.stdin)
    signal.signal(signal.SIGTERM, _exit_now)
    homes = run_home.Homes()
    workerscope.install()
    try:
        load, start_threads = preload(args, os.getcwd())
        # CrewAI's event bus threads, started now outside any run: started by a run's first event, they would count
        # as that run's (workerscope), and its cancel would reach them.
        if start_threads is not None:
            start_threads()
        # After the imports and CrewAI's rehearsal, which must leave no thread behind: the pool's are kept.
        workerexec.install()
        listener = listen(args.socket)
        concurrency = args.concurrency if args.graph else 1
        loop = WorkerLoop(listener, args.socket, secret, homes, load, concurrency, args.idle_exit, args.header_seconds)
        # What the import made lives as long as the worker: collections need not walk it again and again.
        gc.freeze()
        try:
            loop.serve()
        finally:
            loop.drain()
    finally:
        homes.remove()
    return 0


def _exit_now(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(0)


if __name__ == "__main__":
    sys.exit(main())
