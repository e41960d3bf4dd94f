"""One thread pool for the event loops of all of a worker's runs (LangGraph runs a sync node in its loop's default
executor). asyncio.run gives each run a loop of its own, whose pool would start a thread for the run and join it at
its end: about a millisecond of CPU per run. Each call in the pool works for the run that submitted it (workerscope):
it is counted among the run's threads while it runs, so the run's cancel reaches it and no other run's does."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .workerscope import current

T = TypeVar("T")

# Threads at most: idle ones wait for the next call, and each run at a time may run several sync nodes at once.
MAX_THREADS = 64


class SharedExecutor(ThreadPoolExecutor):
    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        scope = current.get()

        def call() -> T:
            if scope is None:
                return fn(*args, **kwargs)
            scope.enter()
            try:
                return fn(*args, **kwargs)
            finally:
                scope.leave()

        # Started outside any run's context: a pool thread belongs to no run but the one whose call it is running.
        return contextvars.Context().run(super().submit, call)


SHARED = SharedExecutor(MAX_THREADS, "crewd-worker")


class _SharedPoolLoop(asyncio.SelectorEventLoop):
    """A run's event loop: work for "the default executor" goes to the worker's pool. The loop keeps no executor of
    its own, so asyncio.run's end has none to shut down (which would start and join a thread per run)."""

    def run_in_executor(  # type: ignore[override]  # the same, typed without TypeVarTuple (Python 3.10)
        self, executor: Executor | None, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        return super().run_in_executor(executor or SHARED, func, *args)


class _SharedPoolPolicy(asyncio.DefaultEventLoopPolicy):
    _loop_factory = _SharedPoolLoop


def install() -> None:
    """Once, in the worker: every event loop made from now on sends default-executor work to the shared pool."""
    asyncio.set_event_loop_policy(_SharedPoolPolicy())
