"""A per-version fork server: imports the crew once, then forks one child per run.

`python -m crewd_runner.forkserver --graph|--crew|--flow TARGET --socket PATH [--idle-exit SECONDS]`, started in the
project folder. Importing CrewAI or LangChain takes seconds; a forked child starts with everything imported and still
is a process of its own per run. crewd talks to the socket itself (Unix stream socket, one run per connection; see
docs/runner-protocol.md):

1. crewd sends one JSON line `{"env": {…}, "cwd": "…", "stdin": "…"}`: the run's environment, its working folder (a
   path this server sees: the version's built files) and what `python -m crewd_runner` would read on standard input.
2. The server forks. The child starts a session of its own (so its process group is its pid), takes the connection as
   its standard output and error, the `env` as its environment, a private TMPDIR unless `env` names one, and the
   folder as its working folder, and runs the crew exactly as `python -m crewd_runner` would: its protocol lines are
   what crewd reads from the connection.
3. crewd may send `{"signal": N}` lines meanwhile (the server may live in another PID namespace, where crewd cannot
   signal); a connection that hangs up gets its child's process group killed.
4. When the child ended (and its group with it), the server sends a NUL byte, then `{"exit_code": N}` or
   `{"signal": N}` and a newline, and closes the connection. A request it cannot take gets a NUL byte and
   `{"error": "…"}`. The runner's lines are JSON, which never holds a raw NUL, so the byte marks the server's words.

The child for the next run is forked ahead (when the server starts listening, and after each run's child ended): it
waits for its run's connection, which the server passes it over a socket pair (SCM_RIGHTS), so the fork is off the
run's path. Runs that come while none waits are forked then.

The server stops listening on SIGTERM, or when its socket file is removed, and exits once its children ended.
"""

import argparse
import gc
import json
import os
import selectors
import signal
import socket
import sys
import tempfile

from . import cli, hot_pages
from .forkchild import remove_private_tmp, run_child, wait_as_spare

# The header carries the run's input, thread values and checkpoint.
HEADER_LIMIT = 256 << 20
# How often a server checks that its socket file is still there: crewd removes it to retire the server.
SOCKET_CHECK_SECONDS = 2.0
SIGNALS_FROM_CLIENTS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL}
# Which runs report the pages they wrote (hot_pages): the first a spare takes, then one in this many.
LEARN_EVERY = 32


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


class Child:
    """A run's child as the server knows it: its connection, what crewd sent on it, its private TMPDIR, and for a
    spare the socket it may report its written pages on."""

    def __init__(self, connection, tmp, control=None):
        self.connection = connection
        self.tmp = tmp
        self.control = control
        self.pending = b""


