"""An environment server: imports a framework once for the versions of one organization's environment, and forks a
version server for each (docs/ARCHITECTURE.md, "Memory per deployment: environment servers").

`python -m crewd_runner.envserver --kind graph|crew --folder FOLDER --socket PATH [--private FOLDER]...
[--idle-exit S] [--spare-seconds S] [--header-seconds S]`, started in a sandbox of its own with the environment's
variables only, with a secret of 32 bytes in hex as the first line of its standard input. FOLDER, the environment's
folder, holds its sockets' folder (writable: its socket and a folder per version server) and its portal (the
versions' built files, read-only); each version server covers it but for its own two folders. `--private`: the
sandbox's writable folders that each version server gets anew (its /tmp, home, /dev/shm). crewd asks it for a
version server on its socket:

1. crewd (SO_PEERCRED and the server's secret, as with a fork server) sends one JSON line
   `{"secret": "…", "entry": ["--graph", "graph.py:graph"], "folder": "…", "socket": "…"}`: the version's entry,
   its built files' folder (in the portal) and the path its version server listens at (in a folder of its own in
   the environment's folder). The server reads exactly that line, not a byte more, and forks.
2. The child reads the next line itself, `{"secret": "…", "env": {…}}`: its version server's secret and the
   version's variables (which the environment server therefore never holds), narrows its view to its own folders
   (versionview), and its PID namespace's first process imports the version's code and serves its runs exactly as
   a fork server (forkserver.serve). Once it listens it sends `{"listening": true}` and a newline, and closes the
   connection; a version server that fails before closes it without that line.

The server exits after `--idle-exit` seconds without a version server or a request, on SIGTERM (its version servers
with it), or once its socket file is removed and its version servers ended.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hmac
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from types import FrameType

from . import before_import, cli, forkserver, hot_pages, rehearsal, run_home, versionview
from .forkloop import file_id
from .forkwire import NotCrewd, check_peer, read_secret

REQUEST_LIMIT = 64 << 10
ENTRY_KINDS = {"--graph", "--crew", "--flow"}
SOCKET_CHECK_SECONDS = 2.0


@dataclass(frozen=True)
class VersionRequest:
    entry: tuple[str, str]
    folder: str
    socket: str


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m crewd_runner.envserver", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--kind", required=True, choices=["graph", "crew", "flow"])
    parser.add_argument("--folder", required=True, help="the environment's folder (sockets and portal)")
    parser.add_argument("--socket", required=True, help="path of the Unix socket to listen on")
    parser.add_argument("--private", action="append", default=[], help="a writable folder each version gets anew")
    parser.add_argument("--idle-exit", type=float, default=600.0)
    parser.add_argument("--spare-seconds", type=float, default=60.0)
    parser.add_argument("--header-seconds", type=float, default=5.0)
    return parser.parse_args(argv)


# What a graph's module imports (and compiling it imports): imported once here rather than in each version server,
# where they would be each version's own pages (about 12 MB for a one-node graph).
GRAPH_IMPORTS = ("langgraph.graph", "langgraph.graph.message", "langgraph.prebuilt", "langchain_core.messages")


def preload(kind: str) -> None:
    """The framework's imports and warm-up, and its rehearsal: everything a version server would pay that is
    not the version's own code."""
    args = argparse.Namespace(graph=None, crew=None, flow=None)
    setattr(args, kind, "environment")
    try:
        before_import.rehearse(args)
    except rehearsal.ThreadsLeft as error:
        sys.exit(f"crewd environment server: {error}")
    cli.warm_up(args)
    if kind == "graph":
        for name in GRAPH_IMPORTS:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        from .langgraph_rehearsal import tracing_off

        # Without tracing: LangSmith would read and keep whether to trace from the environment's variables, which a
        # version server's (a deployment's LANGSMITH_TRACING) would then not change.
        with tracing_off():
            _compile_a_graph()


