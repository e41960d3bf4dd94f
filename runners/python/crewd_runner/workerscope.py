"""What a worker's concurrent runs each see as their own, though they share one process (RUN_ISOLATION=deployment).

A process has one environment, one working folder and one standard output; a worker runs several runs at a time in
threads. So the worker puts three things in front of the process's own, each answering from the run whose code is
asking (a context variable, which a run's asyncio tasks and LangChain's executors carry with them):

- `os.environ` (and so `os.getenv`, `os.path.expanduser`, `pathlib.Path.home`): the run's environment, its home's
  variables included; outside a run, the worker's own.
- `sys.stdout` and `sys.stderr`: the run's `log` events (capture.LogWriter); outside a run, the worker's own.
- the root logger's records: the run's `log` events; outside a run, the worker's standard error.

A thread started while a run's code runs is the run's: it gets the run's scope, and a cancel of the run reaches it too.
The worker's pool for event loops (workerexec) counts each call as its run's while it runs; a thread of another pool,
started by one run and used later by another, is counted as the first one's.

What cannot be told apart stays the worker's: the environment a subprocess inherits when none is given, the C
library's `getenv`, bytes written to file descriptors 1 and 2 (C code, subprocesses: the worker's output, which crewd
logs), the working folder (every run of a version has the version's built files as its folder anyway), and threads a
run starts itself without its context (they see the worker's environment and output).
"""

from __future__ import annotations

import contextvars
import ctypes
import logging
import os
import sys
import threading
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from .capture import LogWriter, ProtocolLogHandler
from .protocol import Emitter


@dataclass
class RunScope:
    """One run's own: its environment and where its output goes."""

    env: dict[str, str]
    stdout: LogWriter
    stderr: LogWriter
    logs: ProtocolLogHandler
    threads: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def of(env: dict[str, str], emitter: Emitter) -> RunScope:
        return RunScope(
            dict(env), LogWriter(emitter, "stdout", 1), LogWriter(emitter, "stderr", 2), ProtocolLogHandler(emitter)
        )

    def flush(self) -> None:
        self.stdout.flush()
        self.stderr.flush()

    def interrupt(self, kind: type[BaseException]) -> None:
        """Raises `kind` in each thread working for the run now."""
        with self.lock:
            for thread_id in self.threads:
                raise_in(thread_id, kind)

    def enter(self) -> None:
        """In a thread of the run's, or one of a pool working for it: counted as the run's until it leaves."""
        with self.lock:
            self.threads.add(threading.get_ident())

    def leave(self) -> None:
        """The thread no longer works for the run: an interrupt of the run not raised in it yet is taken back."""
        with self.lock:
            self.threads.discard(threading.get_ident())
            raise_in(threading.get_ident(), None)


def raise_in(thread_id: int, kind: type[BaseException] | None) -> None:
    """Raises `kind` in the thread at its next Python instruction (None takes back one not raised yet). A thread in a
    blocking call of C code gets it when the call returns."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(kind) if kind else None)


current: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar("crewd_run_scope", default=None)


class RunEnviron(MutableMapping[str, str]):
    """`os.environ` in a worker: the current run's variables, or the worker's own outside a run. A run's changes stay
    in its own copy."""

    def __init__(self, own: MutableMapping[str, str]) -> None:
        self.own = own

    def _now(self) -> MutableMapping[str, str]:
        scope = current.get()
        return self.own if scope is None else scope.env

    def __getitem__(self, name: str) -> str:
        return self._now()[name]

    def __setitem__(self, name: str, value: str) -> None:
        self._now()[name] = value

    def __delitem__(self, name: str) -> None:
        del self._now()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._now()))

    def __len__(self) -> int:
        return len(self._now())

    def copy(self) -> dict[str, str]:
        return dict(self._now())

    def __repr__(self) -> str:
        return f"RunEnviron({dict(self._now())!r})"


class RoutedStream:
    """`sys.stdout` or `sys.stderr` in a worker: the current run's LogWriter, or the worker's own stream."""

    def __init__(self, own: TextIO, pick: str) -> None:
        self._own = own
        self._pick = pick

    def _now(self) -> Any:
        scope = current.get()
        return self._own if scope is None else getattr(scope, self._pick)

    def write(self, text: str) -> int:
        written: int = self._now().write(text)
        return written

    def flush(self) -> None:
        self._now().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._now(), name)


class RoutedLogHandler(logging.Handler):
    """The root logger's one handler in a worker: a record goes to its run's `log` events, or to the worker's
    standard error outside a run."""

    def __init__(self) -> None:
        super().__init__()
        self._own = logging.StreamHandler(sys.__stderr__)

    def emit(self, record: logging.LogRecord) -> None:
        scope = current.get()
        (self._own if scope is None else scope.logs).emit(record)


_thread_start = threading.Thread.start


def _start_in_scope(thread: threading.Thread) -> None:
    """threading.Thread.start in a worker: a thread started by a run's code runs in the run's scope."""
    scope = current.get()
    if scope is not None:
        run = thread.run

        def run_in_scope() -> None:
            current.set(scope)
            scope.enter()
            try:
                run()
            finally:
                scope.leave()

        thread.run = run_in_scope  # type: ignore[method-assign]
    _thread_start(thread)


def install() -> None:
    """Once, before the crew is imported (a module that took `os.environ` at import gets the routed one)."""
    threading.Thread.start = _start_in_scope  # type: ignore[method-assign,assignment]
    if not isinstance(os.environ, RunEnviron):
        os.environ = RunEnviron(os.environ)  # type: ignore[assignment]  # noqa: B003 (routed, not cleared: on purpose)
    sys.stdout = RoutedStream(sys.stdout, "stdout")
    sys.stderr = RoutedStream(sys.stderr, "stderr")
    logging.getLogger().addHandler(RoutedLogHandler())
