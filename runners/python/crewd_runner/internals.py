"""The private parts of CrewAI and LangGraph the runner relies on, and the only module that touches them.

CrewAI's (its event bus's threads, its telemetry singleton, a Crew's task-output store, its MCP tool's call) are
used only with a CrewAI of the versions crewd supports (KNOWN_CREWAI, as the examples' `crewai>=1.15,<2`), and only
where the attribute is there. Outside them each use falls back to what CrewAI does by itself (no rehearsal, the event
bus started by the run's first event, a Crew built at import keeping its store), and the fork server says so on its
standard error.
tests/test_internals.py fails when the pinned CrewAI or LangGraph no longer has one of these parts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import re
import sys
from typing import Any

_log = logging.getLogger(__name__)

# The CrewAI versions whose private parts are used: from the first, up to (not including) the second.
KNOWN_CREWAI = ((1, 15), (2, 0))
# What each CrewAI part is, for the test that they all are still there.
BUS_ATTRIBUTES = ("_executor_initialized", "_ensure_executor_initialized", "_loop", "_loop_thread", "_sync_executor")
TELEMETRY_ATTRIBUTE = "_instance"
CREW_STORE_ATTRIBUTE = "_task_output_handler"
MCP_TOOL_ATTRIBUTES = ("_run", "_run_async")


def version_tuple(version: str) -> tuple[int, ...]:
    """(1, 15, 30) of "1.15.30"; a part that is not a number ends it ("1.16.0rc1" is (1, 16, 0))."""
    numbers: list[int] = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
        if digits.end() != len(part):
            break
    return tuple(numbers)


def crewai_version() -> str | None:
    try:
        import crewai
    except ImportError:
        return None
    return str(getattr(crewai, "__version__", "unknown"))


@functools.cache
def crewai_known() -> bool:
    """Whether the installed CrewAI is one whose private parts the runner knows; says once why not."""
    version = crewai_version()
    if version is None:
        return False
    low, below = KNOWN_CREWAI
    if low <= version_tuple(version) < below:
        return True
    _log.warning(
        "crewd: CrewAI %s is outside the versions whose internals the runner uses (%s up to %s): no rehearsal in the "
        "fork server, the event bus starts with each run's first event, and a Crew built at import keeps its own "
        "task-output store",
        version,
        ".".join(map(str, low)),
        ".".join(map(str, below)),
    )
    return False


def _has(value: object, names: tuple[str, ...]) -> bool:
    return all(hasattr(value, name) for name in names)


def bus_threads_stoppable(bus: object) -> bool:
    """The event bus has not started its threads yet, so they can be started and stopped again (crewai_rehearsal)."""
    if not crewai_known():
        return False
    started = getattr(bus, "_executor_initialized", None)
    return started is False and callable(getattr(bus, "_ensure_executor_initialized", None))


def bus_threads_started(bus: object) -> bool:
    return getattr(bus, "_executor_initialized", False) is True


def start_bus_threads(bus: object) -> None:
    """The bus's handler pool and event loop thread, which its first event would start otherwise (a forked child
    starts them before its run comes: threads do not survive a fork)."""
    start = getattr(bus, "_ensure_executor_initialized", None)
    if crewai_known() and callable(start):
        start()


def stop_bus_threads(bus: Any) -> None:
    """The bus as before its first event: no handler pool, no loop thread (CrewAI starts them again on the next)."""
    if not bus_threads_started(bus) or not _has(bus, BUS_ATTRIBUTES):
        return
    bus.flush()
    loop = bus._loop
    loop.call_soon_threadsafe(loop.stop)
    bus._loop_thread.join()
    loop.close()
    bus._sync_executor.shutdown(wait=True)
    bus._executor_initialized = False


def telemetry_class() -> type | None:
    if not crewai_known():
        return None
    try:
        from crewai.telemetry.telemetry import Telemetry
    except ImportError:
        return None
    return Telemetry if hasattr(Telemetry, TELEMETRY_ATTRIBUTE) else None


def telemetry_instance(telemetry: type) -> object:
    """The telemetry singleton CrewAI made in this process, or None."""
    return getattr(telemetry, TELEMETRY_ATTRIBUTE)


def forget_telemetry_instance(telemetry: type) -> None:
    """The singleton is dropped: the next Telemetry() is made anew, with the settings it finds then."""
    setattr(telemetry, TELEMETRY_ATTRIBUTE, None)


def renew_task_output_store(crew: object) -> None:
    """A Crew built at import (in a fork server, under the server's home) gets a store of task outputs made now, where
    this run's home is, as a Crew built by the run has."""
    handler = getattr(crew, CREW_STORE_ATTRIBUTE, None)
    if handler is not None and crewai_known():
        setattr(crew, CREW_STORE_ATTRIBUTE, type(handler)())


@functools.cache
def mend_mcp_tool_calls() -> bool:
    """Whether CrewAI's MCP tool (an agent's `mcps=[...]`) now makes each call in a thread of its own.

    On Python 3.11, CrewAI 1.15's MCPNativeTool fails every call made where no event loop runs (`Error during MCP
    client disconnect: no running event loop`): it opens the MCP client inside `asyncio.wait_for`, which on 3.11 runs
    it as a task of its own, and the client's close then fails the call. The call succeeds when its coroutine runs on
    a loop in a thread of its own, as CrewAI itself does when a loop already runs; 3.12 needs no mending.
    """
    if sys.version_info >= (3, 12) or not crewai_known():
        return False
    try:
        from crewai.tools.mcp_native_tool import MCPNativeTool
    except ImportError:
        return False
    if not _has(MCPNativeTool, MCP_TOOL_ATTRIBUTES):
        return False

    def call_in_a_thread_of_its_own(self: Any, **kwargs: Any) -> Any:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            try:
                call = self._run_async(**kwargs)
                return pool.submit(contextvars.copy_context().run, asyncio.run, call).result()
            except Exception as error:
                raise RuntimeError(f"Error executing MCP tool {self.original_tool_name}: {error!s}") from error

    MCPNativeTool._run = call_in_a_thread_of_its_own  # type: ignore[method-assign]
    return True


def langgraph_safe_msgpack() -> tuple[frozenset[tuple[str, ...]], frozenset[tuple[str, ...]]]:
    """(types, methods) LangGraph's own strict reading constructs from a checkpoint's msgpack. Without that list (a
    LangGraph that moved it), nothing is constructed: a checkpoint naming any type is refused."""
    try:
        from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
    except ImportError:
        return frozenset(), frozenset()
    return frozenset(SAFE_MSGPACK_TYPES), frozenset(SAFE_MSGPACK_METHODS)