def _compile_a_graph() -> None:
    """Compiles (and runs) a one-node graph, as a version's module does at import: what LangGraph imports then."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        text: str

    builder = StateGraph(State)
    builder.add_node("node", lambda state: {"text": state.get("text", "")})
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    builder.compile().invoke({"text": ""})


def read_line(connection: socket.socket, seconds: float) -> bytes:
    """One line, read a byte at a time so that nothing after it leaves the socket: what follows is its child's."""
    connection.settimeout(seconds)
    line = bytearray()
    try:
        while len(line) < REQUEST_LIMIT:
            byte = connection.recv(1)
            if not byte:
                raise ValueError("the connection ended before its line")
            if byte == b"\n":
                return bytes(line)
            line += byte
    except TimeoutError:
        raise ValueError(f"the line did not come within {seconds:g} seconds") from None
    finally:
        connection.settimeout(None)
    raise ValueError("the line is too long")


def parse_request(line: bytes, secret: bytes) -> VersionRequest:
    try:
        fields = json.loads(line)
    except ValueError:
        raise NotCrewd("the request is not JSON") from None
    if not isinstance(fields, dict) or not hmac.compare_digest(str(fields.get("secret", "")).encode(), secret):
        raise NotCrewd("the request does not carry the server's secret")
    entry, folder, path = fields.get("entry"), fields.get("folder"), fields.get("socket")
    if set(fields) != {"secret", "entry", "folder", "socket"}:
        raise ValueError("a request has exactly secret, entry, folder and socket")
    if not (isinstance(entry, list) and len(entry) == 2 and entry[0] in ENTRY_KINDS and isinstance(entry[1], str)):
        raise ValueError("entry is [--graph|--crew|--flow, target]")
    if not (isinstance(folder, str) and isinstance(path, str) and os.path.isabs(folder) and os.path.isabs(path)):
        raise ValueError("folder and socket are absolute paths")
    return VersionRequest((entry[0], entry[1]), os.path.normpath(folder), os.path.normpath(path))


def parse_version_line(line: bytes) -> tuple[bytes, dict[str, str]]:
    fields = json.loads(line)
    secret, env = fields.get("secret"), fields.get("env")
    if not isinstance(secret, str) or len(bytes.fromhex(secret)) != 32:
        raise ValueError("the version server's secret is 32 bytes in hex")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ValueError("env maps names to strings")
    return secret.encode(), env


