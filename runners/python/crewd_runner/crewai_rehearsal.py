"""A kickoff of a built-in crew in the fork server, before it imports the version's crew and forks.

What any first kickoff in a process pays (CrewAI's lazy set-up, the interpreter specialising the code a kickoff runs)
is then paid once, in the server, instead of in every child it forks. The rehearsal must leave nothing a run could
see or that could leave the machine:
- it comes before the crew's module is imported, so none of the crew's listeners or hooks hear it;
- its crew answers with a built-in LLM;
- telemetry and tracing are off for it, and a telemetry object made for it is dropped after;
- what CrewAI stores goes to a folder removed after, under in-process locks (a Redis lock would leave a connection
  for the children to share);
- its output goes nowhere;
- the event bus threads it starts are stopped before the server forks (threads do not survive a fork).
Where any of this cannot be done (a CrewAI without these parts), there is no rehearsal and children pay as before.
"""

import contextlib
import os
import shutil
import sys
import tempfile
import threading

from .crewai_adapter import relayed_events
from .protocol import Emitter

QUIET_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
}
# The interpreter specialises code on its repeated runs: one kickoff would leave part of that to each child.
KICKOFFS = 2
ANSWER = "Thought: I now know the final answer\nFinal Answer: rehearsed"


class ThreadsLeft(RuntimeError):
    """The rehearsal's threads could not all be stopped: a fork would lose them mid-work."""


def rehearse():
    """Kicks off the built-in crew KICKOFFS times, its events relayed as a run's are; whether it did. A rehearsal that
    fails leaves the work to the children, which pay it as they would have; one whose threads outlive it raises
    ThreadsLeft."""
    try:
        from crewai.events import crewai_event_bus as bus
    except ImportError:
        return False
    if not _bus_can_stop(bus) or threading.active_count() != 1:
        return False
    telemetry = _telemetry_class()
    telemetry_before = getattr(telemetry, "_instance", None)
    storage = tempfile.mkdtemp(prefix="crewd-rehearsal-")
    try:
        with _environment({**QUIET_ENV, "XDG_DATA_HOME": storage}), _in_process_locks(), _output_discarded() as sink:
            _kick_off(sink)
        return True
    except Exception:
        return False
    finally:
        _restore(bus, telemetry, telemetry_before, storage)


def _restore(bus, telemetry, telemetry_before, storage):
    with contextlib.suppress(Exception):
        _stop_bus_threads(bus)
    if telemetry is not None and telemetry_before is None:
        telemetry._instance = None
    shutil.rmtree(storage, ignore_errors=True)
    if threading.active_count() != 1:
        names = ", ".join(thread.name for thread in threading.enumerate() if thread is not threading.main_thread())
        raise ThreadsLeft(f"the CrewAI rehearsal left threads running ({names}), which a fork would lose")


def _kick_off(sink):
    emitter = Emitter(os.dup(sink))
    try:
        for _ in range(KICKOFFS):
            with relayed_events(emitter):
                _crew().kickoff(inputs={"topic": "rehearsal"})
    finally:
        emitter.close()


def _crew():
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM

    class RehearsalLLM(BaseLLM):
        def call(self, messages, *args, **kwargs):
            return ANSWER

    llm = RehearsalLLM(model="crewd/rehearsal")
    agent = Agent(role="Rehearsal", goal="Rehearse {topic}", backstory="None.", llm=llm, max_retry_limit=0)
    task = Task(name="rehearse", description="Rehearse {topic}", expected_output="One line", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def _bus_can_stop(bus):
    """The bus starts its threads on its first emit and has not yet: they can be stopped the same way."""
    started = getattr(bus, "_executor_initialized", None)
    return started is False and callable(getattr(bus, "_ensure_executor_initialized", None))


def _stop_bus_threads(bus):
    """The bus as before its first emit: no handler pool, no loop thread (CrewAI starts them again on the next)."""
    if not getattr(bus, "_executor_initialized", False):
        return
    bus.flush()
    loop = bus._loop
    loop.call_soon_threadsafe(loop.stop)
    bus._loop_thread.join()
    loop.close()
    bus._sync_executor.shutdown(wait=True)
    bus._executor_initialized = False


def _telemetry_class():
    try:
        from crewai.telemetry.telemetry import Telemetry
    except ImportError:
        return None
    return Telemetry


@contextlib.contextmanager
def _environment(values):
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
def _in_process_locks():
    from crewai_core import lock_store

    locks = {}

    @contextlib.contextmanager
    def lock(name, timeout=None):
        with locks.setdefault(name, threading.Lock()):
            yield

    lock_store.set_lock_backend(lock)
    try:
        yield
    finally:
        lock_store.set_lock_backend(None)


@contextlib.contextmanager
def _output_discarded():
    """Descriptors 1 and 2 on /dev/null while it lasts; yields /dev/null's descriptor."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield devnull
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, target in zip(saved, (1, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.close(devnull)
