"""Runs a LangGraph graph: `updates` and `custom` stream modes, interrupts, and the thread's checkpoint."""

from __future__ import annotations

from typing import Any

from . import langgraph_checkpoint, runloop, store_channel
from .jsonsafe import to_jsonable
from .outcome import Outcome
from .protocol import Emitter, EventSink, Request
from .stream_modes import StreamRequest, stream_graph
from .usage import with_usage_callback

INTERRUPT_KEY = "__interrupt__"
# What langchain_core imports when a run sets up its callbacks: each forked child would import them again.
CALLBACK_IMPORTS = (
    "langchain_core.tracers.context",
    "langchain_core.tracers.run_collector",
    "langchain_core.tracers.stdout",
)


def prepare_graph(target: Any) -> Any:
    """A compiled graph as given; a StateGraph is compiled; a factory (as langgraph.json allows) is called."""
    if hasattr(target, "astream"):
        return target
    if hasattr(target, "compile"):
        return target.compile()
    if callable(target):
        return prepare_graph(target())
    raise TypeError(f"{type(target).__name__} is not a LangGraph graph, StateGraph or graph factory")


def warm_up() -> None:
    """Imports what a run imports on its first use (the fork server calls this once): crewd's store among them, which
    each forked child imported again (about 1 ms of CPU per run: its module, LangGraph's store base, three classes)."""
    import importlib

    import langgraph.checkpoint.memory
    import langgraph.types  # noqa: F401

    from . import crewd_store  # noqa: F401

    for name in CALLBACK_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # gone in this LangChain: its runs do not import it either


def run_graph(target: object, request: Request, emitter: Emitter) -> Outcome:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    graph = prepare_graph(target)
    # The run's own saver, whatever the graph was compiled with: the thread's state lives in crewd. crewd's store
    # where the graph was compiled without one, as LangGraph's own server gives it.
    own: dict[str, Any] = {"checkpointer": saver}
    if getattr(graph, "store", None) is None:
        own["store"] = run_store(emitter)
    graph = graph.copy(update=own)
    thread = request.get("thread")
    thread_id = thread["thread_id"] if thread else request.get("run_id") or "run"
    if thread:
        langgraph_checkpoint.restore(saver, thread_id, thread.get("checkpoint"))
    streamed = StreamRequest.of(request)
    config = streamed.graph_config(thread_id) if streamed else {"configurable": {"thread_id": thread_id}}
    # Each LLM call's usage, streamed ones included, as an llm.call event.
    config = with_usage_callback(config, emitter)
    update = state_update(request)
    if update is not None:
        if not thread:
            raise ValueError("A state update needs the run's thread")
        return runloop.run(_update_state(graph, config, saver, update))
    graph_input = _graph_input(request, streamed)
    return runloop.run(_stream(graph, graph_input, config, emitter, saver, thread is not None, streamed))


def run_store(emitter: EventSink) -> Any:
    """crewd's store for this run: its calls go out as the run's lines, their answers come on the run's channel."""
    from .crewd_store import CrewdStore

    answers = store_channel.current.get()
    if answers is None:
        answers = store_channel.Answers()
        answers.close()
    return CrewdStore(lambda fields: answers.call(emitter, fields))


def state_update(request: Request) -> dict[str, Any] | None:
    """`{values, as_node}` of a run that updates its thread's state (`POST /threads/{id}/state` of crewd's
    LangGraph API), which runs `graph.update_state` instead of the graph."""
    asked = request.get("langgraph")
    update = asked.get("update_state") if isinstance(asked, dict) else None
    return update if isinstance(update, dict) else None


async def _update_state(graph: Any, config: dict[str, Any], saver: Any, update: dict[str, Any]) -> Outcome:
    """LangGraph's own `update_state` on the thread's checkpoint: the graph's reducers apply the values as the
    node `as_node` (LangGraph infers it when absent) would have written them, as a new checkpoint."""
    await graph.aupdate_state(config, update.get("values"), as_node=update.get("as_node"))
    # A thread with nodes still to run stays interrupted, as after interrupt_before.
    return await _outcome(graph, config, saver, True, stops_at_nodes=True)


def _graph_input(request: Request, streamed: StreamRequest | None = None) -> Any:
    command = streamed.command if streamed is not None and streamed.command else request.get("command")
    if command is None:
        if streamed is not None and streamed.null_input and thread_has_checkpoint(request.get("thread")):
            return None
        return {**_values_without_checkpoint(request.get("thread")), **(request.get("input") or {})}
    from langgraph.types import Command

    return Command(resume=command.get("resume"), update=command.get("update"), goto=command.get("goto") or ())


def thread_has_checkpoint(thread: dict[str, Any] | None) -> bool:
    return bool(thread and thread.get("checkpoint"))


def _values_without_checkpoint(thread: dict[str, Any] | None) -> dict[str, Any]:
    """A thread whose values were set through the API, with no checkpoint yet, starts the graph from those values."""
    if not thread or thread.get("checkpoint") or not isinstance(thread.get("values"), dict):
        return {}
    values: dict[str, Any] = thread["values"]
    return values


async def _stream(
    graph: Any,
    graph_input: Any,
    config: dict[str, Any],
    emitter: EventSink,
    saver: Any,
    in_thread: bool,
    streamed: StreamRequest | None = None,
) -> Outcome:
    if streamed is not None:
        await stream_graph(graph, graph_input, config, emitter, streamed)
    else:
        async for mode, chunk in graph.astream(graph_input, config, stream_mode=["updates", "custom"]):
            if mode == "updates":
                _emit_updates(chunk, emitter)
            else:
                emitter.emit("custom", chunk if isinstance(chunk, dict) else {"value": chunk})
    return await _outcome(graph, config, saver, in_thread, streamed is not None and streamed.stops_at_nodes)


async def _outcome(
    graph: Any, config: dict[str, Any], saver: Any, in_thread: bool, stops_at_nodes: bool = False
) -> Outcome:
    """The run's result from the graph's state: its values, and in a thread its checkpoint."""
    snapshot = await graph.aget_state(config)
    values = to_jsonable(snapshot.values)
    if not isinstance(values, dict):
        values = {"value": values}
    interrupts = list(getattr(snapshot, "interrupts", ()) or ())
    data: dict[str, Any] = {"values": values} if in_thread else {}
    if in_thread:
        thread_id = config["configurable"]["thread_id"]
        checkpoint = langgraph_checkpoint.dump(saver, thread_id, include_subgraphs=bool(snapshot.next))
        if checkpoint is not None:
            # LangGraph's own `next` of the latest state (pending writes of finished tasks counted), for crewd's API.
            checkpoint["next"] = list(snapshot.next)
        data["checkpoint"] = checkpoint
    if interrupts or (stops_at_nodes and snapshot.next):
        # A stop at interrupt_before/interrupt_after is an interrupt without values.
        data["interrupts"] = [_interrupt(item) for item in interrupts]
        return Outcome("run.interrupted", data)
    return Outcome("run.completed", {"output": values, **data})


def _emit_updates(chunk: object, emitter: EventSink) -> None:
    if not isinstance(chunk, dict):
        return
    for node, update in chunk.items():
        if node != INTERRUPT_KEY:
            emitter.emit("node.completed", {"node": node, "update": update})


def _interrupt(item: object) -> dict[str, Any]:
    found: dict[str, Any] = {"value": to_jsonable(getattr(item, "value", item))}
    interrupt_id = getattr(item, "id", None)
    if interrupt_id is not None:
        found = {"id": interrupt_id, **found}
    return found
