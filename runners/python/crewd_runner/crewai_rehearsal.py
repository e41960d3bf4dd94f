"""A kickoff of a built-in crew in the fork server, before it imports the version's crew and forks.

What any first kickoff in a process pays (CrewAI's lazy set-up, the interpreter specialising the code a kickoff runs)
is then paid once, in the server, instead of in every child it forks. The rehearsal must leave nothing a run could
see or that could leave the machine:
- it comes before the crew's module is imported, so none of the crew's listeners or hooks hear it;
- its crew answers with a built-in LLM;
- CrewAI is imported for it with telemetry off (the server's forked runs keep that: docs/python-crews.md, "No
  telemetry"), and tracing is off for it;
- what CrewAI stores goes to a folder removed after, under in-process locks (a Redis lock would leave a connection
  for the children to share);
- its output goes nowhere;
- the event bus threads it starts are stopped before the server forks (threads do not survive a fork).
Where any of this cannot be done (a CrewAI without these parts), there is no rehearsal and children pay as before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import internals
from .crewai_adapter import relayed_events
from .protocol import Emitter
from .rehearsal import ThreadsLeft, output_discarded

if TYPE_CHECKING:
    from crewai import Crew

_log = logging.getLogger(__name__)

QUIET_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
}
# The interpreter specialises code on its repeated runs: one kickoff would leave part of that to each child.
KICKOFFS = 2
ANSWER = "Thought: I now know the final answer\nFinal Answer: rehearsed"


def rehearse() -> bool:
    """Kicks off the built-in crew KICKOFFS times, its events relayed as a run's are; whether it did. A rehearsal that
    fails leaves the work to the children, which pay it as they would have; one whose threads outlive it raises
    ThreadsLeft."""
    try:
        # CrewAI's first import makes its event listener's telemetry. Made on, its exporter starts a thread here, and
        # again in every child forked after (os.register_at_fork): this process would never be one thread to rehearse,
        # and a version server, which must be one thread to take namespaces of its own, would never start.
        with _environment(QUIET_ENV):
            from crewai.events import crewai_event_bus as bus
    except ImportError:
        return False
    if not internals.bus_threads_stoppable(bus) or threading.active_count() != 1:
        return False
    telemetry = internals.telemetry_class()
    telemetry_before = internals.telemetry_instance(telemetry) if telemetry else None
    storage = tempfile.mkdtemp(prefix="crewd-rehearsal-")
    try:
        with _environment({**QUIET_ENV, "XDG_DATA_HOME": storage}), _in_process_locks(), output_discarded() as sink:
            _kick_off(sink)
        return True
    except Exception as error:  # noqa: BLE001 (a kickoff runs CrewAI's code, which may raise anything)
        _log.warning("crewd fork server: no CrewAI rehearsal, its kickoff failed: %r", error)
        return False
    finally:
        _restore(bus, telemetry, telemetry_before, storage)


def _restore(bus: object, telemetry: type | None, telemetry_before: object, storage: str) -> None:
    try:
        internals.stop_bus_threads(bus)
    except Exception as error:  # noqa: BLE001 (whatever stopping raised, the threads left are checked below)
        _log.warning("crewd fork server: stopping the rehearsal's event bus threads failed: %r", error)
    if telemetry is not None and telemetry_before is None:
        internals.forget_telemetry_instance(telemetry)
    shutil.rmtree(storage, ignore_errors=True)
    if threading.active_count() != 1:
        names = ", ".join(thread.name for thread in threading.enumerate() if thread is not threading.main_thread())
        raise ThreadsLeft(f"the CrewAI rehearsal left threads running ({names}), which a fork would lose")


def _kick_off(sink: int) -> None:
    emitter = Emitter(os.dup(sink))
    try:
        for _ in range(KICKOFFS):
            with relayed_events(emitter):
                _crew().kickoff(inputs={"topic": "rehearsal"})
    finally:
        emitter.close()


def _crew() -> Crew:
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM

    class RehearsalLLM(BaseLLM):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            return ANSWER

    llm = RehearsalLLM(model="crewd/rehearsal")
    agent = Agent(role="Rehearsal", goal="Rehearse {topic}", backstory="None.", llm=llm, max_retry_limit=0)
    task = Task(name="rehearse", description="Rehearse {topic}", expected_output="One line", agent=agent)
    return Crew(agents=[agent], tasks=[task])


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _in_process_locks() -> Iterator[None]:
    from crewai_core import lock_store

    locks: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def lock(name: str, timeout: float | None = None) -> Iterator[None]:
        with locks.setdefault(name, threading.Lock()):
            yield

    lock_store.set_lock_backend(lock)
    try:
        yield
    finally:
        lock_store.set_lock_backend(None)
