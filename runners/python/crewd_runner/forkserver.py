"""A per-version fork server: imports the crew once, then forks one child per run.

`python -m crewd_runner.forkserver --graph|--crew|--flow TARGET --socket PATH [--idle-exit SECONDS]`, started in the
project folder. Importing CrewAI or LangChain takes seconds; a forked child starts with everything imported and still
is a process of its own per run. Socket protocol (Unix stream socket, one run per connection; see
docs/runner-protocol.md):

1. The client sends one JSON line `{"env": {…}, "cwd": "…"}` and, in the same message (SCM_RIGHTS), three file
   descriptors: the run's standard input, output and error.
2. The server forks. The child starts a session of its own (so its process group is its pid), takes the three
   descriptors as 0, 1 and 2, the `env` as its environment and `cwd` as its folder, and runs the crew exactly as
   `python -m crewd_runner` would.
3. The server answers `{"pid": N}` at once, then `{"exit_code": N}` or `{"signal": N}` when the child ends, and
   closes the connection. A client that hangs up first gets its child's process group killed.
"""

import argparse
import gc
import json
import os
import selectors
import signal
import socket
import sys

from . import cli

HEADER_LIMIT = 1 << 20


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m crewd_runner.forkserver", description=__doc__.split("\n")[0])
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--crew", metavar="MODULE:ATTR")
    kind.add_argument("--flow", metavar="MODULE:ATTR")
    kind.add_argument("--graph", metavar="FILE.py:ATTR")
    parser.add_argument("--socket", required=True, help="path of the Unix socket to listen on")
    parser.add_argument("--idle-exit", type=float, default=600.0, help="exit after this many seconds without a run")
    return parser.parse_args(argv)


def preload(args, cwd):
    """Imports the crew now; an import error is kept and fails each run, as it would without the server."""
    try:
        loaded = cli.load_entry(args, cwd)
        cli.warm_up(args)
    except (Exception, SystemExit) as error:
        failed = error

        def load():
            raise failed

        return load
    return lambda: loaded


class ForkServer:
    def __init__(self, listener, load, idle_seconds):
        self._listener = listener
        self._load = load
        self._idle_seconds = idle_seconds
        self._selector = selectors.DefaultSelector()
        self._children = {}  # pid -> client connection
        self._wake_read, self._wake_write = socket.socketpair()

    def serve(self):
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        signal.set_wakeup_fd(self._wake_write.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        while True:
            ready = self._selector.select(self._idle_seconds)
            if not ready and not self._children:
                return
            for key, _ in ready:
                self._dispatch(key)

    def _dispatch(self, key):
        if key.data == "accept":
            self._accept()
        elif key.data == "wake":
            self._wake_read.recv(4096)
            self._reap()
        else:
            self._client_hung_up(key.fileobj, key.data)

    def _accept(self):
        connection, _ = self._listener.accept()
        try:
            header, fds = receive_request(connection)
        except (OSError, ValueError) as error:
            send_line(connection, {"error": str(error)})
            connection.close()
            return
        pid = os.fork()
        if pid == 0:
            self._run_child(connection, header, fds)
        for fd in fds:
            os.close(fd)
        self._children[pid] = connection
        self._selector.register(connection, selectors.EVENT_READ, pid)
        send_line(connection, {"pid": pid})

    def _run_child(self, connection, header, fds):
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            for sock in (self._listener, connection, self._wake_read, self._wake_write):
                sock.close()
            os.setsid()
            for target_fd, fd in enumerate(fds):
                os.dup2(fd, target_fd)
                os.close(fd)
            os.environ.clear()
            os.environ.update(header.get("env") or {})
            if header.get("cwd"):
                os.chdir(header["cwd"])
            code = cli.run_over_protocol(self._load)
        finally:
            os._exit(code)

    def _reap(self):
        while self._children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self._children.pop(pid, None)
            if connection is not None:
                self._selector.unregister(connection)
                send_line(connection, exit_message(status))
                connection.close()

    def _client_hung_up(self, connection, pid):
        if connection.recv(4096):
            return
        # The client is gone (killed): no run may outlive it.
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def receive_request(connection):
    data, fds, _, _ = socket.recv_fds(connection, HEADER_LIMIT, 3)
    while not data.endswith(b"\n"):
        more = connection.recv(HEADER_LIMIT)
        if not more:
            raise ValueError("the request header ended early")
        data += more
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a run needs three file descriptors: stdin, stdout, stderr")
    return json.loads(data), fds


def exit_message(status):
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"exit_code": os.WEXITSTATUS(status)}


def send_line(connection, message):
    try:
        connection.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass


def listen(path):
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o077)
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    listener.listen(64)
    return listener


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Stopped with SIGTERM, the server removes its socket on the way out; its children keep running to their end.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    load = preload(args, os.getcwd())
    listener = listen(args.socket)
    # What was imported stays shared with the children: a collection in a child would touch every object and copy
    # the pages that hold them.
    gc.freeze()
    try:
        ForkServer(listener, load, args.idle_exit).serve()
    finally:
        listener.close()
        if os.path.exists(args.socket):
            os.unlink(args.socket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
