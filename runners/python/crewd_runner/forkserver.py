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

The server stops listening on SIGTERM, or when its socket file is removed, and exits once its children ended.
"""

import argparse
import base64
import gc
import json
import os
import selectors
import signal
import socket
import sys

from . import cli, crewai_rehearsal, hot_pages, run_home
from .forkchild import run_child, wait_as_spare
from .forkwire import NotCrewd, check_peer, exit_message, forward_signal, kill_group, read_secret, receive_request
from .forkwire import send_final

# How often a server checks that its socket file is still there: crewd removes it to retire the server.
SOCKET_CHECK_SECONDS = 2.0
# Which runs report the pages they wrote (hot_pages): the first a spare takes, then one in this many.
LEARN_EVERY = 32
# A child's report line at most: the pages it wrote (hot_pages.MAX_RANGES ranges, in base64) and a little JSON.
REPORT_LINE_LIMIT = 1 << 20


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m crewd_runner.forkserver", description=__doc__.split("\n")[0])
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--crew", metavar="MODULE:ATTR")
    kind.add_argument("--flow", metavar="MODULE:ATTR")
    kind.add_argument("--graph", metavar="FILE.py:ATTR")
    parser.add_argument("--socket", required=True, help="path of the Unix socket to listen on")
    parser.add_argument("--idle-exit", type=float, default=600.0, help="exit after this many seconds without a run")
    parser.add_argument(
        "--header-seconds", type=float, default=5.0, help="refuse a connection whose request takes longer to come"
    )
    return parser.parse_args(argv)


def preload(args, cwd):
    """(load, warm_up_child): imports the crew now; an import error is kept and fails each run, as it would without
    the server. `warm_up_child` is what a child forked ahead does while it waits (or None). CrewAI's rehearsal comes
    first: no listener or hook of the crew's module may hear it."""
    try:
        cli.rehearse(args)
    except crewai_rehearsal.ThreadsLeft as error:
        # Runs then run without a server (crewd waits a while before it starts another).
        sys.exit(f"crewd fork server: {error}")
    try:
        loaded = cli.load_entry(args, cwd)
        warm_up_child = cli.warm_up(args)
    except (Exception, SystemExit) as error:
        failed = error

        def load():
            raise failed

        return load, None
    return (lambda: loaded), warm_up_child


class Child:
    """A run's child as the server knows it: its connection, what crewd sent on it, its run's home, and for a spare
    the socket it reports on (its written pages, its exit code)."""

    def __init__(self, connection, home, control=None):
        self.connection = connection
        self.home = home
        self.control = control
        self.pending = b""
        self.reported = b""
        self.reading_reports = control is not None
        self.finished = False


