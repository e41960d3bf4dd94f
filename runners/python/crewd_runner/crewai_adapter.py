"""Runs a CrewAI crew or flow with `kickoff(inputs=<run input>)`, relaying its event bus as crewd events."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from . import crewai_events, internals
from .jsonsafe import to_jsonable
from .outcome import Outcome
from .stream_modes import crew_sink
from .usage import UsageLedger, crew_model

if TYPE_CHECKING:
    from crewai import Crew
    from crewai.crews.crew_output import CrewOutput
    from crewai.flow.flow import Flow

    from .protocol import Emitter, EventSink, Request

_log = logging.getLogger(__name__)
FLUSH_SECONDS = 10.0


def prepare_crew(target: object) -> Crew:
    """A Crew as given; a @CrewBase class is instantiated and asked for `.crew()`; a factory is called."""
    from crewai import Crew

    internals.mend_mcp_tool_calls()
    if isinstance(target, Crew):
        return target
    if hasattr(target, "crew") and callable(target.crew) and not isinstance(target, type):
        return prepare_crew(target.crew())
    if callable(target):
        return prepare_crew(target())
    raise TypeError(f"{type(target).__name__} is neither a Crew, a @CrewBase class nor a function returning a Crew")


def prepare_flow(target: object) -> Flow[Any]:
    from crewai.flow.flow import Flow

    internals.mend_mcp_tool_calls()
    if isinstance(target, Flow):
        return target
    if isinstance(target, type) and issubclass(target, Flow):
        return target()
    raise TypeError(f"{getattr(target, '__name__', type(target).__name__)} is not a CrewAI Flow class or instance")


# Modules CrewAI imports inside its first kickoff (as of 1.15); a name that is gone in another version is skipped.
KICKOFF_IMPORTS = ("crewai.hooks.contexts", "crewai.llms.cache", "crewai.skills.tool")


def warm_up() -> None:
    """What a first kickoff pays in any process, paid once by the fork server instead of by each forked child:
    CrewAI's late imports, the pydantic models whose schemas are completed on first use, and the definitions of the
    Flow classes (an agent's executor is one) that CrewAI builds on a class's first instance."""
    import importlib

    import crewai.events  # noqa: F401

    crewai_events.handlers()
    internals.mend_mcp_tool_calls()
    for name in KICKOFF_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # gone in this CrewAI: its kickoff does not import it either
    _complete_pydantic_models()
    _build_flow_definitions()


def warm_up_child() -> None:
    """What a forked child can do before its run comes: the event bus's handler pool and event loop thread, which
    the fork server must not start (threads do not survive a fork) and the first event of a run would start."""
    from crewai.events import crewai_event_bus

    internals.start_bus_threads(crewai_event_bus)


def _complete_pydantic_models() -> None:
    from pydantic import BaseModel

    for model in _subclasses(BaseModel):
        if model.__module__.startswith("crewai") and not getattr(model, "__pydantic_complete__", True):
            try:
                model.model_rebuild()
            except Exception as error:  # noqa: BLE001 (pydantic's schema building: its first use completes it instead)
                _log.warning("crewd: CrewAI's %s is completed by its first use instead: %r", model.__qualname__, error)


def _build_flow_definitions() -> None:
    from crewai.flow.flow import Flow

    for flow_class in _subclasses(Flow):
        build = getattr(flow_class, "flow_definition", None)
        if callable(build):
            try:
                build()
            except Exception as error:  # noqa: BLE001 (CrewAI's own code: the class's first instance builds it)
                _log.warning(
                    "crewd: %s's flow definition is built by its first instance instead: %r", flow_class, error
                )


def _subclasses(base: type[Any]) -> Iterator[type[Any]]:
    """`base` and every class below it that is loaded."""
    pending = [base]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        yield cls


def run_crew(target: object, request: Request, emitter: Emitter) -> Outcome:
    crew = prepare_crew(target)
    if crew is target:
        # Built when its module was imported (in a fork server, under the server's home): its task outputs go where
        # this run's home is, as those of a Crew built by the run do.
        internals.renew_task_output_store(crew)
    ledger = UsageLedger(crew_sink(emitter, request))
    with relayed_events(ledger):
        result = crew.kickoff(inputs=request.get("input") or {})
    # The crew's own total is the check: tokens no call reported are sent as one more call.
    ledger.settle(getattr(result, "token_usage", None), crew_model(crew))
    # A CrewStreamingOutput only comes from a crew made with stream=True, which the runner does not ask for.
    return Outcome("run.completed", {"output": crew_output(cast("CrewOutput", result))})


def run_flow(target: object, request: Request, emitter: Emitter) -> Outcome:
    flow = prepare_flow(target)
    with relayed_events(crew_sink(emitter, request)):
        result = flow.kickoff(inputs=request.get("input") or {})
    return Outcome("run.completed", {"output": {"result": to_jsonable(result), "state": to_jsonable(flow.state)}})


def crew_output(result: CrewOutput) -> dict[str, Any]:
    structured: object = result.json_dict
    if structured is None and result.pydantic is not None:
        structured = result.pydantic
    return {
        "raw": result.raw,
        "json": to_jsonable(structured),
        "tasks": [
            {"task": (task.name or task.description).strip(), "agent": (task.agent or "").strip(), "raw": task.raw}
            for task in result.tasks_output
        ],
        "token_usage": to_jsonable(result.token_usage),
    }


@contextmanager
def relayed_events(emitter: EventSink) -> Iterator[None]:
    """The run's CrewAI events as crewd events, each written as CrewAI emits it, by the thread that emits it. The bus's
    `emit` is wrapped for the run: handlers registered on the bus would run later, on CrewAI's thread pool, in any
    order. CrewAI's own handlers and the crew's listeners run as ever, and are waited for at the end, so that what
    they print is still the run's."""
    from crewai.events import crewai_event_bus

    mappers = dict(crewai_events.handlers())
    wrapped_already = "emit" in vars(crewai_event_bus)
    emit = crewai_event_bus.emit

    def relaying_emit(source: Any, event: Any) -> Any:
        future = emit(source, event)
        mapper = mappers.get(type(event))
        if mapper is not None:
            _relay(emitter, mapper, source, event)
        return future

    # An attribute of the bus object, which hides its class's method for the run.
    crewai_event_bus.emit = relaying_emit  # type: ignore[method-assign]
    try:
        yield
    finally:
        if wrapped_already:
            crewai_event_bus.emit = emit  # type: ignore[method-assign]
        else:
            del crewai_event_bus.emit
        crewai_event_bus.flush(FLUSH_SECONDS)


def _relay(emitter: EventSink, mapper: crewai_events.Mapper, source: Any, event: Any) -> None:
    """An event crewd cannot read is left out rather than break the crew; the run's log says so once per kind."""
    try:
        emitter.emit(*crewai_events.jsonable_event(mapper, source, event))
    except Exception as error:  # noqa: BLE001 (the event's own attributes may raise anything when read)
        kind = type(event).__name__
        if kind not in _LEFT_OUT:
            _LEFT_OUT.add(kind)
            _log.warning("crewd left out CrewAI's %s events, which it cannot read: %r", kind, error)


_LEFT_OUT: set[str] = set()
