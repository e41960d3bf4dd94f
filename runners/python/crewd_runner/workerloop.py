"""A worker's loop: it accepts runs up to its concurrency, starts each in a thread (workerrun), forwards crewd's signal
lines as cancels, and sends each run's last words once its thread is over (worker has the whole story)."""

from __future__ import annotations

import os
import resource
import secrets
import selectors
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from types import FrameType

from . import cli, run_home
from .forkloop import SOCKET_CHECK_SECONDS, file_id
from .forkmessages import Exited, Signal, parse
from .forkwire import SIGNALS_FROM_CLIENTS, admit, is_answer, send_final, whole_lines
from .workerrun import WorkerRun


@dataclass(frozen=True)
class Listener:
    pass


@dataclass(frozen=True)
class WakeUp:
    pass


@dataclass(frozen=True)
class ClientOf:
    run: WorkerRun


Ready = Listener | WakeUp | ClientOf


class WorkerLoop:
    def __init__(
        self,
        listener: socket.socket,
        socket_path: str,
        secret: bytes,
        homes: run_home.Homes,
        load: cli.Load,
        concurrency: int,
        idle_seconds: float,
        header_seconds: float,
    ) -> None:
        self._listener = listener
        self._socket_path = socket_path
        self._socket_id = file_id(socket_path)
        self._secret = secret
        self._homes = homes
        self._load = load
        self._concurrency = concurrency
        self._idle_seconds = idle_seconds
        self._header_seconds = header_seconds
        # Paths the imports kept in the worker's home (CrewAI's storage): a run one at a time gets them in its own.
        self._kept_paths = run_home.kept_paths(homes.server) if concurrency == 1 else []
        self._home_has_files = any(files for _, _, files in os.walk(homes.server))
        self._selector = selectors.DefaultSelector()
        self._runs: set[WorkerRun] = set()
        self._over: list[WorkerRun] = []
        self._over_lock = threading.Lock()
        self._listening = False
        self._draining = False
        self._stop_asked = False
        self._wake_read, self._wake_write = socket.socketpair()
        # RLIMIT_CPU counts the worker's CPU over all its runs: it retires at half, before the kernel ends it.
        soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
        self._cpu_budget = soft / 2 if soft != resource.RLIM_INFINITY else None

    def serve(self) -> None:
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        signal.signal(signal.SIGTERM, self._ask_to_stop)
        self._selector.register(self._wake_read, selectors.EVENT_READ, WakeUp())
        self._listen(True)
        idle_for = 0.0
        while not (self._draining and not self._runs):
            tick = max(0.05, min(self._idle_seconds, SOCKET_CHECK_SECONDS))
            ready = self._selector.select(tick)
            for key, _ in ready:
                self._dispatch(key.data)
            self._end_runs_over()
            idle_for = 0.0 if ready or self._runs else idle_for + tick
            if (
                self._stop_asked
                or idle_for >= self._idle_seconds
                or file_id(self._socket_path) != self._socket_id
                or self._over_budget()
            ):
                self.drain()

    def _over_budget(self) -> bool:
        if self._cpu_budget is None:
            return False
        times = os.times()
        return times.user + times.system > self._cpu_budget

    def _ask_to_stop(self, _signum: int, _frame: FrameType | None) -> None:
        self._stop_asked = True
        self._wake_write.send(b"\0")

    def _listen(self, on: bool) -> None:
        if on and not self._listening and not self._draining:
            self._selector.register(self._listener, selectors.EVENT_READ, Listener())
        elif not on and self._listening:
            self._selector.unregister(self._listener)
        self._listening = on and not self._draining

    def drain(self) -> None:
        """No more runs: the socket goes, and the worker ends with its last run."""
        if self._draining:
            return
        self._listen(False)
        self._draining = True
        self._listener.close()
        if file_id(self._socket_path) == self._socket_id:
            os.unlink(self._socket_path)

    def _dispatch(self, ready: Ready) -> None:
        match ready:
            case Listener():
                self._accept()
            case WakeUp():
                self._wake_read.recv(4096)
            case ClientOf(run):
                self._from_client(run)

    def _accept(self) -> None:
        admitted = admit(self._listener, self._header_seconds, self._secret, "crewd worker")
        if admitted is None:
            return
        connection, request, _, rest = admitted
        stopped = _stop_signal(rest)
        if stopped is not None:
            # Canceled while it waited for a free place: it never starts (a SIGKILL among these lines is no stuck run).
            send_final(connection, Signal(stopped))
            connection.close()
            return
        run = WorkerRun(connection, request, self._new_home(), self._load, lambda: self._ran(run))
        self._runs.add(run)
        self._selector.register(connection, selectors.EVENT_READ, ClientOf(run))
        if self._kept_paths:
            run_home.move_kept_paths(self._kept_paths, self._homes.server, run.home)
        run.start()
        if rest:
            self._received(run, rest)
        if len(self._runs) >= self._concurrency:
            self._listen(False)

    def _new_home(self) -> str:
        """A home for a run: a copy of the worker's when its imports left files there (CrewAI's storage), else its
        home and its TMPDIR, empty (the XDG folders inside are made by what needs them), for a third of a copy's
        CPU."""
        if self._home_has_files:
            return self._homes.for_run()
        folder = os.path.join(self._homes.runs, secrets.token_hex(16))
        for inside in ("", "home", "tmp"):
            os.mkdir(os.path.join(folder, inside), 0o700)
        return folder

    def _ran(self, run: WorkerRun) -> None:
        """From the run's thread, once it is over: the loop sends its last words."""
        with self._over_lock:
            self._over.append(run)
        self._wake_write.send(b"\0")

    def _end_runs_over(self) -> None:
        with self._over_lock:
            over, self._over = self._over, []
        for run in over:
            if run not in self._runs:
                continue
            self._runs.discard(run)
            if self._kept_paths:
                run_home.move_kept_paths(self._kept_paths, run.home, self._homes.server)
            self._selector.unregister(run.connection)
            send_final(run.connection, run.final or Signal(signal.SIGTERM))
            run.close()
        if over and len(self._runs) < self._concurrency:
            self._listen(True)

    def _from_client(self, run: WorkerRun) -> None:
        try:
            data = run.connection.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            # crewd is gone: the run goes too.
            self._selector.unregister(run.connection)
            run.cancel(signal.SIGKILL)
            return
        self._received(run, data)

    def _received(self, run: WorkerRun, data: bytes) -> None:
        for line in whole_lines(run.pending, data):
            if is_answer(line):
                run.answers.deliver(line)
                continue
            message = parse(line)
            if not isinstance(message, Signal) or message.signum not in SIGNALS_FROM_CLIENTS:
                continue
            if message.signum != signal.SIGKILL:
                run.cancel(message.signum)
            elif run.running:
                self._end_worker(run)

    def _end_worker(self, stuck: WorkerRun) -> None:
        """`stuck` did not stop when canceled: a thread cannot be ended from outside, so the worker ends, and with it
        every run it held; each of the others fails saying why."""
        for run in self._runs:
            if run is not stuck:
                run.fail(
                    f"the run's worker (RUN_ISOLATION=deployment) ended: run {stuck.run_id} of the same version did "
                    "not stop when canceled, and its worker went with it"
                )
                send_final(run.connection, Exited(1))
        send_final(stuck.connection, Signal(signal.SIGKILL))
        print(
            f"crewd worker: run {stuck.run_id} did not stop when canceled; the worker ends with its "
            f"{len(self._runs) - 1} other run(s)",
            file=sys.__stderr__,
            flush=True,
        )
        self._homes.remove()
        os._exit(1)


def _stop_signal(data: bytes) -> int | None:
    """The first stop signal among crewd's whole lines in `data`, or None."""
    for line in data.split(b"\n")[:-1]:
        message = parse(line)
        if isinstance(message, Signal) and message.signum in SIGNALS_FROM_CLIENTS:
            return message.signum
    return None
