"""A per-version fork server: imports the crew once, then forks one child per run.

`python -m crewd_runner.forkserver --graph|--crew|--flow TARGET --socket PATH [--idle-exit SECONDS]
[--header-seconds S]`, started in the project folder, with a secret of 32 bytes in hex as the first line of its
standard input. Importing CrewAI or LangChain takes seconds; a forked child starts with everything imported and still
is a process of its own per run. crewd talks to the socket itself (Unix stream socket, one run per connection; see
docs/runner-protocol.md):

1. crewd sends one JSON line `{"secret": "…", "env": {…}, "cwd": "…", "stdin": "…"}`: the server's secret, the run's
   environment, its working folder (a path this server sees: the version's built files) and what
   `python -m crewd_runner` would read on standard input. A peer that runs as another user, or a line without the
   secret, gets the connection closed without an answer (and a line on the server's standard error); a line with
   other fields is refused.
2. The server forks. The child starts a session of its own (so its process group is its pid), takes the connection as
   its standard output and error, the `env` as its environment with a home of the run's own (run_home: HOME, the XDG
   folders and TMPDIR, made for the run and removed after it), and the folder as its working folder, and runs the
   crew exactly as `python -m crewd_runner` would: its protocol lines are what crewd reads from the connection.
3. crewd may send `{"signal": N}` lines meanwhile (the server may live in another PID namespace, where crewd cannot
   signal); a connection that hangs up gets its child's process group killed.
4. When the child's run is over (the child reports its exit code, or exits), the server kills what is left of its
   process group, sends a NUL byte, then `{"exit_code": N}` or `{"signal": N}` and a newline, and closes the
   connection. A request it cannot take gets a NUL byte and `{"error": "…"}`. The runner's lines are JSON, which
   never holds a raw NUL, so the byte marks the server's words.

The child for the next run is forked ahead (when the server starts listening, and when a run takes the waiting one):
it waits for its run's connection, which the server passes it over a socket pair (SCM_RIGHTS), so the fork is off the
run's path. Runs that come while none waits are forked then. On that socket pair the child reports back once its run
is over: the pages its run wrote, when asked (hot_pages), then its exit code, with its output already closed, so the
run ends without waiting for the kernel to tear the child down.

The server stops listening on SIGTERM, or when its socket file is removed, and exits once its children ended. Every
line that crosses its sockets is in forkmessages; its loop is forkloop.ForkServer.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from . import before_import, cli, hot_pages, rehearsal, run_home
from .forkloop import FileId, ForkServer, WarmUp, file_id
from .forkwire import read_secret


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m crewd_runner.forkserver", description=(__doc__ or "").split("\n")[0]
    )
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--crew", metavar="MODULE:ATTR")
    kind.add_argument("--flow", metavar="MODULE:ATTR")
    kind.add_argument("--graph", metavar="FILE.py:ATTR")
    parser.add_argument("--socket", required=True, help="path of the Unix socket to listen on")
    parser.add_argument("--idle-exit", type=float, default=600.0, help="exit after this many seconds without a run")
    parser.add_argument(
        "--spare-seconds",
        type=float,
        default=60.0,
        help="keep a child forked ahead of the next run only this long after the last run",
    )
    parser.add_argument(
        "--header-seconds", type=float, default=5.0, help="refuse a connection whose request takes longer to come"
    )
    return parser.parse_args(argv)


def preload(args: argparse.Namespace, cwd: str, rehearsed: bool = False) -> tuple[cli.Load, WarmUp]:
    """(load, warm_up_child): imports the crew now; an import error is kept and fails each run, as it would without
    the server. `warm_up_child` is what a child forked ahead does while it waits (or None). The rehearsal (CrewAI's or
    LangGraph's) comes first: none of the version's code may run in or hear it (a version server's environment server
    `rehearsed`)."""
    if not rehearsed:
        try:
            before_import.rehearse(args)
        except rehearsal.ThreadsLeft as error:
            # Runs then run without a server (crewd waits a while before it starts another).
            sys.exit(f"crewd fork server: {error}")
    try:
        loaded = cli.load_entry(args, cwd)
        warm_up_child = cli.warm_up(args)
    except (Exception, SystemExit) as error:  # noqa: BLE001 (kept: each run raises it, as a run without a server would)
        failed = error

        def load() -> tuple[cli.RunEntry, object]:
            raise failed

        return load, None
    return (lambda: loaded), warm_up_child


def listen(path: str) -> socket.socket:
    return listen_with_id(path)[0]


def listen_with_id(path: str) -> tuple[socket.socket, FileId | None]:
    """The listener, and its socket file's identity taken before it accepts anyone: crewd retires a server by
    removing that file, which it may do as soon as a connection proves the server listens. The file appears at `path`
    only once the socket listens (bound under a name of the same length, then renamed), so crewd may take a file
    there for a server ready to take runs."""
    folder, name = os.path.split(path)
    bound_at = os.path.join(folder, "~" * len(name) if name != "~" * len(name) else "+" * len(name))
    for stale in (path, bound_at):
        if os.path.exists(stale):
            os.unlink(stale)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o077)
    try:
        listener.bind(bound_at)
    finally:
        os.umask(old_umask)
    socket_id = file_id(bound_at)  # the same file once renamed
    listener.listen(64)
    os.rename(bound_at, path)
    return listener, socket_id


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    secret = read_secret(sys.stdin)
    # A SIGTERM during the import ends the server at once; once it serves, SIGTERM drains it.
    signal.signal(signal.SIGTERM, _exit_now)
    homes = run_home.Homes()
    try:
        serve(args, secret, homes, os.getcwd())
    finally:
        homes.remove()
    return 0


def serve(
    args: argparse.Namespace,
    secret: bytes,
    homes: run_home.Homes,
    cwd: str,
    environment: Inherited | None = None,
    on_listening: Callable[[], None] | None = None,
) -> None:
    """Imports the version's code, listens and serves its runs until idle or told to stop. A version server passes
    what it `environment` server (envserver) already did: the rehearsal, the kept paths it found in its modules."""
    load, warm_up_child = preload(args, cwd, rehearsed=environment is not None)
    listener, socket_id = listen_with_id(args.socket)
    kept = run_home.kept_paths(homes.server, environment.modules if environment else frozenset())
    server = ForkServer(
        listener,
        args.socket,
        secret,
        homes,
        load,
        args.idle_exit,
        warm_up_child,
        args.header_seconds,
        args.spare_seconds,
        (environment.kept_paths if environment else []) + kept,
        socket_id,
    )
    if on_listening is not None:
        on_listening()
    # What was imported stays shared with the children: a collection in a child would touch every object and
    # copy the pages that hold them.
    gc.freeze()
    if environment is None:
        # A version server shares its environment server's (envserver); a copy of its own would be its own memory.
        hot_pages.collapse(hot_pages.writable_regions())
    try:
        server.serve()
    finally:
        server.drain()


@dataclass(frozen=True)
class Inherited:
    """What a version server got from its environment server: the names of the modules that were imported there,
    and where those keep paths of the environment server's home (which the version server keeps as its own)."""

    modules: frozenset[str]
    kept_paths: run_home.KeptPaths


def _exit_now(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(0)


if __name__ == "__main__":
    sys.exit(main())