class ForkServer:
    def __init__(self, listener, socket_path, load, idle_seconds):
        self._listener = listener
        self._socket_path = socket_path
        self._socket_id = file_id(socket_path)
        self._load = load
        self._idle_seconds = idle_seconds
        self._selector = selectors.DefaultSelector()
        self._children = {}  # pid -> Child
        self._spare = None  # (pid, control socket) of the child forked ahead of the next run
        self._regions = hot_pages.writable_regions()
        self._hot_ranges = []  # what the last learning run wrote, copied by each spare ahead of its run
        self._spares_taken = 0
        self._draining = False
        self._stop_asked = False
        self._wake_read, self._wake_write = socket.socketpair()

    def serve(self):
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        signal.set_wakeup_fd(self._wake_write.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)
        # The handler only notes it (and wakes the loop): closing the listener under an accept() would break it.
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "_stop_asked", True))
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        self.make_spare()
        idle_for = 0.0
        while not (self._draining and not self._children):
            tick = max(0.05, min(self._idle_seconds, SOCKET_CHECK_SECONDS))
            ready = self._selector.select(tick)
            for key, _ in ready:
                self._dispatch(key)
            idle_for = 0.0 if ready or self._children else idle_for + tick
            if self._stop_asked or idle_for >= self._idle_seconds or file_id(self._socket_path) != self._socket_id:
                self.drain()

    def drain(self):
        """No more runs: the listener closes and the server ends with its last child."""
        if self._draining:
            return
        self._draining = True
        self.retire_spare()
        self._selector.unregister(self._listener)
        self._listener.close()
        if file_id(self._socket_path) == self._socket_id:
            os.unlink(self._socket_path)

    def _dispatch(self, key):
        if key.data == "accept":
            if not self._draining:
                self._accept()
        elif key.data == "wake":
            self._wake_read.recv(4096)
            self._reap()
        else:
            self._from_client(key.data)

    def _accept(self):
        connection, _ = self._listener.accept()
        try:
            header, line, rest = receive_request(connection)
        except (OSError, ValueError) as error:
            send_final(connection, {"error": str(error)})
            connection.close()
            return
        tmp = None if header["env"].get("TMPDIR") else private_tmp()
        spare = self._hand_to_spare(connection, line, tmp)
        pid = spare[0] if spare else self._fork_for(connection, header, tmp)
        self._children[pid] = Child(connection, tmp, spare[1] if spare else None)
        self._selector.register(connection, selectors.EVENT_READ, pid)
        if rest:
            self._received(pid, rest)

    def _fork_for(self, connection, header, tmp):
        # The child's standard input, output and error: the request is in the header, its output goes to crewd.
        fds = [os.open(os.devnull, os.O_RDONLY), os.dup(connection.fileno()), os.dup(connection.fileno())]
        pid = os.fork()
        if pid == 0:
            run_child(header, fds, tmp, self._load, [connection, *self._sockets()])
        for fd in fds:
            os.close(fd)
        return pid

    def _sockets(self):
        """What a child must not keep: the server's own sockets and the other runs' connections."""
        spare = [self._spare[1]] if self._spare else []
        others = [sock for child in self._children.values() for sock in (child.connection, child.control) if sock]
        return [self._selector, self._listener, self._wake_read, self._wake_write, *spare, *others]

    def make_spare(self):
        """Forks the next run's child ahead, off the run's path: a fork of a large process takes milliseconds."""
        if self._spare or self._draining:
            return
        control, child_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            control.close()
            wait_as_spare(child_end, self._load, self._sockets(), self._hot_ranges, self._regions)
        child_end.close()
        self._spare = (pid, control)

    def _hand_to_spare(self, connection, line, tmp):
        """(pid, control socket) of the spare once it took the run, or None (no spare, or it died)."""
        if not self._spare:
            return None
        pid, control = self._spare
        self._spare = None
        handover = {"tmp": tmp, "learn": self._spares_taken % LEARN_EVERY == 0}
        try:
            socket.send_fds(control, [json.dumps(handover).encode() + b"\n"], [connection.fileno()])
            control.sendall(line)
            control.shutdown(socket.SHUT_WR)
        except OSError:
            control.close()
            kill_group(pid, signal.SIGKILL)
            return None
        self._spares_taken += 1
        return pid, control

    def retire_spare(self):
        if self._spare:
            self._spare[1].close()
            self._spare = None

    def _reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self._children.pop(pid, None)
            if child is None:
                if self._spare and self._spare[0] == pid:
                    self._spare = None
                continue
            # Whatever the run left in its group goes with it, as it would with a run's own process group.
            kill_group(pid, signal.SIGKILL)
            self._selector.unregister(child.connection)
            send_final(child.connection, exit_message(status))
            child.connection.close()
            self._learn_from(child)
            remove_private_tmp(child.tmp)
            self.make_spare()

    def _learn_from(self, child):
        """Keeps the pages a learning run reported (it wrote them before it ended), within the server's own memory."""
        if child.control is None:
            return
        child.control.setblocking(False)
        chunks = []
        try:
            while data := child.control.recv(1 << 17):
                chunks.append(data)
        except OSError:
            pass
        child.control.close()
        if chunks:
            self._hot_ranges = hot_pages.within(hot_pages.decode(b"".join(chunks)), self._regions)

    def _from_client(self, pid):
        child = self._children.get(pid)
        if child is None:
            return  # reaped earlier in the same round
        data = child.connection.recv(4096)
        if not data:
            # The client is gone (killed): no run may outlive it.
            kill_group(pid, signal.SIGKILL)
            return
        self._received(pid, data)

    def _received(self, pid, data):
        child = self._children[pid]
        child.pending += data
        *lines, child.pending = child.pending.split(b"\n")
        for line in lines:
            forward_signal(pid, line)


def forward_signal(pid, line):
    try:
        signum = int(json.loads(line).get("signal"))
    except (ValueError, TypeError, AttributeError):
        return
    if signum in SIGNALS_FROM_CLIENTS:
        kill_group(pid, signum)


def kill_group(pid, signum):
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def private_tmp():
    return tempfile.mkdtemp(prefix="crewd-run-")


def file_id(path):
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def receive_request(connection):
    """The header (`env`, names to strings; `cwd` and `stdin`, strings), its line, and what came after it."""
    chunks, size = [], 0
    while not chunks or b"\n" not in chunks[-1]:
        more = connection.recv(1 << 20)
        if not more:
            raise ValueError("the request header ended early")
        chunks.append(more)
        size += len(more)
        if size > HEADER_LIMIT:
            raise ValueError(f"the request header is longer than {HEADER_LIMIT} bytes")
    line, _, rest = b"".join(chunks).partition(b"\n")
    header = json.loads(line)
    env = header.get("env") if isinstance(header, dict) else None
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        raise ValueError('the request needs "env", an object of strings')
    if not isinstance(header.get("cwd"), str) or not isinstance(header.get("stdin"), str):
        raise ValueError('the request needs "cwd" and "stdin", strings')
    return header, line, rest


def exit_message(status):
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"exit_code": os.WEXITSTATUS(status)}


def send_final(connection, message):
    """The server's last words on a connection, after everything the child wrote: NUL, then a JSON line."""
    try:
        connection.sendall(b"\0" + json.dumps(message).encode() + b"\n")
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
    # A SIGTERM during the import ends the server at once; once it serves, SIGTERM drains it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    load = preload(args, os.getcwd())
    listener = listen(args.socket)
    # What was imported stays shared with the children: a collection in a child would touch every object and copy
    # the pages that hold them.
    gc.freeze()
    server = ForkServer(listener, args.socket, load, args.idle_exit)
    try:
        server.serve()
    finally:
        server.drain()
    return 0


if __name__ == "__main__":
    sys.exit(main())
