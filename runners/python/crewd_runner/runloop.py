"""The event loop of a run outside the worker (a runner process, a fork server's child): asyncio's own, but the pool
of its default executor (where LangGraph runs a sync node) is shut down, once the run is over, in the loop's own
thread when no call of it is left running.

asyncio.run ends by shutting the default executor down from a thread started for that, so that the loop keeps turning
while calls still running in the pool end (one of them may wait for the loop). Most runs leave no call running: the
thread, its start and its join are then CPU a forked child spends for nothing (its run's threads cost it about a
quarter of a millisecond each). A call still running keeps asyncio's way: the pool is handed to asyncio as the
default executor and shut down as asyncio.run always does. The worker has a pool of its own for all its runs
(workerexec, its own loop policy); a loop policy installed by the crew's or graph's code (uvloop, say) is kept, with
asyncio.run as it is.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
# asyncio.Runner, from Python 3.11.
RUNNER: Any = getattr(asyncio, "Runner", None)


class _Pool(ThreadPoolExecutor):
    """asyncio's default executor, which knows whether any call it was given is still running."""

    def __init__(self) -> None:
        super().__init__(thread_name_prefix="asyncio")
        self._unfinished = 0
        self._count = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future = super().submit(fn, *args, **kwargs)
        with self._count:
            self._unfinished += 1
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _future: Future[Any]) -> None:
        with self._count:
            self._unfinished -= 1

    def idle(self) -> bool:
        with self._count:
            return self._unfinished == 0


class RunLoop(asyncio.SelectorEventLoop):
    """asyncio's loop, whose default executor is a `_Pool` of its own (unless the run's code sets one)."""

    def __init__(self) -> None:
        super().__init__()
        self._pool: _Pool | None = None
        self._executor_set = False
        self._pool_shut = False

    def set_default_executor(self, executor: Any) -> None:
        self._executor_set = True
        super().set_default_executor(executor)

    def run_in_executor(  # type: ignore[override]  # the same, typed without TypeVarTuple (Python 3.10)
        self, executor: Executor | None, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        if executor is None and not self._executor_set and not self._pool_shut:
            if self._pool is None:
                self._pool = _Pool()
            executor = self._pool
        return super().run_in_executor(executor, func, *args)

    async def shutdown_default_executor(self, *args: Any) -> None:  # Python 3.12 passes a timeout
        pool, self._pool, self._pool_shut = self._pool, None, True
        if pool is not None:
            if pool.idle():
                # Its threads wait for work: they end at once.
                pool.shutdown(wait=True)
            else:
                super().set_default_executor(pool)
        await super().shutdown_default_executor(*args)


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, in a RunLoop where asyncio's loop policy is its own (from Python 3.11, whose
    asyncio.Runner takes the loop): the loop is set as the main thread's while it runs, and none after, as
    asyncio.run sets the policy's."""
    if RUNNER is None or type(asyncio.get_event_loop_policy()) is not asyncio.DefaultEventLoopPolicy:
        return asyncio.run(main)
    if asyncio._get_running_loop() is not None:
        return asyncio.run(main)  # which refuses, in its own words

    def new_loop() -> RunLoop:
        loop = RunLoop()
        asyncio.set_event_loop(loop)
        return loop

    try:
        with RUNNER(loop_factory=new_loop) as runner:
            result: T = runner.run(main)
            return result
    finally:
        asyncio.set_event_loop(None)