class EnvironmentServer:
    def __init__(self, args: argparse.Namespace, secret: bytes, homes: run_home.Homes) -> None:
        self._args = args
        self._secret = secret
        self._homes = homes
        self._folder = os.path.abspath(args.folder)
        self._listener = forkserver.listen(args.socket)
        self._socket_id = file_id(args.socket)
        # Each version server's first process, and the socket its server listens at.
        self._children: dict[int, str] = {}
        self._stop = False
        self._inherited = forkserver.Inherited(frozenset(sys.modules), run_home.kept_paths(homes.server))

    def serve(self) -> None:
        signal.signal(signal.SIGTERM, self._ask_to_stop)
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ)
        gc.freeze()
        # Its version servers, forked from it, share its pages in huge pages and fork their runs' children so.
        hot_pages.collapse(hot_pages.writable_regions())
        idle_since = time.monotonic()
        listening = True
        while listening or self._children:
            tick = max(0.05, min(self._args.idle_exit, SOCKET_CHECK_SECONDS))
            ready = selector.select(tick) if listening else []
            if not listening:
                time.sleep(tick)
            if ready and listening:
                self._accept()
            self._reap()
            if ready or self._children:
                idle_since = time.monotonic()
            gone = file_id(self._args.socket) != self._socket_id
            idle = time.monotonic() - idle_since >= self._args.idle_exit
            if listening and (self._stop or gone or idle):
                listening = False
                selector.unregister(self._listener)
                self._listener.close()
                if not gone:
                    os.unlink(self._args.socket)
            if self._stop:
                for pid in self._children:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGTERM)
                self._stop = False

    def _ask_to_stop(self, _signum: int, _frame: FrameType | None) -> None:
        self._stop = True

    def _reap(self) -> None:
        """Notes the version servers that ended; the socket of one that did not remove it (killed) goes, so that
        crewd sees it ended and asks for a new one."""
        for pid, path in list(self._children.items()):
            with contextlib.suppress(ChildProcessError):
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done == 0:
                    continue
            del self._children[pid]
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _accept(self) -> None:
        connection, _ = self._listener.accept()
        try:
            check_peer(connection)
            request = parse_request(read_line(connection, self._args.header_seconds), self._secret)
        except NotCrewd as refused:
            print(f"crewd environment server: a connection was refused: {refused}", file=sys.__stderr__, flush=True)
            connection.close()
            return
        except (OSError, ValueError) as error:
            with contextlib.suppress(OSError):
                connection.sendall(json.dumps({"error": str(error)}).encode() + b"\n")
            connection.close()
            return
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                self._listener.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                self._become_version_server(connection, request)
                code = 0
            except BaseException as error:  # noqa: BLE001 (the child's end: said on standard error, never raised)
                print(f"crewd version server: {error!r}", file=sys.__stderr__, flush=True)
                traceback.print_exc()
            finally:
                os._exit(code)
        connection.close()
        self._children[pid] = request.socket

    def _become_version_server(self, connection: socket.socket, request: VersionRequest) -> None:
        secret, env = parse_version_line(read_line(connection, self._args.header_seconds))
        home = _snapshot(self._homes.server)
        pid_max = versionview.read_pid_max()
        view = versionview.View(
            self._folder, os.path.dirname(request.socket), request.folder, tuple(self._args.private)
        )
        versionview.narrow(view)
        versionview.enter_pid_namespace(pid_max, [connection.fileno()])
        os.environ.clear()
        os.environ.update(env)
        # The version's import paths (its PYTHONPATH, in the portal): the interpreter read only the environment's.
        sys.path[:0] = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry not in ("", *sys.path)]
        homes = run_home.Homes(self._homes.root)
        _restore(home, homes.server)
        os.chdir(request.folder)
        args = argparse.Namespace(
            graph=None,
            crew=None,
            flow=None,
            socket=request.socket,
            idle_exit=self._args.idle_exit,
            spare_seconds=self._args.spare_seconds,
            header_seconds=self._args.header_seconds,
        )
        setattr(args, request.entry[0][2:], request.entry[1])

        def listening() -> None:
            connection.sendall(b'{"listening": true}\n')
            connection.close()

        try:
            forkserver.serve(args, secret, homes, request.folder, self._inherited, listening)
        finally:
            homes.remove()


# What the environment server's imports left in its home: (path inside it, its contents or None for a folder).
Snapshot = list[tuple[str, bytes | None]]


def _snapshot(folder: str) -> Snapshot:
    found: Snapshot = []
    for at, folders, files in os.walk(folder):
        inside = os.path.relpath(at, folder)
        found.extend((os.path.join(inside, name), None) for name in folders)
        for name in files:
            with contextlib.suppress(OSError), open(os.path.join(at, name), "rb") as file:
                found.append((os.path.join(inside, name), file.read()))
    return found


def _restore(found: Snapshot, folder: str) -> None:
    for inside, contents in found:
        path = os.path.join(folder, inside)
        if contents is None:
            os.makedirs(path, exist_ok=True)
        else:
            with open(path, "wb") as file:
                file.write(contents)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    secret = read_secret(sys.stdin)
    signal.signal(signal.SIGTERM, forkserver._exit_now)
    homes = run_home.Homes()
    try:
        preload(args.kind)
        EnvironmentServer(args, secret, homes).serve()
    finally:
        homes.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