class ForkServer:
    def __init__(self, listener, socket_path, secret, homes, load, idle_seconds, warm_up_child, header_seconds):
        self._listener = listener
        self._socket_path = socket_path
        self._socket_id = file_id(socket_path)
        self._secret = secret
        self._homes = homes
        # Where the imports kept paths of the server's home: each child points them into its run's.
        self._kept_paths = run_home.kept_paths(homes.server)
        self._load = load
        self._warm_up_child = warm_up_child
        self._idle_seconds = idle_seconds
        self._header_seconds = header_seconds
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
        elif isinstance(key.data, tuple):
            self._from_child(key.data[1])
        else:
            self._from_client(key.data)

    def _accept(self):
        connection, _ = self._listener.accept()
        try:
            check_peer(connection)
            header, line, rest = receive_request(connection, self._header_seconds, self._secret)
        except NotCrewd as refused:
            print(f"crewd fork server: a connection was refused and closed: {refused}", file=sys.stderr, flush=True)
            connection.close()
            return
        except (OSError, ValueError) as error:
            send_final(connection, {"error": str(error)})
            connection.close()
            return
        home = self._homes.for_run()
        spare = self._hand_to_spare(connection, line, home)
        pid = spare[0] if spare else self._fork_for(connection, header, home)
        self._children[pid] = Child(connection, home, spare[1] if spare else None)
        self._selector.register(connection, selectors.EVENT_READ, pid)
        if spare:
            self._selector.register(spare[1], selectors.EVENT_READ, ("report", pid))
        if rest:
            self._received(pid, rest)
        # The next run's child is forked while this one runs, so that it is ready when that run comes.
        self.make_spare()

    def _fork_for(self, connection, header, home):
        # The child's standard input, output and error: the request is in the header, its output goes to crewd.
        fds = [os.open(os.devnull, os.O_RDONLY), os.dup(connection.fileno()), os.dup(connection.fileno())]
        pid = os.fork()
        if pid == 0:
            run_child(header, fds, home, self._load, [connection, *self._sockets()], self._enter_home)
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
            ahead = (self._hot_ranges, self._regions, self._warm_up_child)
            wait_as_spare(child_end, self._load, self._sockets(), *ahead, self._enter_home)
        child_end.close()
        self._spare = (pid, control)

    def _enter_home(self, home):
        """In a child: the paths of the server's home that the imports kept now point into the run's `home`."""
        run_home.move_kept_paths(self._kept_paths, self._homes.server, home)

    def _hand_to_spare(self, connection, line, home):
        """(pid, control socket) of the spare once it took the run, or None (no spare, or it died)."""
        if not self._spare:
            return None
        pid, control = self._spare
        self._spare = None
        handover = {"home": home, "learn": self._spares_taken % LEARN_EVERY == 0}
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
            if child.control is not None:
                self._take_reports(pid, child, blocking=False)
                self._stop_reading_reports(child)
                child.control.close()
            self._finish(pid, child, exit_message(status))
            self.make_spare()

    def _finish(self, pid, child, final):
        """The run's end, once: whatever the run left in its group goes with it (as with a run's own process group),
        then crewd gets the server's last words, then its home goes (after them: removing a folder takes milliseconds
        while the child's teardown takes the CPU)."""
        if child.finished:
            return
        child.finished = True
        kill_group(pid, signal.SIGKILL)
        self._selector.unregister(child.connection)
        send_final(child.connection, final)
        child.connection.close()
        run_home.remove_home(child.home)

    def _from_child(self, pid):
        child = self._children.get(pid)
        if child is not None and not self._take_reports(pid, child, blocking=True):
            self._stop_reading_reports(child)  # the child closed it (it ends); its exit is reaped next

    def _take_reports(self, pid, child, blocking):
        """Reads what a spare's child reported on its socket (one recv when its socket is ready; all that is left
        once the child ended) and acts on each whole line; False once the socket is at its end."""
        child.control.setblocking(blocking)
        open_still = True
        try:
            while data := child.control.recv(1 << 17):
                child.reported += data
                if blocking:
                    break
            else:
                open_still = False  # the child closed it
        except BlockingIOError:
            pass  # nothing more for now
        except OSError:
            open_still = False
        *lines, child.reported = child.reported.split(b"\n")
        for line in lines:
            self._on_report(pid, child, line)
        if len(child.reported) > REPORT_LINE_LIMIT:
            child.reported = b""
            return False  # no report of a child is this long: reading stops, and the exit is reaped as ever
        return open_still

    def _stop_reading_reports(self, child):
        if child.reading_reports:
            child.reading_reports = False
            self._selector.unregister(child.control)

    def _on_report(self, pid, child, line):
        """`{"learned": base64}`: the pages its run wrote (kept within the server's own memory); `{"exit_code": N}`:
        its run is over and its output closed, so the run ends now rather than once the child is torn down."""
        try:
            report = json.loads(line)
        except ValueError:
            return
        if isinstance(report.get("learned"), str):
            ranges = hot_pages.decode(base64.b64decode(report["learned"]))
            self._hot_ranges = hot_pages.within(ranges, self._regions)
        elif isinstance(report.get("exit_code"), int):
            self._finish(pid, child, {"exit_code": report["exit_code"]})

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


def file_id(path):
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


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
    secret = read_secret(sys.stdin)
    # A SIGTERM during the import ends the server at once; once it serves, SIGTERM drains it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    homes = run_home.Homes()
    try:
        load, warm_up_child = preload(args, os.getcwd())
        listener = listen(args.socket)
        server = ForkServer(
            listener, args.socket, secret, homes, load, args.idle_exit, warm_up_child, args.header_seconds
        )
        # What was imported stays shared with the children: a collection in a child would touch every object and
        # copy the pages that hold them.
        gc.freeze()
        try:
            server.serve()
        finally:
            server.drain()
    finally:
        homes.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
