"""The fork server's loop: it accepts runs, hands each to a child (a spare forked ahead, or one forked then),
forwards crewd's signal lines, reads the spares' reports, reaps children and sends each run's last words
(forkserver has the whole story; forkmessages every line that crosses the sockets)."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from . import cli, hot_pages, run_home
from .forkanswers import AnswerPipe
from .forkchild import Closable, run_child, wait_as_spare
from .forkmessages import Exited, Final, Handover, Learned, RunRequest, parse
from .forkwire import admit, exit_message, forward_signal, is_answer, kill_group, send_final, whole_lines
from .hot_pages import Ranges

# How often a server checks that its socket file is still there: crewd removes it to retire the server.
SOCKET_CHECK_SECONDS = 2.0
# Which runs report the pages they wrote (hot_pages): the first a spare takes, then one in this many.
LEARN_EVERY = 32
# A child's report line at most: the pages it wrote (hot_pages.MAX_RANGES ranges, in base64) and a little JSON.
REPORT_LINE_LIMIT = 1 << 20


# What the server's selector says is ready: the listener, its wake-up socket, a run's connection, a spare's reports.
@dataclass(frozen=True)
class Listener:
    pass


@dataclass(frozen=True)
class WakeUp:
    pass


@dataclass(frozen=True)
class ClientOf:
    pid: int


@dataclass(frozen=True)
class ReportsOf:
    pid: int


@dataclass(frozen=True)
class AnswersTo:
    pid: int


Ready = Listener | WakeUp | ClientOf | ReportsOf | AnswersTo
WarmUp = Callable[[], None] | None


@dataclass
class Child:
    """A run's child as the server knows it: its connection, what crewd sent on it, its run's home, and for a spare
    the socket it reports on (its written pages, its exit code)."""

    connection: socket.socket
    home: str
    control: socket.socket | None = None
    # The run's standard input, where crewd's answers to its calls go (store_channel).
    answers: AnswerPipe | None = None
    pending: bytearray = field(default_factory=bytearray)
    reported: bytes = b""
    reading_reports: bool = field(init=False)
    finished: bool = False

    def __post_init__(self) -> None:
        self.reading_reports = self.control is not None


class ForkServer:
    def __init__(
        self,
        listener: socket.socket,
        socket_path: str,
        secret: bytes,
        homes: run_home.Homes,
        load: cli.Load,
        idle_seconds: float,
        warm_up_child: WarmUp,
        header_seconds: float,
        spare_seconds: float = 60.0,
        kept_paths: run_home.KeptPaths | None = None,
        socket_id: FileId | None = None,
    ) -> None:
        self._listener = listener
        self._socket_path = socket_path
        self._socket_id = socket_id  # taken at bind (forkserver.listen_with_id); None: removed already, so it drains
        self._secret = secret
        self._homes = homes
        # Where the imports kept paths of the server's home: each child points them into its run's.
        self._kept_paths = run_home.kept_paths(homes.server) if kept_paths is None else kept_paths
        self._load = load
        self._warm_up_child = warm_up_child
        self._idle_seconds = idle_seconds
        self._header_seconds = header_seconds
        # A child is kept forked ahead only this long after the last run began or ended: an idle version's server
        # holds no second copy of its written pages.
        self._spare_seconds = spare_seconds
        self._last_run = time.monotonic()
        self._selector = selectors.DefaultSelector()
        self._children: dict[int, Child] = {}
        self._spare: tuple[int, socket.socket] | None = None  # (pid, control socket) of the child forked ahead
        self._regions = hot_pages.writable_regions()
        self._hot_ranges: Ranges = []  # what the last learning run wrote, copied by each spare ahead of its run
        self._cores = len(os.sched_getaffinity(0))
        self._spares_taken = 0
        self._draining = False
        self._stop_asked = False
        self._wake_read, self._wake_write = socket.socketpair()

    def serve(self) -> None:
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        signal.set_wakeup_fd(self._wake_write.fileno())
        signal.signal(signal.SIGCHLD, _wake_only)
        # The handler only notes it (and wakes the loop): closing the listener under an accept() would break it.
        signal.signal(signal.SIGTERM, self._ask_to_stop)
        self._selector.register(self._listener, selectors.EVENT_READ, Listener())
        self._selector.register(self._wake_read, selectors.EVENT_READ, WakeUp())
        self.make_spare()
        idle_for = 0.0
        while not (self._draining and not self._children):
            tick = max(0.05, min(self._idle_seconds, self._spare_seconds, SOCKET_CHECK_SECONDS))
            ready = self._selector.select(tick)
            for key, _ in ready:
                self._dispatch(key.data)
            if self._spare and not self._children and not self._ran_recently():
                self.retire_spare()
            idle_for = 0.0 if ready or self._children else idle_for + tick
            if self._stop_asked or idle_for >= self._idle_seconds or self._socket_removed():
                self.drain()

    def _socket_removed(self) -> bool:
        return self._socket_id is None or file_id(self._socket_path) != self._socket_id

    def _ran_recently(self) -> bool:
        return time.monotonic() - self._last_run < self._spare_seconds

    def _ask_to_stop(self, _signum: int, _frame: FrameType | None) -> None:
        self._stop_asked = True

    def drain(self) -> None:
        """No more runs: the listener closes and the server ends with its last child."""
        if self._draining:
            return
        self._draining = True
        self.retire_spare()
        self._selector.unregister(self._listener)
        self._listener.close()
        if file_id(self._socket_path) == self._socket_id:
            # Removed meanwhile (crewd removes a server's socket to end it): gone all the same.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._socket_path)

    def _dispatch(self, ready: Ready) -> None:
        match ready:
            case Listener():
                if not self._draining:
                    self._accept()
            case WakeUp():
                self._wake_read.recv(4096)
                self._reap()
            case ReportsOf(pid):
                self._from_child(pid)
            case ClientOf(pid):
                self._from_client(pid)
            case AnswersTo(pid):
                child = self._children.get(pid)
                if child is not None and child.answers is not None:
                    child.answers.flush()

    def _accept(self) -> None:
        admitted = admit(self._listener, self._header_seconds, self._secret, "crewd fork server")
        if admitted is None:
            return
        connection, request, line, rest = admitted
        self._last_run = time.monotonic()
        home = self._homes.for_run()
        answers_in, answers_out = os.pipe()
        spare = self._hand_to_spare(connection, line, home, answers_in)
        pid = spare[0] if spare else self._fork_for(connection, request, home, answers_in)
        os.close(answers_in)
        answers = AnswerPipe(answers_out, self._selector, AnswersTo(pid))
        self._children[pid] = Child(connection, home, spare[1] if spare else None, answers)
        self._selector.register(connection, selectors.EVENT_READ, ClientOf(pid))
        if spare:
            self._selector.register(spare[1], selectors.EVENT_READ, ReportsOf(pid))
        if rest:
            self._received(pid, rest)
        # The next run's child is forked while this one runs, so that it is ready when that run comes.
        self.make_spare()

    def _fork_for(self, connection: socket.socket, request: RunRequest, home: str, answers_in: int) -> int:
        # The child's standard input (crewd's answers; the request is in the header), output and error (to crewd).
        fds = [os.dup(answers_in), os.dup(connection.fileno()), os.dup(connection.fileno())]
        pid = os.fork()
        if pid == 0:
            run_child(request, fds, home, self._load, [connection, *self._sockets()], self._enter_home)
        for fd in fds:
            os.close(fd)
        return pid

    def _sockets(self) -> list[Closable]:
        """What a child must not keep: the server's own sockets and the other runs' connections."""
        spare = [self._spare[1]] if self._spare else []
        others = [
            sock
            for child in self._children.values()
            for sock in (child.connection, child.control, child.answers.file if child.answers else None)
            if sock
        ]
        return [self._selector, self._listener, self._wake_read, self._wake_write, *spare, *others]

    def make_spare(self) -> None:
        """Forks the next run's child ahead, off the run's path: a fork of a large process takes milliseconds. Only
        while runs came recently: a spare holds its own copy of the pages it warms and copies."""
        if self._spare or self._draining or not self._ran_recently():
            return
        control, child_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            control.close()
            ranges, regions, warm_up = self._copied_ahead(), self._regions, self._warm_up_child
            wait_as_spare(child_end, self._load, self._sockets(), ranges, regions, warm_up, self._enter_home)
        child_end.close()
        self._spare = (pid, control)

    def _copied_ahead(self) -> Ranges:
        """What the next spare copies ahead: the hot pages while a core is left for it, else nothing. With every core
        running a run, the copy takes CPU from them, stops half done when its own run comes, and costs more than the
        faults it saves (a page copied ahead costs more than one copied on its first write, and it copies pages its
        run would not have written): about 0.5 to 2 ms of CPU per run."""
        going_on = sum(not child.finished for child in self._children.values())
        return self._hot_ranges if going_on < self._cores else []

    def _enter_home(self, home: str) -> None:
        """In a child: the paths of the server's home that the imports kept now point into the run's `home`."""
        run_home.move_kept_paths(self._kept_paths, self._homes.server, home)

    def _hand_to_spare(
        self, connection: socket.socket, line: bytes, home: str, answers_in: int
    ) -> tuple[int, socket.socket] | None:
        """(pid, control socket) of the spare once it took the run, or None (no spare, or it died)."""
        if not self._spare:
            return None
        pid, control = self._spare
        self._spare = None
        handover = Handover(home, learn=self._spares_taken % LEARN_EVERY == 0)
        try:
            socket.send_fds(control, [handover.encode()], [connection.fileno(), answers_in])
            control.sendall(line)
            control.shutdown(socket.SHUT_WR)
        except OSError:
            control.close()
            kill_group(pid, signal.SIGKILL)
            return None
        self._spares_taken += 1
        return pid, control

    def retire_spare(self) -> None:
        if self._spare:
            self._spare[1].close()
            self._spare = None

    def _reap(self) -> None:
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
                self._take_reports(pid, child, child.control, blocking=False)
                self._stop_reading_reports(child)
                child.control.close()
            self._finish(pid, child, exit_message(status))
            self._last_run = time.monotonic()
            self.make_spare()

    def _finish(self, pid: int, child: Child, final: Final) -> None:
        """The run's end, once: whatever the run left in its group goes with it (as with a run's own process group),
        then crewd gets the server's last words, then its home goes (after them: removing a folder takes milliseconds
        while the child's teardown takes the CPU)."""
        if child.finished:
            return
        child.finished = True
        kill_group(pid, signal.SIGKILL)
        self._selector.unregister(child.connection)
        if child.answers is not None:
            child.answers.close()
        send_final(child.connection, final)
        child.connection.close()
        run_home.remove_home(child.home)

    def _from_child(self, pid: int) -> None:
        child = self._children.get(pid)
        if child is None or child.control is None:
            return
        if not self._take_reports(pid, child, child.control, blocking=True):
            self._stop_reading_reports(child)  # the child closed it (it ends); its exit is reaped next

    def _take_reports(self, pid: int, child: Child, control: socket.socket, blocking: bool) -> bool:
        """Reads what a spare's child reported on its socket (one recv when its socket is ready; all that is left
        once the child ended) and acts on each whole line; False once the socket is at its end."""
        control.setblocking(blocking)
        open_still = True
        try:
            while data := control.recv(1 << 17):
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

    def _stop_reading_reports(self, child: Child) -> None:
        if child.reading_reports and child.control is not None:
            child.reading_reports = False
            self._selector.unregister(child.control)

    def _on_report(self, pid: int, child: Child, line: bytes) -> None:
        """Learned: the pages its run wrote (kept within the server's own memory); Exited: its run is over and its
        output closed, so the run ends now rather than once the child is torn down. Anything else is not the child's
        runner's (its crew may write on the socket) and is passed over."""
        match parse(line):
            case Learned(data):
                self._hot_ranges = hot_pages.within(hot_pages.decode(data), self._regions)
            case Exited() as exited:
                self._finish(pid, child, exited)
            case _:
                pass

    def _from_client(self, pid: int) -> None:
        child = self._children.get(pid)
        if child is None:
            return  # reaped earlier in the same round
        data = child.connection.recv(1 << 16)
        if not data:
            # The client is gone (killed): no run may outlive it.
            kill_group(pid, signal.SIGKILL)
            return
        self._received(pid, data)

    def _received(self, pid: int, data: bytes) -> None:
        child = self._children[pid]
        for line in whole_lines(child.pending, data):
            if is_answer(line):
                if child.answers is not None:
                    child.answers.add(line)
            else:
                forward_signal(pid, line)


def _wake_only(_signum: int, _frame: FrameType | None) -> None:
    """SIGCHLD's handler: the signal's byte on the wake-up socket is what wakes the loop to reap."""


FileId = tuple[int, int]


def file_id(path: str) -> FileId | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)
