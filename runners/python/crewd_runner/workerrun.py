"""One run in a worker's thread: its own environment, home and output (workerscope), its request, its cancel."""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
import os
import socket
import threading
from collections.abc import Callable

from . import cli, run_home, store_channel
from .forkmessages import Exited, Final, RunRequest, Signal
from .protocol import Emitter
from .workerscope import RunScope, current, raise_in


class RunCanceled(BaseException):
    """Raised in a run's thread when crewd cancels it: a BaseException, so that the run's own `except Exception`
    does not swallow it."""


def run_id_of(stdin: str) -> str:
    try:
        request = json.loads(stdin)
    except ValueError:
        return "?"
    return str(request.get("run_id") or "?") if isinstance(request, dict) else "?"


class WorkerRun:
    """A run the worker took: the connection crewd asked it on, its home, the thread it runs in. `done` is called
    from that thread once the run is over, whatever happened."""

    def __init__(
        self, connection: socket.socket, request: RunRequest, home: str, load: cli.Load, done: Callable[[], None]
    ) -> None:
        self.connection = connection
        self.request = request
        self.run_id = run_id_of(request.stdin)
        self.home = home
        self.pending = bytearray()  # what crewd sent after the header, up to a whole line
        # crewd's answers to the run's calls, which the worker's loop delivers (store_channel).
        self.answers = store_channel.Answers()
        self.final: Final | None = None
        self._load = load
        self._done = done
        self._lock = threading.Lock()
        self._running = True
        self._canceled_by: int | None = None
        self._emitter = Emitter(os.dup(connection.fileno()))
        self._thread_id: int | None = None
        self._scope: RunScope | None = None

    def start(self) -> None:
        env = {**self.request.env, **run_home.home_environment(self.home)}
        scope = RunScope.of(env, self._emitter)
        self._scope = scope
        context = contextvars.copy_context()
        context.run(current.set, scope)
        context.run(store_channel.current.set, self.answers)
        thread = threading.Thread(
            target=context.run, args=(self._run_in, scope), name=f"crewd run {self.run_id}", daemon=True
        )
        thread.start()

    def _run_in(self, scope: RunScope) -> None:
        with self._lock:
            self._thread_id = threading.get_ident()
            canceled_early = self._canceled_by is not None
        try:
            if canceled_early:
                raise RunCanceled
            try:
                outcome = cli.run(self._load, io.StringIO(self.request.stdin), self._emitter)
                scope.flush()
                if self._finish_running():
                    self._emitter.emit(outcome.event_type, outcome.data)
                    self.final = Exited(0)
            except RunCanceled:
                pass
            finally:
                self._finish_running()
        except RunCanceled:
            # Raised after the run's own code, on the way out: the run is over all the same.
            self._finish_running()
        finally:
            if self.final is None:
                self.final = Signal(self._canceled_by or 15)
            self.answers.close()
            self._emitter.close()
            self._done()

    def _finish_running(self) -> bool:
        """Once: no cancel reaches this thread any more; False when one was asked before (the run ends canceled)."""
        with self._lock:
            if not self._running:
                return False
            self._running = False
            if self._thread_id is not None:
                raise_in(self._thread_id, None)
            return self._canceled_by is None

    def cancel(self, signum: int) -> None:
        """crewd's stop signal: RunCanceled in the run's thread (which ends the run once its code runs Python again)."""
        with self._lock:
            if not self._running or self._canceled_by is not None:
                return
            self._canceled_by = signum
            # A call waiting for its answer waits in a lock, where no exception reaches it: it fails now instead.
            self.answers.close()
            if self._thread_id is not None:
                raise_in(self._thread_id, RunCanceled)
            # The threads working for it (it started them, or a pool's running its sync node).
            if self._scope is not None:
                self._scope.interrupt(RunCanceled)

    @property
    def running(self) -> bool:
        with self._lock:
            return self._running

    def fail(self, error: str) -> None:
        """The worker ends under this run (another run did not stop when canceled): it fails with `error`, and nothing
        its thread writes later reaches crewd."""
        self._emitter.emit("run.failed", {"error": error})
        self._emitter.close()
        self.final = Exited(1)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.close()
        try:
            # Most runs leave their home empty: three rmdir, not a walk of the tree.
            for inside in ("home", "tmp", ""):
                os.rmdir(os.path.join(self.home, inside))
        except OSError:
            run_home.remove_home(self.home)
